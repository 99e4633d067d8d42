// The relay benchmark's load generator and receivers (std only), for scripts/relay-bench.sh
// and scripts/relay-soak.sh:
//
//	relaybench load  -url http://127.0.0.1:P -c 32 -batch 100 [-n REQS | -d SEC] [-rate EV/S]
//	                 keep-alive HTTP/1.1 on N connections, one request in flight on each;
//	                 -batch M posts /v1/batch bodies of M track events, -batch 0 posts one
//	                 event to /v1/track; every event has a unique messageId "<prefix>-<n>"
//	                 (n from 0 up, request k carries n = k*M .. k*M+M-1). Records every
//	                 request's acknowledgement latency (write → whole response read) and
//	                 prints one JSON line: requests, events acknowledged (200), failed,
//	                 statuses, seconds, events/s, p50/p99/max ms, first/last 200 (unix ms).
//	                 -acked FILE writes a bitmap of the acknowledged request numbers.
//	                 -stamp puts the send time in every event ("t0": unix ns in its
//	                 properties), for the sink's delivery latency.
//	relaybench sink  [-delay 100ms] [-p503 .3 -preset .1 -pstall .05 -stall 6s]
//	                 a receiver on 127.0.0.1 (random port; prints {"port":P}): POST /v1/batch
//	                 (Segment batches) and POST /hook/<any> (one webhook body each) count
//	                 every "messageId":"<prefix>-<n>" in a bitmap; -delay holds each answer;
//	                 the chaos flags draw the fault soak's faults per request. POST
//	                 /hang/<any> never answers (until the client goes). An event with a "t0"
//	                 stamp has its latency (arrival - t0) recorded. GET /_stats (with the
//	                 latencies' p50/p99; and the open connections and the /hang/ requests
//	                 held, sampled every 10 ms, as sums over the samples: two readings give
//	                 their averages between), /_wait?n=N&timeout=S, /_bitmap (the bitmap's
//	                 bytes), /_reset.
//	relaybench trivial
//	                 the loopback yardstick: reads each request and answers 200
//	                 {"success":true}, nothing else (prints {"port":P}).
//
// Serves until stdin closes (sink, trivial).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: relaybench load|sink|trivial [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "load":
		runLoad(os.Args[2:])
	case "sink":
		runSink(os.Args[2:])
	case "trivial":
		runTrivial()
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", os.Args[1])
		os.Exit(2)
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func listen() net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("{\"port\":%d}\n", ln.Addr().(*net.TCPAddr).Port)
	return ln
}

func untilStdinCloses() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// ---------------------------------------------------------------- load

