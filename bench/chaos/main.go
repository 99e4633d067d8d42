// The chaos receiver of the fault soak (scripts/soak.sh): one HTTP server on 127.0.0.1 that
// plays a hostile ingestion endpoint (POST /v1/batch) and a hostile signed webhook
// (POST /hook), standard library only.
//
//	chaos -p503 0.30 -preset 0.10 -pstall 0.05 -stall 6s -secret S -seed N
//
// Prints {"port":P} on stdout, then serves until stdin closes. Every request to /v1/batch or
// /hook (and /hook/<any>: many sources' URLs) is read whole, then one fault is drawn for it
// (POST /hang/<any> is never answered at all):
//
//	stall (pstall)   hold the request for -stall (past the sender's timeout), then answer 503:
//	                 the sender has given up, so nothing counts as received
//	reset (preset)   close the connection with a TCP reset instead of answering; for half of
//	                 them the receiver has already taken the message (the response is lost),
//	                 so the sender's retry arrives as a duplicate
//	503 (p503)       answer 503 Service Unavailable
//	otherwise        take the message(s) and answer 200
//
// A webhook body whose X-Signature is not the hex HMAC-SHA1 of the body under -secret is
// answered 401 and counted as a bad signature (it must never happen); with -authorization V,
// so is a webhook request whose Authorization header is not V (counted as bad_auth).
//
// Subscriptions (Segment's Webhooks (Actions)) are served at /sub/<name>, each name a
// destination of its own: a signed body that is one mapped object or, batched, a JSON array
// of them, each with a "messageId" (the mappings under test put it there); faults as above,
// stalls lasting -sub-stall (past the 10 s subscription timeout). Each one's methods and
// objects per request are counted, and the first body taken for each id kept.
//
// GET /_stats gives the counters as JSON (subscriptions under "subs", once there are any);
// GET /_ids?dest=batch|hook|sub/<name> gives the ids taken (a JSON array, each id once) for
// the sender's lost-message check; GET /_bodies?dest=sub/<name> each id's first body taken
// (an object of id to body).
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type dest struct {
	mu       sync.Mutex
	taken    map[string]int // id -> times taken (2xx, or reset after taking)
	attempts map[string]int // id -> requests that carried it
	requests atomic.Int64
	outcomes [5]atomic.Int64 // ok, 503, reset-before, reset-after, stall
	// Subscriptions' only (nil otherwise): requests by method, objects per request (sum,
	// max), and each id's first body taken.
	methods    map[string]int
	objects    int
	objectsMax int
	bodies     map[string]json.RawMessage
}

func newDest() *dest {
	return &dest{taken: make(map[string]int, 1<<17), attempts: make(map[string]int, 1<<17)}
}

func newSubDest() *dest {
	d := newDest()
	d.methods = map[string]int{}
	d.bodies = make(map[string]json.RawMessage, 1<<17)
	return d
}

type receiver struct {
	p503, preset, pstall float64
	stall, subStall      time.Duration
	secret               []byte
	authorization        string
	badAuth              atomic.Int64
	rngMu                sync.Mutex
	rng                  *rand.Rand
	batch, hook          *dest
	subsMu               sync.Mutex
	subs                 map[string]*dest
	badSig, badBody      atomic.Int64
}

// sub is subscription name's destination, made at its first request.
func (r *receiver) sub(name string) *dest {
	r.subsMu.Lock()
	defer r.subsMu.Unlock()
	d := r.subs[name]
	if d == nil {
		d = newSubDest()
		r.subs[name] = d
	}
	return d
}

// dest is what ?dest= names: batch, hook or sub/<name> (nil: a subscription never called).
func (r *receiver) dest(q *http.Request) *dest {
	name := q.URL.Query().Get("dest")
	switch {
	case name == "hook":
		return r.hook
	case strings.HasPrefix(name, "sub/"):
		r.subsMu.Lock()
		defer r.subsMu.Unlock()
		return r.subs[strings.TrimPrefix(name, "sub/")]
	default:
		return r.batch
	}
}

