// The benchmark's receiver and load generator (std only).
//
//	receiver                 serve on 127.0.0.1 (random free ports); print one JSON line
//	                         {"port":P,"stall_port":S} on stdout, then serve until stdin closes.
//	load -url U -c N -d SEC  a keep-alive HTTP/1.1 load generator (N connections) that posts
//	                         one body (-body FILE, -header "K: V") or synthesised Segment
//	                         batches with unique ids (-batch M) and prints one JSON line.
//
// The receiver counts unique message ids and verifies nothing beyond parsing:
//
//	POST /v1/batch, /batch, /batch/   Segment / analytics-go / PostHog batch bodies, gzip or
//	                                  not: the "messageId" (or PostHog's "uuid") of every
//	                                  element of the top-level "batch" array.
//	POST /hook/<name>                 one webhook body: its top-level "messageId", counted
//	                                  per path (one message to 5 URLs is 5 deliveries).
//	GET  /_stats                      counters as JSON; GET /_reset clears them.
//	GET  /_wait?n=N&timeout=SEC       returns when N unique ids have arrived (or on timeout).
//	GET  /_sample?kind=hook|batch     the first body (and headers) seen of that kind.
//
// The stall port accepts connections and never reads or answers them (the memory case).
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: receiver | load [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "receiver":
		runReceiver()
	case "load":
		runLoad(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", os.Args[1])
		os.Exit(2)
	}
}

// ---------------------------------------------------------------- receiver

type sample struct {
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"`
	Path    string            `json:"path"`
}

type state struct {
	mu       sync.Mutex
	seen     map[string]struct{}
	unique   atomic.Int64
	requests atomic.Int64
	ids      atomic.Int64 // ids parsed, duplicates included
	bytes    atomic.Int64 // body bytes after gunzip
	wire     atomic.Int64 // body bytes as received
	bad      atomic.Int64 // bodies that did not parse
	conns    atomic.Int64 // TCP connections accepted (keep-alive shows as few)
	samples  map[string]*sample
	started  time.Time
}

func newState() *state {
	return &state{seen: make(map[string]struct{}, 1<<17), samples: map[string]*sample{}, started: time.Now()}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

func runReceiver() {
	st := newState()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	stall, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() { // accept, hold, never read or answer
		var held []net.Conn
		for {
			c, err := stall.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	mux := http.NewServeMux()
	mux.HandleFunc("/", st.ingest)
	mux.HandleFunc("/_stats", st.stats)
	mux.HandleFunc("/_reset", st.reset)
	mux.HandleFunc("/_wait", st.wait)
	mux.HandleFunc("/_sample", st.sample)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				st.conns.Add(1)
			}
		}}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("{\"port\":%d,\"stall_port\":%d}\n", ln.Addr().(*net.TCPAddr).Port, stall.Addr().(*net.TCPAddr).Port)
	// Serve until the parent closes our stdin (or dies), and at most 2 hours.
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Hour):
	}
}

var okBody = []byte("{}")

func (st *state) ingest(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var kind string
	switch {
	case r.URL.Path == "/v1/batch" || r.URL.Path == "/batch" || r.URL.Path == "/batch/":
		kind = "batch"
	case strings.HasPrefix(r.URL.Path, "/hook/"):
		kind = "hook"
	default:
		http.NotFound(w, r)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	st.wire.Add(int64(len(raw)))
	body := raw
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil {
			st.bad.Add(1)
			http.Error(w, "gzip", http.StatusBadRequest)
			return
		}
	}
	st.bytes.Add(int64(len(body)))
	var ids [][]byte
	var ok bool
	if kind == "batch" {
		ids, ok = batchIDs(body)
	} else {
		var id []byte
		id, ok = objectID(body)
		if ok {
			ids = [][]byte{id}
		}
	}
	if !ok {
		st.bad.Add(1)
		http.Error(w, "unparsable body", http.StatusBadRequest)
		return
	}
	prefix := ""
	if kind == "hook" {
		prefix = r.URL.Path + "|"
	}
	st.mu.Lock()
	if _, have := st.samples[kind]; !have {
		h := map[string]string{}
		for k := range r.Header {
			h[k] = r.Header.Get(k)
		}
		st.samples[kind] = &sample{Body: string(body), Headers: h, Path: r.URL.Path}
	}
	added := 0
	for _, id := range ids {
		key := prefix + string(id)
		if _, dup := st.seen[key]; !dup {
			st.seen[key] = struct{}{}
			added++
		}
	}
	st.mu.Unlock()
	st.requests.Add(1)
	st.ids.Add(int64(len(ids)))
	st.unique.Add(int64(added))
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(okBody)
}