func runLoad(args []string) {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	base := fs.String("url", "", "http://127.0.0.1:PORT")
	conns := fs.Int("c", 32, "connections")
	batch := fs.Int("batch", 100, "events per /v1/batch request; 0 = one event per /v1/track request")
	nreq := fs.Int64("n", 0, "requests in all (0: run for -d)")
	dur := fs.Float64("d", 10, "seconds (when -n is 0)")
	rate := fs.Float64("rate", 0, "events/s to pace at (0: as fast as acknowledged)")
	key := fs.String("key", "wk_bench", "write key (Basic auth user)")
	keys := fs.Int("keys", 0, "with N > 0, request k uses the write key <key><k mod N>")
	prefix := fs.String("prefix", "b", "messageId prefix")
	acked := fs.String("acked", "", "file for the bitmap of acknowledged request numbers")
	progress := fs.Float64("progress", 0, "print a progress line to stderr every this many seconds")
	stamp := fs.Bool("stamp", false, "put the send time (unix ns) in every event as properties.t0")
	_ = fs.Parse(args)
	if !strings.HasPrefix(*base, "http://127.0.0.1:") {
		fmt.Fprintln(os.Stderr, "load: -url must be http://127.0.0.1:PORT")
		os.Exit(2)
	}
	hostport := strings.TrimSuffix(strings.TrimPrefix(*base, "http://"), "/")
	path := "/v1/batch"
	per := *batch
	if per == 0 {
		path = "/v1/track"
		per = 1
	}
	var heads [][]byte
	for i := 0; i < *keys || i == 0; i++ {
		k := *key
		if *keys > 0 {
			k += strconv.Itoa(i)
		}
		heads = append(heads, []byte("POST "+path+" HTTP/1.1\r\nHost: "+hostport+
			"\r\nContent-Type: application/json\r\nAuthorization: Basic "+b64(k+":")+
			"\r\nContent-Length: "))
	}

	var next atomic.Int64
	var done, events, failed, sent atomic.Int64
	var firstAck, lastAck atomic.Int64
	statuses := make([]atomic.Int64, 600)
	var ackMu sync.Mutex
	var ackBits []byte
	markAck := func(k int64) {
		if *acked == "" {
			return
		}
		ackMu.Lock()
		for int64(len(ackBits)) <= k/8 {
			ackBits = append(ackBits, make([]byte, 1<<16)...)
		}
		ackBits[k/8] |= 1 << (k % 8)
		ackMu.Unlock()
	}
	lats := make([][]int64, *conns)
	start := time.Now()
	stop := start.Add(time.Duration(*dur * float64(time.Second)))
	// Pacing: request k may start at start + k*per/rate.
	var wg sync.WaitGroup
	for c := 0; c < *conns; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var conn net.Conn
			var rd *bufio.Reader
			dial := func() bool {
				var err error
				conn, err = net.Dial("tcp", hostport)
				if err != nil {
					return false
				}
				rd = bufio.NewReaderSize(conn, 16<<10)
				return true
			}
			if !dial() {
				failed.Add(1)
				return
			}
			buf := make([]byte, 0, 64<<10)
			body := make([]byte, 0, 64<<10)
			for {
				k := next.Add(1) - 1
				if *nreq > 0 && k >= *nreq {
					break
				}
				if *nreq == 0 && !time.Now().Before(stop) {
					break
				}
				if *rate > 0 {
					at := start.Add(time.Duration(float64(k*int64(per)) / *rate * float64(time.Second)))
					if *nreq == 0 && !at.Before(stop) {
						break
					}
					if d := time.Until(at); d > 0 {
						time.Sleep(d)
					}
				}
				stampNs := int64(0)
				if *stamp {
					stampNs = time.Now().UnixNano()
				}
				body = buildBody(body[:0], *prefix, k*int64(per), *batch, stampNs)
				buf = append(buf[:0], heads[k%int64(len(heads))]...)
				buf = strconv.AppendInt(buf, int64(len(body)), 10)
				buf = append(buf, "\r\n\r\n"...)
				buf = append(buf, body...)
				t0 := time.Now()
				sent.Add(1)
				status := 0
				if _, err := conn.Write(buf); err == nil {
					status, err = readResponse(rd)
					if err != nil {
						status = 0
					}
				}
				lat := time.Since(t0)
				if status == 0 {
					failed.Add(1)
					statuses[0].Add(1)
					conn.Close()
					if !dial() {
						return
					}
					continue
				}
				statuses[status].Add(1)
				if status == 200 {
					now := time.Now().UnixMilli()
					firstAck.CompareAndSwap(0, now)
					for {
						old := lastAck.Load()
						if now <= old || lastAck.CompareAndSwap(old, now) {
							break
						}
					}
					done.Add(1)
					events.Add(int64(per))
					lats[c] = append(lats[c], lat.Microseconds())
					markAck(k)
				} else {
					failed.Add(1)
				}
			}
			conn.Close()
		}(c)
	}
	stopProgress := make(chan struct{})
	if *progress > 0 {
		go func() {
			t := time.NewTicker(time.Duration(*progress * float64(time.Second)))
			defer t.Stop()
			for {
				select {
				case <-stopProgress:
					return
				case <-t.C:
					fmt.Fprintf(os.Stderr, "{\"t\":%.1f,\"events\":%d,\"failed\":%d}\n",
						time.Since(start).Seconds(), events.Load(), failed.Load())
				}
			}
		}()
	}
	wg.Wait()
	close(stopProgress)
	el := time.Since(start).Seconds()
	var all []int64
	for _, l := range lats {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		i := int(p * float64(len(all)-1))
		return float64(all[i]) / 1000
	}
	st := map[string]int64{}
	for s := range statuses {
		if v := statuses[s].Load(); v > 0 {
			st[strconv.Itoa(s)] = v
		}
	}
	if *acked != "" {
		_ = os.WriteFile(*acked, ackBits, 0o644)
	}
	out := map[string]any{
		"requests": done.Load(), "events": events.Load(), "failed": failed.Load(), "sent": sent.Load(),
		"statuses": st, "seconds": el, "rps": float64(done.Load()) / el,
		"events_per_s": float64(events.Load()) / el, "connections": *conns, "batch": *batch,
		"p50_ms": pct(0.50), "p99_ms": pct(0.99), "max_ms": pct(1.0),
		"first_ack_ms": firstAck.Load(), "last_ack_ms": lastAck.Load(),
		"start_ms": start.UnixMilli(), "cpu_s": cpuSeconds(),
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	if done.Load() == 0 {
		os.Exit(1)
	}
}

