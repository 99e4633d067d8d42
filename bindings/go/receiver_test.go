package outbound_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A real HTTP receiver on 127.0.0.1 that records every request.

type request struct {
	Path    string
	Header  http.Header
	Body    []byte
	Arrived time.Time
}

type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []request
	status   int           // answered to every request (200 by default)
	delay    time.Duration // before each answer
	arrived  chan struct{}
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{status: http.StatusOK, arrived: make(chan struct{}, 1<<16)}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.Server.Listener.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Server.Listener = ln
	r.Start()
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.requests = append(r.requests, request{req.URL.Path, req.Header.Clone(), body, time.Now()})
	status, delay := r.status, r.delay
	r.mu.Unlock()
	time.Sleep(delay)
	w.WriteHeader(status)
	r.arrived <- struct{}{}
}

func (r *receiver) setStatus(code int) {
	r.mu.Lock()
	r.status = code
	r.mu.Unlock()
}

func (r *receiver) setDelay(d time.Duration) {
	r.mu.Lock()
	r.delay = d
	r.mu.Unlock()
}

// batchSizes returns how many messages each request carried, in order.
func (r *receiver) batchSizes(t *testing.T) []int {
	t.Helper()
	var sizes []int
	for _, req := range r.all() {
		var v struct {
			Batch []json.RawMessage `json:"batch"`
		}
		if err := json.Unmarshal(req.Body, &v); err != nil {
			t.Fatalf("body is not JSON: %v\n%s", err, req.Body)
		}
		sizes = append(sizes, len(v.Batch))
	}
	return sizes
}

// waitRequests waits until n requests arrived in all and returns them.
func (r *receiver) waitRequests(t *testing.T, n int) []request {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		got := len(r.requests)
		r.mu.Unlock()
		if got >= n {
			break
		}
		select {
		case <-r.arrived:
		case <-deadline:
			t.Fatalf("receiver: %d of %d requests arrived", got, n)
		}
	}
	return r.all()
}

func (r *receiver) all() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.requests...)
}

// messages returns every message received: each element of each batch, and each webhook
// body.
func (r *receiver) messages(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, req := range r.all() {
		var v map[string]any
		if err := json.Unmarshal(req.Body, &v); err != nil {
			t.Fatalf("body is not JSON: %v\n%s", err, req.Body)
		}
		if batch, ok := v["batch"].([]any); ok {
			for _, m := range batch {
				out = append(out, m.(map[string]any))
			}
		} else {
			out = append(out, v)
		}
	}
	return out
}

// rawMessages returns each message's exact bytes: batch elements are cut out of the batch
// body (the core writes them compactly), webhook bodies are whole.
func (r *receiver) rawMessages(t *testing.T) [][]byte {
	t.Helper()
	var out [][]byte
	for _, req := range r.all() {
		var v struct {
			Batch []json.RawMessage `json:"batch"`
		}
		if err := json.Unmarshal(req.Body, &v); err == nil && v.Batch != nil {
			for _, m := range v.Batch {
				out = append(out, []byte(m))
			}
		} else {
			out = append(out, req.Body)
		}
	}
	return out
}

// stallServer accepts connections and never answers: messages stay in flight.
func stallServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return "http://" + ln.Addr().String()
}

// repoRoot is the checkout this package lives in (bindings/go is two levels down).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// nodeRoundTrip checks, with Node, that every body is a fixed point of
// JSON.stringify(JSON.parse(body)) (crates/outbound/tests/node/roundtrip.js).
func nodeRoundTrip(t *testing.T, bodies [][]byte) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is required for the round-trip check (https://nodejs.org)")
	}
	file := filepath.Join(t.TempDir(), "bodies.txt")
	var all bytes.Buffer
	for _, b := range bodies {
		if bytes.ContainsAny(b, "\n") {
			t.Fatalf("a body holds a raw newline: %s", b)
		}
		all.Write(b)
		all.WriteByte('\n')
	}
	if err := os.WriteFile(file, all.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(repoRoot(t), "crates", "outbound", "tests", "node", "roundtrip.js")
	out, err := exec.Command(node, script, file).CombinedOutput()
	if err != nil {
		t.Fatalf("node round-trip failed: %v\n%s", err, out)
	}
	want := "round-tripped " + strconv.Itoa(len(bodies)) + " bodies"
	if !strings.Contains(string(out), want) {
		t.Fatalf("node said %q, want %q", out, want)
	}
}
