// The outbound Go package in the end-to-end case, the twin of bench/go (analytics-go v3):
// the same event, defaults except the endpoint and a queue big enough that nothing is
// dropped. From the first call until the receiver has every message id; prints one JSON line
// (the same fields as bench/go and bench/runner.py).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"syscall"
	"time"

	analytics "outbound.invalid/bindings/go"
)

func rusage() (float64, int64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime), ru.Maxrss * 1024
}

func main() {
	endpoint := flag.String("endpoint", "", "http://127.0.0.1:PORT")
	n := flag.Int("n", 100000, "messages")
	timeout := flag.Float64("timeout", 120, "seconds to wait for the receiver")
	flag.Parse()

	client, err := analytics.NewWithConfig("bench-write-key", analytics.Config{
		Endpoint:     *endpoint,
		MaxQueueSize: *n + 1000,
		CloseTimeout: time.Duration(*timeout * float64(time.Second)),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cpu0, _ := rusage()
	t0 := time.Now()
	for i := 0; i < *n; i++ {
		err := client.Enqueue(analytics.Track{
			Event:  "Order Completed",
			UserId: "user-12345",
			Properties: analytics.NewProperties().
				Set("order_id", "ord-0001").
				Set("revenue", 49.99).
				Set("items", 3).
				Set("express", true).
				Set("tags", []string{"books", "gift"}),
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "enqueue:", err)
			os.Exit(1)
		}
	}
	calls := time.Since(t0).Seconds()
	if err := client.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
	}
	resp, err := http.Get(fmt.Sprintf("%s/_wait?n=%d&timeout=%g", *endpoint, *n, *timeout))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var snap map[string]any
	body, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(body, &snap)
	elapsed := time.Since(t0).Seconds()
	cpu1, maxrss := rusage()
	out := map[string]any{
		"lib": "outbound-go", "n": *n, "seconds": elapsed, "calls_s": calls,
		"cpu_s": cpu1 - cpu0, "maxrss": maxrss, "complete": snap["complete"], "received": snap["unique"],
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	if snap["complete"] != true {
		os.Exit(1)
	}
}