func b64(s string) string {
	const t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b := []byte(s)
	var o []byte
	for i := 0; i < len(b); i += 3 {
		var v uint32
		n := len(b) - i
		if n > 3 {
			n = 3
		}
		for j := 0; j < 3; j++ {
			v <<= 8
			if j < n {
				v |= uint32(b[i+j])
			}
		}
		for j := 0; j < 4; j++ {
			if j <= n {
				o = append(o, t[(v>>(18-6*j))&63])
			} else {
				o = append(o, '=')
			}
		}
	}
	return string(o)
}

// buildBody writes a Segment batch of `batch` track events (or, with batch 0, one event) with
// messageIds prefix-first, prefix-first+1, ...
func buildBody(b []byte, prefix string, first int64, batch int, stamp int64) []byte {
	one := func(b []byte, n int64) []byte {
		b = append(b, `{"type":"track","event":"Order Completed","userId":"user-`...)
		b = strconv.AppendInt(b, n%1000, 10)
		b = append(b, `","properties":{"order_id":"ord-`...)
		b = strconv.AppendInt(b, n, 10)
		b = append(b, `","revenue":49.99,"items":3,"express":true,"tags":["a","b"]`...)
		if stamp > 0 {
			b = append(b, `,"t0":`...)
			b = strconv.AppendInt(b, stamp, 10)
		}
		b = append(b, `},"messageId":"`...)
		b = append(b, prefix...)
		b = append(b, '-')
		b = strconv.AppendInt(b, n, 10)
		b = append(b, `","timestamp":"2026-11-21T09:30:00.123Z","context":{"library":{"name":"analytics-python","version":"2.3.4"}}}`...)
		return b
	}
	if batch == 0 {
		return one(b, first)
	}
	b = append(b, `{"batch":[`...)
	for m := 0; m < batch; m++ {
		if m > 0 {
			b = append(b, ',')
		}
		b = one(b, first+int64(m))
	}
	return append(b, `],"sentAt":"2026-11-21T09:30:00.123Z"}`...)
}

