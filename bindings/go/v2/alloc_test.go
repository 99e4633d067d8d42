//go:build !race

package analytics_test

// Allocation counts: the race detector's instrumentation moves more to the heap, so these
// run without it (scripts/test-go.sh runs them in a step of their own).

import (
	"testing"
	"time"

	"outbound.invalid/bindings/go/v2"
)

// The caller's message stays where the caller made it: a call allocates only the
// MessageId it sets (before, a pointer into the message kept for the timestamp moved every
// caller's struct to the heap: one more allocation of about 150 bytes per call).
func TestV2CallsAllocateOnlyTheMessageId(t *testing.T) {
	c, r := newClient(t)
	c.MaxQueueSize = 100_000
	// No request while calls are counted: the receiver runs in this process, and its
	// allocations would count as the calls'. Close sends them all.
	c.Size = 100_000
	c.Interval = time.Hour
	props := map[string]interface{}{"revenue": 49.99, "tags": []string{"a", "b"}}
	ctx := map[string]interface{}{"ip": "127.0.0.1"}
	calls := map[string]func() error{
		"Track": func() error {
			return c.Track(&analytics.Track{Event: "E", UserId: "u", Properties: props, Context: ctx})
		},
		"Identify": func() error { return c.Identify(&analytics.Identify{UserId: "u", Traits: props}) },
		"Page":     func() error { return c.Page(&analytics.Page{UserId: "u", Name: "Home", Traits: props}) },
		"Screen":   func() error { return c.Screen(&analytics.Screen{UserId: "u", Name: "Home"}) },
		"Group":    func() error { return c.Group(&analytics.Group{UserId: "u", GroupId: "g"}) },
		"Alias":    func() error { return c.Alias(&analytics.Alias{UserId: "u", PreviousId: "p"}) },
		"Track with a Timestamp": func() error {
			return c.Track(&analytics.Track{Event: "E", UserId: "u",
				Message: analytics.Message{Timestamp: "2009-11-10T23:00:00+0000"}})
		},
	}
	want := map[string]float64{"Track with a Timestamp": 2} // and the timestamp's copy
	for name, call := range calls {
		var err error
		n := testing.AllocsPerRun(200, func() {
			if e := call(); e != nil {
				err = e
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w := want[name]
		if w == 0 {
			w = 1
		}
		if n > w {
			t.Errorf("%s: %v allocations per call, want %v (the MessageId)", name, n, w)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(r.messages(t, writeKey)); got != 7*201 {
		t.Errorf("%d messages arrived, want %d", got, 7*201)
	}
}