func main() {
	r := &receiver{batch: newDest(), hook: newDest(), subs: map[string]*dest{}}
	var secret string
	var seed int64
	flag.Float64Var(&r.p503, "p503", 0.30, "share of requests answered 503")
	flag.Float64Var(&r.preset, "preset", 0.10, "share of connections reset")
	flag.Float64Var(&r.pstall, "pstall", 0.05, "share of requests stalled")
	flag.DurationVar(&r.stall, "stall", 6*time.Second, "how long a stall lasts")
	flag.DurationVar(&r.subStall, "sub-stall", 11500*time.Millisecond, "how long a stall of a subscription's request lasts")
	flag.StringVar(&secret, "secret", "", "shared secret of the webhook signatures")
	flag.StringVar(&r.authorization, "authorization", "", "the Authorization header every webhook and subscription request must carry (401 otherwise)")
	flag.Int64Var(&seed, "seed", 1, "random seed")
	flag.Parse()
	r.secret = []byte(secret)
	r.rng = rand.New(rand.NewSource(seed))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/batch", func(w http.ResponseWriter, q *http.Request) { r.serve(w, q, r.batch, kindBatch) })
	mux.HandleFunc("/hook", func(w http.ResponseWriter, q *http.Request) { r.serve(w, q, r.hook, kindHook) })
	// Many sources' URLs on one receiver: every path under /hook/ is a webhook too.
	mux.HandleFunc("/hook/", func(w http.ResponseWriter, q *http.Request) { r.serve(w, q, r.hook, kindHook) })
	// Subscriptions: each name its own destination.
	mux.HandleFunc("/sub/", func(w http.ResponseWriter, q *http.Request) {
		r.serve(w, q, r.sub(strings.TrimPrefix(q.URL.Path, "/sub/")), kindSub)
	})
	// A URL that never answers (past any timeout): the request is held until the sender goes.
	mux.HandleFunc("/hang/", func(w http.ResponseWriter, q *http.Request) {
		_, _ = io.Copy(io.Discard, q.Body)
		<-q.Context().Done()
	})
	mux.HandleFunc("/_stats", r.stats)
	mux.HandleFunc("/_ids", r.ids)
	mux.HandleFunc("/_bodies", r.bodiesOf)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("{\"port\":%d}\n", ln.Addr().(*net.TCPAddr).Port)
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Hour):
	}
}

func (r *receiver) draw() float64 {
	r.rngMu.Lock()
	defer r.rngMu.Unlock()
	return r.rng.Float64()
}

type kind int

const (
	kindBatch kind = iota // ingestion: {"batch": [...]}
	kindHook              // a classic webhook: one signed event
	kindSub               // a subscription: one signed mapped object, or an array of them
)

func (r *receiver) serve(w http.ResponseWriter, q *http.Request, d *dest, k kind) {
	raw, err := io.ReadAll(q.Body)
	if err != nil {
		return
	}
	body := raw
	if q.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil {
			r.badBody.Add(1)
			http.Error(w, "gzip", http.StatusBadRequest)
			return
		}
	}
	var ids []string
	var objects []json.RawMessage
	if k == kindBatch {
		var b struct {
			Batch []struct {
				MessageID string `json:"messageId"`
			} `json:"batch"`
		}
		if json.Unmarshal(body, &b) != nil || len(b.Batch) == 0 {
			r.badBody.Add(1)
			http.Error(w, "body", http.StatusBadRequest)
			return
		}
		for _, m := range b.Batch {
			ids = append(ids, m.MessageID)
		}
	} else {
		if r.authorization != "" && q.Header.Get("Authorization") != r.authorization {
			r.badAuth.Add(1)
			http.Error(w, "authorization", http.StatusUnauthorized)
			return
		}
		mac := hmac.New(sha1.New, r.secret)
		mac.Write(body)
		if !hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(q.Header.Get("X-Signature"))) {
			r.badSig.Add(1)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		objects = []json.RawMessage{body}
		if k == kindSub && len(bytes.TrimSpace(body)) > 0 && bytes.TrimSpace(body)[0] == '[' {
			objects = nil
			if json.Unmarshal(body, &objects) != nil || len(objects) == 0 {
				r.badBody.Add(1)
				http.Error(w, "body", http.StatusBadRequest)
				return
			}
		}
		for _, o := range objects {
			var m struct {
				MessageID string `json:"messageId"`
			}
			if json.Unmarshal(o, &m) != nil || m.MessageID == "" {
				r.badBody.Add(1)
				http.Error(w, "body", http.StatusBadRequest)
				return
			}
			ids = append(ids, m.MessageID)
		}
	}
	d.requests.Add(1)
	d.mu.Lock()
	for _, id := range ids {
		d.attempts[id]++
	}
	if d.methods != nil {
		d.methods[q.Method]++
		d.objects += len(ids)
		d.objectsMax = max(d.objectsMax, len(ids))
	}
	d.mu.Unlock()
	take := func() {
		d.mu.Lock()
		for i, id := range ids {
			d.taken[id]++
			if _, ok := d.bodies[id]; d.bodies != nil && !ok {
				d.bodies[id] = append(json.RawMessage(nil), objects[i]...)
			}
		}
		d.mu.Unlock()
	}
	stall := r.stall
	if k == kindSub {
		stall = r.subStall
	}
	x := r.draw()
	switch {
	case x < r.pstall:
		d.outcomes[4].Add(1)
		time.Sleep(stall)
		w.WriteHeader(http.StatusServiceUnavailable)
	case x < r.pstall+r.preset:
		if x < r.pstall+r.preset/2 {
			d.outcomes[3].Add(1)
			take() // taken, but the answer never arrives: the retry is a duplicate
		} else {
			d.outcomes[2].Add(1)
		}
		reset(w)
	case x < r.pstall+r.preset+r.p503:
		d.outcomes[1].Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		d.outcomes[0].Add(1)
		take()
		w.WriteHeader(http.StatusOK)
	}
}

