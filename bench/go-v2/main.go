// The analytics-go v2 peer for the end-to-end case: github.com/segmentio/analytics-go
// v2.0.0+incompatible (the one v2 release the Go module proxy serves; 2.1.1's tag has no "v"
// and is not a module version) with its defaults, pointed at the bench receiver. The same
// event as bench/go, in v2's shape; from the first call until the receiver has every message
// id; prints one JSON line (the same fields as bench/go and bench/runner.py).
//
// v2.0.0's Close sends the batch it holds but not the messages still in its channel (up to
// 100: fixed in 2.1.0, which the proxy does not serve), so it never delivers all of them.
// Its sends are synchronous and Close returns after the last one, so nothing more arrives
// after Close: the run ends there, and the line reports what arrived ("received", "lost");
// its msgs_per_s counts only the received messages.
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

	"github.com/segmentio/analytics-go"
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
	batch := flag.Int("batch", 0, "Size: the most messages one request carries (0: New's default)")
	flag.Parse()

	client := analytics.New("bench-write-key")
	client.Endpoint = *endpoint
	if *batch != 0 {
		client.Size = *batch
	}
	cpu0, _ := rusage()
	t0 := time.Now()
	for i := 0; i < *n; i++ {
		err := client.Track(&analytics.Track{
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
	// Close returned after v2's last (synchronous) request: what arrived is all there is.
	elapsed := time.Since(t0).Seconds()
	resp, err := http.Get(fmt.Sprintf("%s/_stats", *endpoint))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var snap map[string]any
	body, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(body, &snap)
	_ = *timeout
	received, _ := snap["unique"].(float64)
	cpu1, maxrss := rusage()
	out := map[string]any{
		"lib": "analytics-go-v2", "n": *n, "batch": client.Size, "seconds": elapsed, "calls_s": calls,
		"cpu_s": cpu1 - cpu0, "maxrss": maxrss, "complete": int(received) == *n, "received": int(received),
		"lost": *n - int(received),
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}