func readResponse(rd *bufio.Reader) (int, error) {
	line, err := rd.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 {
		return 0, fmt.Errorf("short status line")
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil || status < 100 || status > 599 {
		return 0, fmt.Errorf("bad status line")
	}
	clen := -1
	for {
		h, err := rd.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(h) <= 2 {
			break
		}
		if len(h) > 15 && strings.EqualFold(string(h[:15]), "content-length:") {
			clen, _ = strconv.Atoi(strings.TrimSpace(string(h[15:])))
		}
	}
	if clen < 0 {
		return 0, fmt.Errorf("no content-length")
	}
	_, err = rd.Discard(clen)
	return status, err
}

// ---------------------------------------------------------------- sink

type sink struct {
	mu          sync.Mutex
	bits        []byte
	unique      int64
	first, last int64           // unix ms of the first and last new id
	deliveries  atomic.Int64    // 2xx answers to /hook/*
	hookBytes   atomic.Int64    // their bodies' bytes
	batches     atomic.Int64    // 2xx answers to /v1/batch
	ids         atomic.Int64    // ids taken, duplicates included
	faults      [4]atomic.Int64 // 503, reset, stall, bad path
	inflight    atomic.Int64
	maxInflight atomic.Int64
	cond        *sync.Cond
	hangs       atomic.Int64 // requests to /hang/* (never answered)
	hangHeld    atomic.Int64 // of them, held now
	conns       atomic.Int64 // connections open now
	latMu       sync.Mutex
	lats        []int32 // microseconds from an event's t0 to its arrival (at most 5 M kept)
	// Samples of conns and hangHeld: what a client keeps open, which the bare client of
	// bench/relay/tenants.py is given (a peak would count the start's burst).
	samples atomic.Int64
	connSum atomic.Int64
	hangSum atomic.Int64
}

var stampKey = []byte(`"t0":`)

// stamped records the latency of every stamped event in body.
func (s *sink) stamped(body []byte) {
	now := time.Now().UnixNano()
	for {
		i := indexOf(body, stampKey)
		if i < 0 {
			return
		}
		body = body[i+len(stampKey):]
		j := 0
		for j < len(body) && body[j] >= '0' && body[j] <= '9' {
			j++
		}
		t0, err := strconv.ParseInt(string(body[:j]), 10, 64)
		if err != nil {
			continue
		}
		us := (now - t0) / 1000
		s.latMu.Lock()
		if len(s.lats) < 5_000_000 {
			s.lats = append(s.lats, int32(us))
		}
		s.latMu.Unlock()
	}
}

// latency gives the p50 and p99 of the recorded latencies, in ms, and their count.
func (s *sink) latency() (float64, float64, int) {
	s.latMu.Lock()
	l := append([]int32(nil), s.lats...)
	s.latMu.Unlock()
	if len(l) == 0 {
		return 0, 0, 0
	}
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	at := func(p float64) float64 { return float64(l[int(p*float64(len(l)-1))]) / 1000 }
	return at(0.50), at(0.99), len(l)
}

var idKey = []byte(`"messageId":"`)

func (s *sink) take(body []byte) {
	now := time.Now().UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		i := indexOf(body, idKey)
		if i < 0 {
			break
		}
		body = body[i+len(idKey):]
		j := 0
		for j < len(body) && body[j] != '"' {
			j++
		}
		id := body[:j]
		body = body[j:]
		d := -1
		for k := len(id) - 1; k >= 0; k-- {
			if id[k] == '-' {
				d = k
				break
			}
		}
		if d < 0 {
			continue
		}
		n, err := strconv.ParseInt(string(id[d+1:]), 10, 64)
		if err != nil || n < 0 {
			continue
		}
		s.ids.Add(1)
		for int64(len(s.bits)) <= n/8 {
			s.bits = append(s.bits, make([]byte, 1<<20)...)
		}
		if s.bits[n/8]&(1<<(n%8)) == 0 {
			s.bits[n/8] |= 1 << (n % 8)
			s.unique++
			if s.first == 0 {
				s.first = now
			}
			s.last = now
		}
	}
	s.cond.Broadcast()
}

func indexOf(b, sep []byte) int {
	n := len(sep)
	for i := 0; i+n <= len(b); i++ {
		if b[i] == sep[0] && string(b[i:i+n]) == string(sep) {
			return i
		}
	}
	return -1
}

