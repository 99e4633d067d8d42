// The outbound Go packages in the end-to-end case: the twin of bench/go (analytics-go v3),
// and with -api v2 of bench/go-v2 (analytics-go v2) through bindings/go/v2: the same event,
// defaults except the endpoint, and a full queue waited on rather than refused (QueueFullWait,
// as analytics-go blocks its callers; the v2 package's New already waits 5 s), so nothing is
// dropped and the queue stays at its default bound (10,000).
// From the first call until the receiver has every message id; prints one JSON line (the
// same fields as bench/go and bench/runner.py).
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

	analytics "outbound.invalid/bindings/go"
	analyticsv2 "outbound.invalid/bindings/go/v2"
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
	api := flag.String("api", "v3", "v3: package outbound (analytics-go v3's shape); v2: bindings/go/v2")
	batch := flag.Int("batch", 0, "FlushAt: the most messages one request carries (0: the default, 20)")
	flag.Parse()
	if *api == "v2" {
		runV2(*endpoint, *n, *timeout, *batch)
		return
	}

	client, err := analytics.NewWithConfig("bench-write-key", analytics.Config{
		Endpoint:      *endpoint,
		QueueFullWait: time.Duration(*timeout * float64(time.Second)),
		FlushAt:       *batch,
		CloseTimeout:  time.Duration(*timeout * float64(time.Second)),
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
	report("outbound-go", *endpoint, *n, *timeout, *batch, t0, calls, cpu0)
}

// runV2 is the same case through bindings/go/v2, in analytics-go v2's shape (bench/go-v2).
func runV2(endpoint string, n int, timeout float64, batch int) {
	client := analyticsv2.New("bench-write-key")
	client.Endpoint = endpoint
	client.FlushAt = batch
	client.QueueFullWait = time.Duration(timeout * float64(time.Second)) // as for the v3-shaped package
	cpu0, _ := rusage()
	t0 := time.Now()
	for i := 0; i < n; i++ {
		err := client.Track(&analyticsv2.Track{
			Event:  "Order Completed",
			UserId: "user-12345",
			Properties: map[string]interface{}{
				"order_id": "ord-0001",
				"revenue":  49.99,
				"items":    3,
				"express":  true,
				"tags":     []string{"books", "gift"},
			},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "track:", err)
			os.Exit(1)
		}
	}
	calls := time.Since(t0).Seconds()
	if err := client.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
	}
	report("outbound-go-v2", endpoint, n, timeout, batch, t0, calls, cpu0)
}

// report waits until the receiver has every id and prints the JSON line.
func report(lib, endpoint string, n int, timeout float64, batch int, t0 time.Time, calls, cpu0 float64) {
	if batch == 0 {
		batch = analyticsv2.DefaultSize // 20, the default of both packages
	}
	resp, err := http.Get(fmt.Sprintf("%s/_wait?n=%d&timeout=%g", endpoint, n, timeout))
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
		"lib": lib, "n": n, "batch": batch, "seconds": elapsed, "calls_s": calls,
		"cpu_s": cpu1 - cpu0, "maxrss": maxrss, "complete": snap["complete"], "received": snap["unique"],
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	if snap["complete"] != true {
		os.Exit(1)
	}
}
