package outbound_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	outbound "outbound.invalid/bindings/go"
)

func TestManyGoroutinesShareOneClient(t *testing.T) {
	rx := newReceiver(t)
	hook := newReceiver(t)
	var outcomes, successes atomic.Int64
	var mu sync.Mutex
	seen := map[string]bool{}
	c := newClient(t, "wk", outbound.Config{
		Endpoint: rx.URL, Webhooks: []outbound.Webhook{{URL: hook.URL}}, SharedSecret: "s",
		MaxQueueSize: 20_000, Logger: &memLogger{}, Verbose: true,
		OnOutcome: func(o outbound.Outcome) {
			outcomes.Add(1)
			mu.Lock()
			seen[o.MessageId] = true
			mu.Unlock()
		},
		Callback: callbackFuncs{
			success: func(outbound.Message) { successes.Add(1) },
			failure: func(m outbound.Message, err error) { t.Errorf("failure %v: %v", m, err) },
		},
	})
	const goroutines, each = 16, 300
	ids := make(chan string, goroutines*each)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id, err := c.EnqueueID(outbound.Track{UserId: "u", Event: "E",
					Properties: outbound.Properties{"g": g, "i": i, "at": time.Now()}})
				if err != nil {
					t.Errorf("Enqueue: %v", err)
					return
				}
				ids <- id
				if i%100 == 0 {
					_ = c.Stats()
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					_ = c.Flush(ctx) // concurrent flushes with a context that ends at once
					cancel()
				}
			}
		}(g)
	}
	wg.Wait()
	close(ids)
	flush(t, c)
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	n := int64(goroutines * each)
	if outcomes.Load() != n || successes.Load() != n {
		t.Fatalf("outcomes %d, successes %d, want %d", outcomes.Load(), successes.Load(), n)
	}
	for id := range ids {
		if !seen[id] {
			t.Fatalf("no outcome for %s", id)
		}
	}
	if s := c.Stats(); s.Delivered != uint64(n) || s.Accepted != uint64(n) {
		t.Errorf("stats %+v", s)
	}
	if got := len(rx.messages(t)); got != int(n) {
		t.Errorf("ingestion got %d messages", got)
	}
}

func TestNoGoroutineIsLeftAfterClose(t *testing.T) {
	stall := stallServer(t)
	rx := newReceiver(t)
	time.Sleep(50 * time.Millisecond) // let the receivers' goroutines start
	before := runtime.NumGoroutine()
	for round := 0; round < 3; round++ {
		c, err := outbound.NewWithConfig("wk", outbound.Config{
			// A delivery thread blocked on the stalled endpoint outlives Close until its
			// Timeout (the core's rule); one that logged holds a cgo callback goroutine
			// until it exits, so the wait below must outlast the Timeout.
			Endpoint: stall, Webhooks: []outbound.Webhook{{URL: rx.URL}}, Timeout: time.Second,
			CloseTimeout: 100 * time.Millisecond, Logger: &memLogger{}, Verbose: true,
			OnOutcome: func(outbound.Outcome) {},
			Callback:  callbackFuncs{success: func(outbound.Message) {}, failure: func(outbound.Message, error) {}},
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})
		}
		// A Flush abandoned by its context leaves its wait running until Close.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_ = c.Flush(ctx)
		cancel()
		_ = c.Close()
	}
	// The receiver's own goroutines serve the connections the closed clients' delivery
	// threads may still hold: close those, then count.
	rx.CloseClientConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("%d goroutines before, %d after Close:\n%s", before, after, stacks)
	}
	// And none of them runs code of this package.
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "outbound.invalid/bindings/go.") {
			t.Fatalf("a goroutine of the package is left:\n%s", g)
		}
	}
}

func TestAClientDroppedWithoutCloseIsFinalized(t *testing.T) {
	rx := newReceiver(t)
	func() {
		c, err := outbound.NewWithConfig("wk", outbound.Config{Endpoint: rx.URL, FlushAfter: time.Hour,
			OnOutcome: func(outbound.Outcome) {}})
		if err != nil {
			t.Fatal(err)
		}
		mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "Unclosed"})
	}()
	// The finalizer closes it, which flushes: the message arrives without a Flush or Close.
	deadline := time.Now().Add(10 * time.Second)
	for len(rx.all()) == 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	if len(rx.all()) == 0 {
		t.Fatal("a client dropped without Close never delivered its message")
	}
}
