// outbound from Go: identify a user and track an event, then close.
//
// Build from this checkout (linked statically: the binary needs no liboutbound.so):
//
//	cargo build -p outbound-c --release
//	go build -o quickstart .
//
// or against an install (scripts/install-c.sh PREFIX):
//
//	CGO_CFLAGS=-IPREFIX/include CGO_LDFLAGS=-LPREFIX/lib go build -o quickstart .
//
// Environment: OUTBOUND_WRITE_KEY (your source's write key), OUTBOUND_ENDPOINT (optional,
// default https://api.segment.io).
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	// The package is outbound; named analytics here, the only change from analytics-go v3.
	analytics "outbound.invalid/bindings/go"
)

func main() {
	writeKey := os.Getenv("OUTBOUND_WRITE_KEY")
	if writeKey == "" {
		writeKey = "YOUR_WRITE_KEY"
	}
	client, err := analytics.NewWithConfig(writeKey, analytics.Config{
		Endpoint: os.Getenv("OUTBOUND_ENDPOINT"), // "" is https://api.segment.io
		// Runs on the client's background thread, once per message.
		OnOutcome: func(o analytics.Outcome) {
			fmt.Printf("%s: %s\n", o.MessageId, strings.TrimSuffix(string(o.Kind)+", "+o.Detail, ", "))
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}

	id, err := client.EnqueueID(analytics.Identify{
		UserId: "user-42",
		Traits: analytics.NewTraits().SetEmail("ada@example.com").Set("plan", "pro"),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("queued identify", id)

	id, err = client.EnqueueID(analytics.Track{
		UserId:     "user-42",
		Event:      "Order Completed",
		Properties: analytics.NewProperties().SetOrderId("o-1001").SetTotal(99.5).SetCurrency("EUR"),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("queued track", id)

	// A bad call is refused at once, naming the field; nothing is queued.
	err = client.Enqueue(analytics.Track{UserId: "user-42"})
	if errors.Is(err, analytics.ErrMissingField) {
		fmt.Println("refused as expected:", err)
	}

	// Deliver what is queued (waiting at most Config.CloseTimeout), then stop.
	err = client.Close()
	s := client.Stats()
	fmt.Printf("delivered %d, failed %d, dropped %d\n", s.Delivered, s.Failed, s.Dropped)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
