// The Go peer for the end-to-end case: github.com/segmentio/analytics-go/v3 with its
// defaults (or -batch messages per request), pointed at the bench receiver. From the first call until the receiver has every
// message id; prints one JSON line (the same fields as bench/runner.py).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/segmentio/analytics-go/v3"
)

// rusage returns the CPU time used so far and the peak RSS. The peak is VmHWM of
// /proc/self/status: getrusage's ru_maxrss survives execve, so a program started by a larger
// process (bench/run.py) would report at least its parent's size.
func rusage() (float64, int64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	peak := ru.Maxrss * 1024
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					peak = kb * 1024
				}
			}
		}
	}
	return tv(ru.Utime) + tv(ru.Stime), peak
}

func main() {
	endpoint := flag.String("endpoint", "", "http://127.0.0.1:PORT")
	n := flag.Int("n", 100000, "messages")
	timeout := flag.Float64("timeout", 120, "seconds to wait for the receiver")
	batch := flag.Int("batch", 0, "BatchSize: the most messages one request carries (0: the default, 250)")
	flag.Parse()
	used := *batch
	if used == 0 {
		used = analytics.DefaultBatchSize
	}

	client, err := analytics.NewWithConfig("bench-write-key", analytics.Config{Endpoint: *endpoint, BatchSize: *batch})
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
		"lib": "analytics-go", "n": *n, "batch": used, "seconds": elapsed, "calls_s": calls,
		"cpu_s": cpu1 - cpu0, "maxrss": maxrss, "complete": snap["complete"], "received": snap["unique"],
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	if snap["complete"] != true {
		os.Exit(1)
	}
}
