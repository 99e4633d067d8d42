package analytics_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// A real HTTP receiver on 127.0.0.1 that records every request.

type request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []request
	delay    time.Duration // before each answer
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
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
	r.requests = append(r.requests, request{req.Method, req.URL.Path, req.Header.Clone(), body})
	delay := r.delay
	r.mu.Unlock()
	time.Sleep(delay)
	w.WriteHeader(http.StatusOK)
}

// got returns the requests that arrived so far.
func (r *receiver) got() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.requests...)
}

// waitRequests waits (at most 10 s) until n requests arrived and returns them.
func (r *receiver) waitRequests(t *testing.T, n int) []request {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := r.got()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests arrived, want %d", len(got), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// batch is an ingestion body.
type batch struct {
	Batch  []map[string]any `json:"batch"`
	SentAt string           `json:"sentAt"`
}

func (r *receiver) setDelay(d time.Duration) {
	r.mu.Lock()
	r.delay = d
	r.mu.Unlock()
}

// sizes returns how many messages each request carried, in order.
func (r *receiver) sizes(t *testing.T) []int {
	t.Helper()
	var out []int
	for _, req := range r.got() {
		var b batch
		if err := json.Unmarshal(req.Body, &b); err != nil {
			t.Fatalf("body %s: %v", req.Body, err)
		}
		out = append(out, len(b.Batch))
	}
	return out
}

// messages decodes every batch that arrived, in order, and checks each request as v2 sent
// it: POST /v1/batch, JSON, Basic auth with the write key as user and no password.
func (r *receiver) messages(t *testing.T, writeKey string) []map[string]any {
	t.Helper()
	var all []map[string]any
	for _, req := range r.got() {
		if req.Method != http.MethodPost || req.Path != "/v1/batch" {
			t.Errorf("request %s %s, want POST /v1/batch", req.Method, req.Path)
		}
		if ct := req.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		hr := &http.Request{Header: req.Header}
		user, pass, ok := hr.BasicAuth()
		if !ok || user != writeKey || pass != "" {
			t.Errorf("Basic auth %q:%q (%v), want %q with no password", user, pass, ok, writeKey)
		}
		var b batch
		if err := json.Unmarshal(req.Body, &b); err != nil {
			t.Fatalf("body %s: %v", req.Body, err)
		}
		if _, err := time.Parse("2006-01-02T15:04:05.000Z", b.SentAt); err != nil {
			t.Errorf("sentAt %q: %v", b.SentAt, err)
		}
		all = append(all, b.Batch...)
	}
	return all
}