func runSink(args []string) {
	fs := flag.NewFlagSet("sink", flag.ExitOnError)
	delay := fs.Duration("delay", 0, "hold every answer this long")
	p503 := fs.Float64("p503", 0, "share answered 503")
	preset := fs.Float64("preset", 0, "share of connections reset")
	pstall := fs.Float64("pstall", 0, "share stalled")
	stall := fs.Duration("stall", 6*time.Second, "how long a stall lasts")
	seed := fs.Int64("seed", 1, "random seed")
	_ = fs.Parse(args)
	s := &sink{}
	s.cond = sync.NewCond(&s.mu)
	var rngMu sync.Mutex
	rng := rand.New(rand.NewSource(*seed))
	draw := func() float64 {
		rngMu.Lock()
		defer rngMu.Unlock()
		return rng.Float64()
	}
	handler := func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET" && r.URL.Path == "/_stats":
			p50, p99, n := s.latency()
			s.mu.Lock()
			out := map[string]any{"unique": s.unique, "first_ms": s.first, "last_ms": s.last,
				"lat_p50_ms": p50, "lat_p99_ms": p99, "lat_n": n, "hangs": s.hangs.Load(),
				"deliveries": s.deliveries.Load(), "hook_bytes": s.hookBytes.Load(), "batches": s.batches.Load(), "ids": s.ids.Load(),
				"f503": s.faults[0].Load(), "resets": s.faults[1].Load(), "stalls": s.faults[2].Load(),
				"max_inflight": s.maxInflight.Load(), "cpu_s": cpuSeconds(),
				"conns": s.conns.Load(), "samples": s.samples.Load(), "conn_sum": s.connSum.Load(),
				"hang_sum": s.hangSum.Load()}
			s.mu.Unlock()
			_ = json.NewEncoder(w).Encode(out)
			return
		case r.Method == "GET" && r.URL.Path == "/_reset":
			s.mu.Lock()
			s.bits, s.unique, s.first, s.last = nil, 0, 0, 0
			s.mu.Unlock()
			s.latMu.Lock()
			s.lats = nil
			s.latMu.Unlock()
			s.hangs.Store(0)
			s.deliveries.Store(0)
			s.hookBytes.Store(0)
			s.batches.Store(0)
			s.ids.Store(0)
			s.maxInflight.Store(0)
			for i := range s.faults {
				s.faults[i].Store(0)
			}
			w.Write([]byte("{}"))
			return
		case r.Method == "GET" && r.URL.Path == "/_bitmap":
			s.mu.Lock()
			b := append([]byte(nil), s.bits...)
			s.mu.Unlock()
			w.Write(b)
			return
		case r.Method == "GET" && r.URL.Path == "/_wait":
			n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
			to, _ := strconv.ParseFloat(r.URL.Query().Get("timeout"), 64)
			deadline := time.Now().Add(time.Duration(to * float64(time.Second)))
			done := make(chan struct{})
			go func() {
				select {
				case <-done:
				case <-time.After(time.Until(deadline)):
					s.mu.Lock()
					s.cond.Broadcast()
					s.mu.Unlock()
				}
			}()
			s.mu.Lock()
			for s.unique < n && time.Now().Before(deadline) {
				s.cond.Wait()
			}
			u := s.unique
			s.mu.Unlock()
			close(done)
			fmt.Fprintf(w, "{\"unique\":%d}", u)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		if strings.HasPrefix(r.URL.Path, "/hang/") {
			// Past any timeout: answered never, the connection held until the client goes.
			s.hangs.Add(1)
			s.hangHeld.Add(1)
			<-r.Context().Done()
			s.hangHeld.Add(-1)
			return
		}
		hook := strings.HasPrefix(r.URL.Path, "/hook/")
		if !hook && r.URL.Path != "/v1/batch" {
			s.faults[3].Add(1)
			w.WriteHeader(404)
			return
		}
		in := s.inflight.Add(1)
		defer s.inflight.Add(-1)
		for {
			m := s.maxInflight.Load()
			if in <= m || s.maxInflight.CompareAndSwap(m, in) {
				break
			}
		}
		if *delay > 0 {
			time.Sleep(*delay)
		}
		if *p503+*preset+*pstall > 0 {
			x := draw()
			switch {
			case x < *pstall:
				s.faults[2].Add(1)
				time.Sleep(*stall)
				w.WriteHeader(503)
				return
			case x < *pstall+*preset:
				s.faults[1].Add(1)
				if x < *pstall+*preset/2 {
					s.take(body) // taken, then the answer is lost
				}
				if hj, ok := w.(http.Hijacker); ok {
					if c, _, err := hj.Hijack(); err == nil {
						if tc, ok := c.(*net.TCPConn); ok {
							_ = tc.SetLinger(0)
						}
						c.Close()
						return
					}
				}
				w.WriteHeader(503)
				return
			case x < *pstall+*preset+*p503:
				s.faults[0].Add(1)
				w.WriteHeader(503)
				return
			}
		}
		s.take(body)
		s.stamped(body)
		if hook {
			s.deliveries.Add(1)
			s.hookBytes.Add(int64(len(body)))
		} else {
			s.batches.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"success":true}`))
	}
	ln := listen()
	go untilStdinCloses()
	go func() {
		for range time.Tick(10 * time.Millisecond) {
			s.connSum.Add(s.conns.Load())
			s.hangSum.Add(s.hangHeld.Load())
			s.samples.Add(1)
		}
	}()
	srv := &http.Server{Handler: http.HandlerFunc(handler), MaxHeaderBytes: 1 << 16,
		ConnState: func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				s.conns.Add(1)
			case http.StateClosed, http.StateHijacked:
				s.conns.Add(-1)
			}
		}}
	_ = srv.Serve(ln)
}

// ---------------------------------------------------------------- trivial

func runTrivial() {
	ln := listen()
	go untilStdinCloses()
	ok := []byte(`{"success":true}`)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(ok)
	})}
	_ = srv.Serve(ln)
}