func (st *state) snapshot() map[string]any {
	return map[string]any{
		"unique": st.unique.Load(), "requests": st.requests.Load(), "ids": st.ids.Load(),
		"bytes": st.bytes.Load(), "wire_bytes": st.wire.Load(), "bad": st.bad.Load(), "connections": st.conns.Load(),
		"cpu_s": cpuSeconds(), "uptime_s": time.Since(st.started).Seconds(),
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (st *state) stats(w http.ResponseWriter, r *http.Request) { writeJSON(w, st.snapshot()) }

func (st *state) reset(w http.ResponseWriter, r *http.Request) {
	st.mu.Lock()
	st.seen = make(map[string]struct{}, 1<<17)
	st.samples = map[string]*sample{}
	st.unique.Store(0)
	st.requests.Store(0)
	st.ids.Store(0)
	st.bytes.Store(0)
	st.wire.Store(0)
	st.bad.Store(0)
	st.conns.Store(0)
	st.mu.Unlock()
	writeJSON(w, st.snapshot())
}

func (st *state) wait(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
	timeout, err := strconv.ParseFloat(r.URL.Query().Get("timeout"), 64)
	if err != nil || timeout <= 0 {
		timeout = 60
	}
	deadline := time.Now().Add(time.Duration(timeout * float64(time.Second)))
	for st.unique.Load() < n && time.Now().Before(deadline) {
		time.Sleep(500 * time.Microsecond)
	}
	snap := st.snapshot()
	snap["complete"] = st.unique.Load() >= n
	writeJSON(w, snap)
}

func (st *state) sample(w http.ResponseWriter, r *http.Request) {
	st.mu.Lock()
	s := st.samples[r.URL.Query().Get("kind")]
	st.mu.Unlock()
	if s == nil {
		http.NotFound(w, r)
		return
	}
	writeJSON(w, s)
}

// ---------------------------------------------------------------- a minimal JSON walker
// Enough structure to find ids; it does not validate more than it must to walk.

func ws(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// str: b[i] == '"'; returns the raw contents and the index after the closing quote.
func str(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	j := i + 1
	for j < len(b) {
		switch b[j] {
		case '\\':
			j += 2
			continue
		case '"':
			return b[i+1 : j], j + 1, true
		}
		j++
	}
	return nil, j, false
}

func skipValue(b []byte, i int) (int, bool) {
	i = ws(b, i)
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		_, j, ok := str(b, i)
		return j, ok
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				_, j, ok := str(b, i)
				if !ok {
					return j, false
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return i, false
	default:
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' {
			i++
		}
		return i, true
	}
}

// object walks the object at b[i] calling fn(key, valueStart) for each member; fn returns
// the index after the value (or -1 to have it skipped).
func object(b []byte, i int, fn func(key []byte, v int) int) (int, bool) {
	i = ws(b, i)
	if i >= len(b) || b[i] != '{' {
		return i, false
	}
	i = ws(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		key, j, ok := str(b, ws(b, i))
		if !ok {
			return j, false
		}
		j = ws(b, j)
		if j >= len(b) || b[j] != ':' {
			return j, false
		}
		v := ws(b, j+1)
		next := fn(key, v)
		if next < 0 {
			next, ok = skipValue(b, v)
			if !ok {
				return next, false
			}
		}
		i = ws(b, next)
		if i >= len(b) {
			return i, false
		}
		if b[i] == '}' {
			return i + 1, true
		}
		if b[i] != ',' {
			return i, false
		}
		i++
	}
}

func messageID(b []byte, i int) ([]byte, int, bool) {
	var id []byte
	end, ok := object(b, i, func(key []byte, v int) int {
		if (string(key) == "messageId" || string(key) == "uuid") && v < len(b) && b[v] == '"' {
			s, j, ok := str(b, v)
			if ok && id == nil {
				id = s
			}
			if ok {
				return j
			}
		}
		return -1
	})
	return id, end, ok && id != nil
}

func objectID(b []byte) ([]byte, bool) {
	id, _, ok := messageID(b, 0)
	return id, ok
}

func batchIDs(b []byte) ([][]byte, bool) {
	var ids [][]byte
	good := true
	_, ok := object(b, 0, func(key []byte, v int) int {
		if string(key) != "batch" || v >= len(b) || b[v] != '[' {
			return -1
		}
		i := ws(b, v+1)
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		for i < len(b) {
			id, j, ok := messageID(b, i)
			if !ok {
				good = false
				return len(b)
			}
			ids = append(ids, id)
			i = ws(b, j)
			if i < len(b) && b[i] == ']' {
				return i + 1
			}
			if i >= len(b) || b[i] != ',' {
				good = false
				return len(b)
			}
			i++
		}
		good = false
		return len(b)
	})
	return ids, ok && good && len(ids) > 0
}

// ---------------------------------------------------------------- load generator

type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

func runLoad(args []string) {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	target := fs.String("url", "", "http://127.0.0.1:PORT/path")
	conns := fs.Int("c", 8, "connections (one request in flight on each)")
	dur := fs.Float64("d", 3, "seconds")
	bodyFile := fs.String("body", "", "file with the body to post")
	batch := fs.Int("batch", 0, "instead of -body: Segment batches of this many messages with unique ids")
	var headers headerList
	fs.Var(&headers, "header", "extra header 'Name: value' (repeatable)")
	_ = fs.Parse(args)

	if !strings.HasPrefix(*target, "http://127.0.0.1:") {
		fmt.Fprintln(os.Stderr, "load: -url must be http://127.0.0.1:PORT/...")
		os.Exit(2)
	}
	hostport := strings.TrimPrefix(*target, "http://")
	path := "/"
	if k := strings.IndexByte(hostport, '/'); k >= 0 {
		path = hostport[k:]
		hostport = hostport[:k]
	}
	head := func(n int) []byte {
		var sb strings.Builder
		fmt.Fprintf(&sb, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", path, hostport, n)
		for _, h := range headers {
			sb.WriteString(h)
			sb.WriteString("\r\n")
		}
		sb.WriteString("\r\n")
		return []byte(sb.String())
	}

	// Requests to send: one fixed body, or pre-built batches with unique ids (built before
	// the clock starts; cycled if the run outlasts them).
	var reqs [][]byte
	idsPer := 1
	if *batch > 0 {
		idsPer = *batch
		const nBodies = 2000
		for k := 0; k < nBodies; k++ {
			var sb strings.Builder
			sb.WriteString(`{"batch":[`)
			for m := 0; m < *batch; m++ {
				if m > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, `{"type":"track","event":"Order Completed","userId":"user-%d","properties":{"order_id":"ord-%d","revenue":49.99,"items":3,"express":true,"tags":["a","b"]},"messageId":"load-%08d-%04d","timestamp":"2026-11-21T09:30:00.123Z","context":{"library":{"name":"load","version":"0"}}}`, m, k, k, m)
			}
			sb.WriteString(`],"sentAt":"2026-11-21T09:30:00.123Z"}`)
			b := []byte(sb.String())
			reqs = append(reqs, append(head(len(b)), b...))
		}
	} else {
		b, err := os.ReadFile(*bodyFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(2)
		}
		reqs = [][]byte{append(head(len(b)), b...)}
	}

	var done, failed atomic.Int64
	var next atomic.Int64
	stop := time.Now().Add(time.Duration(*dur * float64(time.Second)))
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < *conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", hostport)
			if err != nil {
				failed.Add(1)
				return
			}
			defer conn.Close()
			rd := bufio.NewReaderSize(conn, 16<<10)
			for time.Now().Before(stop) {
				req := reqs[int(next.Add(1)-1)%len(reqs)]
				if _, err := conn.Write(req); err != nil {
					failed.Add(1)
					return
				}
				status, err := readResponse(rd)
				if err != nil {
					failed.Add(1)
					return
				}
				if status/100 == 2 {
					done.Add(1)
				} else {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	out := map[string]any{
		"requests": done.Load(), "failed": failed.Load(), "seconds": el,
		"rps": float64(done.Load()) / el, "ids_per_s": float64(done.Load()*int64(idsPer)) / el,
		"connections": *conns, "cpu_s": cpuSeconds(),
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	if done.Load() == 0 {
		os.Exit(1)
	}
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
	if err != nil {
		return 0, err
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