// reset closes the connection with a TCP RST (SO_LINGER 0) instead of answering.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

func (d *dest) summary() map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	dups, maxAttempts, sumAttempts := 0, 0, 0
	for _, n := range d.taken {
		if n > 1 {
			dups += n - 1
		}
	}
	for _, n := range d.attempts {
		sumAttempts += n
		if n > maxAttempts {
			maxAttempts = n
		}
	}
	mean := 0.0
	if len(d.attempts) > 0 {
		mean = float64(sumAttempts) / float64(len(d.attempts))
	}
	out := map[string]any{
		"requests": d.requests.Load(), "unique_taken": len(d.taken), "duplicates": dups,
		"ids_seen": len(d.attempts), "attempts_mean": mean, "attempts_max": maxAttempts,
		"ok": d.outcomes[0].Load(), "503": d.outcomes[1].Load(), "reset_before": d.outcomes[2].Load(),
		"reset_after": d.outcomes[3].Load(), "stall": d.outcomes[4].Load(),
	}
	if d.methods != nil {
		objectsMean := 0.0
		if n := d.requests.Load(); n > 0 {
			objectsMean = float64(d.objects) / float64(n)
		}
		methods := make(map[string]int, len(d.methods))
		for m, n := range d.methods {
			methods[m] = n
		}
		out["methods"], out["objects_mean"], out["objects_max"] = methods, objectsMean, d.objectsMax
	}
	return out
}

func (r *receiver) stats(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	out := map[string]any{
		"batch": r.batch.summary(), "hook": r.hook.summary(),
		"bad_signatures": r.badSig.Load(), "bad_bodies": r.badBody.Load(), "bad_auth": r.badAuth.Load(),
	}
	r.subsMu.Lock()
	subs := make(map[string]*dest, len(r.subs))
	for name, d := range r.subs {
		subs[name] = d
	}
	r.subsMu.Unlock()
	if len(subs) > 0 {
		summaries := make(map[string]any, len(subs))
		for name, d := range subs {
			summaries[name] = d.summary()
		}
		out["subs"] = summaries
	}
	_ = json.NewEncoder(w).Encode(out)
}

func (r *receiver) ids(w http.ResponseWriter, q *http.Request) {
	out := []string{}
	if d := r.dest(q); d != nil {
		d.mu.Lock()
		out = make([]string, 0, len(d.taken))
		for id := range d.taken {
			out = append(out, id)
		}
		d.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (r *receiver) bodiesOf(w http.ResponseWriter, q *http.Request) {
	out := map[string]json.RawMessage{}
	if d := r.dest(q); d != nil && d.bodies != nil {
		d.mu.Lock()
		for id, b := range d.bodies {
			out[id] = b
		}
		d.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
