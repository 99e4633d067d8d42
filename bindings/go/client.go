// Package outbound sends server-side events (Identify, Track, Page, Screen, Group, Alias,
// Delete) to a Segment-compatible ingestion endpoint in batches and/or to up to five signed
// webhooks, in the background. Its shape follows github.com/segmentio/analytics-go/v3, so
// moving over is mostly an import change (docs/go.md has the table, field by field).
//
// The engine is liboutbound (Rust), linked statically through cgo: every rule (what a call
// needs, the 32 KB limit, the JSON byte format, batching, retries, signatures) is the core's;
// this package converts Go values and errors. Messages are validated on the caller's
// goroutine, so a bad one is refused by Enqueue, naming the field; Enqueue never blocks
// (unless Config.QueueFullWait says how long a full queue is waited on).
//
//	client, err := outbound.NewWithConfig("WRITE_KEY", outbound.Config{
//		Webhooks:     []outbound.Webhook{{URL: "https://hooks.example.com/in"}},
//		SharedSecret: "s3cret",
//	})
//	if err != nil { ... }
//	defer client.Close()
//	client.Enqueue(outbound.Track{UserId: "u1", Event: "Signed Up",
//		Properties: outbound.NewProperties().Set("plan", "pro")})
//
// A Client is safe for concurrent use by many goroutines.
package outbound

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"context"
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"outbound.invalid/bindings/go/internal/bridge"
)

// Client sends messages in the background. It is analytics-go's Client (Enqueue, Close)
// plus Flush, Stats and EnqueueID.
type Client interface {
	// Enqueue validates msg and queues it; it never blocks (a full queue: see QueueFullWait). A refused message returns an
	// *Error (errors.Is(err, ErrMissingField), ErrQueueFull, ErrClosed, ...) and nothing
	// is queued.
	Enqueue(msg Message) error
	// EnqueueID is Enqueue returning the message's id (msg.MessageId, or the UUIDv4
	// liboutbound made for it).
	EnqueueID(msg Message) (string, error)
	// Flush sends what waits for a batch and waits until every message accepted before the
	// call has an outcome, or until ctx is done. nil means all ended and none failed or
	// was dropped since the previous Flush returned (or the client started), before the
	// call or during it; otherwise the error wraps ErrIncomplete (and the
	// context's error when ctx ended first). Messages keep going in the background either
	// way.
	Flush(ctx context.Context) error
	// Stats returns a snapshot of the counters.
	Stats() Stats
	// Close flushes (waiting at most Config.CloseTimeout), then stops the client's threads;
	// what is still queued ends as dropped (with a Spool, it stays there for the next
	// client, counted in Stats().Spooled). It returns nil when everything was delivered,
	// an error wrapping ErrIncomplete otherwise, and ErrClosed when already closed. After
	// Close returns, no callback of this client runs and no goroutine of it is left.
	Close() error
}

// Stats are a client's counters.
type Stats struct {
	Accepted  uint64 // messages accepted by calls, in all
	Queued    uint64 // accepted and waiting (for a batch, a worker or a retry), now
	InFlight  uint64 // being sent, now
	Delivered uint64 // outcomes: delivered
	Failed    uint64 // outcomes: failed
	Dropped   uint64 // outcomes: dropped, plus calls refused because the queue was full
	QueueFull uint64 // of Dropped, the calls refused with ErrQueueFull (never accepted)
	Retries   uint64 // requests made again after a retryable failure
	Spooled   uint64 // left in the spool by Close (no outcome yet: the next client delivers them)
	Resumed   uint64 // taken over from the spool (left by an earlier client or a dead process)
}

// New returns a client with the default configuration that sends to the ingestion
// endpoint with writeKey. If the client cannot be built (an empty write key), every method
// of the returned client returns that error; use NewWithConfig to see it at once.
func New(writeKey string) Client {
	c, err := NewWithConfig(writeKey, Config{})
	if err != nil {
		return failedClient{err}
	}
	return c
}

// NewWithConfig builds a client and starts its threads. writeKey turns on the ingestion
// destination ("" for webhooks only). A refused configuration returns an *Error with
// ErrConfig that names the setting.
func NewWithConfig(writeKey string, config Config) (Client, error) {
	c, err := newClient(writeKey, config, false)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// newClient builds a client, a recording one (NewRecording) when recording is true.
func newClient(writeKey string, config Config, recording bool) (*client, error) {
	cb := newCallbacks(config)
	var handle cgo.Handle
	if cb != nil {
		handle = cgo.NewHandle(cb)
	}
	opts, err := newOptions(writeKey, config, uintptr(handle), recording)
	if err != nil {
		if handle != 0 {
			handle.Delete()
		}
		return nil, err
	}
	var ptr *C.outbound_client
	r := C.gob_client_new(opts, &ptr) // consumes opts
	if r.rc != 0 {
		if handle != 0 {
			handle.Delete()
		}
		return nil, takeError("NewWithConfig", r.rc, r.err)
	}
	c := &client{ptr: ptr, cb: cb, handle: handle, closeTimeout: config.CloseTimeout,
		subscriptions: subscriptionNames(config.Subscriptions)}
	if c.closeTimeout <= 0 {
		c.closeTimeout = DefaultCloseTimeout
	}
	// A client dropped without Close is closed (bounded by Config.Timeout) and freed by the
	// garbage collector, as liboutbound's free does.
	runtime.SetFinalizer(c, (*client).finalize)
	return c, nil
}

type client struct {
	// mu guards ptr: calls hold it shared while in liboutbound; Close takes it exclusively
	// to free the C client once no call is running.
	mu           sync.RWMutex
	ptr          *C.outbound_client // nil once freed
	cb           *callbacks         // nil without callbacks
	handle       cgo.Handle         // 0 without callbacks
	closeTimeout time.Duration
	closing      atomic.Bool
	final        Stats      // the counters when the client was freed
	rec          *Recording // a recording client's record (NewRecording); nil otherwise

	subscriptions  []string         // the names of Config.Subscriptions
	finalUnmatched uint64           // Unmatched when the client was freed
	finalSubs      map[string]Stats // each subscription's counters when the client was freed
}

func (c *client) Enqueue(msg Message) error {
	_, err := c.enqueue(msg, false)
	return err
}

func (c *client) EnqueueID(msg Message) (string, error) {
	return c.enqueue(msg, true)
}

func (c *client) enqueue(msg Message, wantID bool) (string, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	given, packed, err := encodeMessage(buf, msg)
	if err != nil {
		return "", err
	}
	id, err := c.enqueueEncoded(buf.Bytes(), packed, given, wantID, msg)
	if packed && isCode(err, ErrInvalidJSON) {
		w, _ := toWire(msg)
		return c.enqueueAsText(buf, &w, given, wantID, msg)
	}
	return id, err
}

// enqueueWire is Enqueue for a message already in the wire shape (bindings/go/v2, through
// internal/bridge).
func (c *client) enqueueWire(w *wire, wantID bool) (string, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	packed, err := encodeWire(buf, w)
	if err != nil {
		return "", err
	}
	id, err := c.enqueueEncoded(buf.Bytes(), packed, w.MessageId, wantID, nil)
	if packed && isCode(err, ErrInvalidJSON) {
		return c.enqueueAsText(buf, w, w.MessageId, wantID, nil)
	}
	return id, err
}

// enqueueAsText queues w as JSON text in buf: for a message whose packed form the core
// refused for a text that is not valid UTF-8 (packed.go), which the JSON text replaces.
func (c *client) enqueueAsText(buf *bytes.Buffer, w *wire, given string, wantID bool, msg Message) (string, error) {
	buf.Reset()
	if err := encodeText(buf, w); err != nil {
		return "", err
	}
	return c.enqueueEncoded(buf.Bytes(), false, given, wantID, msg)
}

// isCode says whether err is an *Error with code.
func isCode(err error, code Code) bool {
	e, ok := err.(*Error)
	return ok && e.Code == code
}

// enqueueEncoded queues a message encoded by encodeWire: b in the packed form when packed
// is true, NUL-terminated JSON text otherwise; given is the MessageId the caller set ("" for
// none), msg the message for the Callback (nil: none to report).
func (c *client) enqueueEncoded(b []byte, packed bool, given string, wantID bool, msg Message) (string, error) {
	recording := msg != nil && c.cb != nil && c.cb.callback != nil
	if recording {
		// Counted before the call so Close can wait for this one's early outcome.
		c.cb.enqueuing.Add(1)
		defer c.cb.enqueuing.Add(-1)
	}
	needID := (wantID || recording) && given == ""

	c.mu.RLock()
	if c.ptr == nil {
		c.mu.RUnlock()
		return "", &Error{Op: "Enqueue", Code: ErrClosed, Message: "the client is closed"}
	}
	var r C.gob_result
	if packed {
		r = C.gob_enqueue_packed(c.ptr, (*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b)), boolInt(needID))
	} else {
		r = C.gob_enqueue(c.ptr, (*C.char)(unsafe.Pointer(&b[0])), boolInt(needID))
	}
	c.mu.RUnlock()
	if r.rc != 0 {
		return "", takeError("Enqueue", r.rc, r.err)
	}
	id := given
	if needID {
		id = idText(&r.text)
	}
	if recording {
		c.cb.record(id, withID(msg, id))
	}
	return id, nil
}

func (c *client) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return &Error{Op: "Flush", Code: ErrIncomplete, Message: "not flushed: " + err.Error(), Cause: err}
	}
	timeout := time.Duration(1<<63 - 1) // capped by liboutbound
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), 0)
	}
	if ctx.Done() == nil {
		return c.flush(timeout, nil)
	}
	done := make(chan error, 1)
	// The wait in liboutbound cannot be interrupted: it runs on its own goroutine, which
	// ends at the deadline, when everything has an outcome, or at Close, whichever is first.
	go func() { done <- c.flush(timeout, ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return &Error{Op: "Flush", Code: ErrIncomplete, Message: "not flushed: " + ctx.Err().Error(), Cause: ctx.Err()}
	}
}

func (c *client) flush(timeout time.Duration, ctx context.Context) error {
	c.mu.RLock()
	if c.ptr == nil {
		c.mu.RUnlock()
		return &Error{Op: "Flush", Code: ErrClosed, Message: "the client is closed"}
	}
	rc := C.outbound_flush(c.ptr, C.uint64_t(millis(timeout)))
	c.mu.RUnlock()
	if rc == 0 {
		return nil
	}
	e := &Error{Op: "Flush", Code: Code(rc)}
	if ctx != nil {
		cause := ctx.Err()
		if d, ok := ctx.Deadline(); ok && cause == nil && !time.Now().Before(d) {
			cause = context.DeadlineExceeded // the wait ended at the deadline, before ctx's timer
		}
		if cause != nil {
			e.Message, e.Cause = "not flushed: "+cause.Error(), cause
		}
	}
	return e
}

func (c *client) Stats() Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ptr == nil {
		return c.final
	}
	return c.stats()
}

// stats reads the counters; c.mu is held.
func (c *client) stats() Stats {
	var s C.outbound_stats
	C.outbound_client_stats(c.ptr, &s)
	return statsOf(&s)
}

func statsOf(s *C.outbound_stats) Stats {
	return Stats{
		Accepted: uint64(s.accepted), Queued: uint64(s.queued), InFlight: uint64(s.in_flight),
		Delivered: uint64(s.delivered), Failed: uint64(s.failed), Dropped: uint64(s.dropped),
		QueueFull: uint64(s.queue_full), Retries: uint64(s.retries),
		Spooled: uint64(s.spooled), Resumed: uint64(s.resumed),
	}
}

// SpoolChecker is implemented by the Client that New and NewWithConfig return (it is not
// part of Client, so that existing implementations of Client, such as test doubles, keep
// compiling): c.(outbound.SpoolChecker).SpoolOK().
type SpoolChecker interface {
	// SpoolOK reports false while the spool cannot be written (a Redis spool's server
	// unreachable, an SQLite spool's disk failing): messages accepted meanwhile are held
	// and delivered from memory only, until a commit succeeds again. True without a spool
	// and after Close. A service that promises "accepted = durable" refuses work while it
	// is false.
	SpoolOK() bool
}

func (c *client) SpoolOK() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ptr == nil {
		return true
	}
	var ok C.bool
	C.outbound_client_spool_ok(c.ptr, &ok)
	return bool(ok)
}

// SubscriptionCounters is implemented by the Client that New, NewWithConfig and NewRecording
// return (it is not part of Client, so that existing implementations of Client, such as test
// doubles, keep compiling): c.(outbound.SubscriptionCounters).Unmatched(). After Close it
// gives the counters as they were then.
type SubscriptionCounters interface {
	// Unmatched counts the messages that no subscription matched and that had no destination
	// of the client's own (no write key, no webhook on): they ended there, without an
	// outcome, which is not a failure.
	Unmatched() uint64
	// SubscriptionStats returns the counters of the subscription named name (Stats of the
	// client are its ingestion's and webhooks'): the messages it was given, delivered,
	// failed, retried, ... false when the client has no subscription of that name.
	SubscriptionStats(name string) (Stats, bool)
}

func (c *client) Unmatched() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ptr == nil {
		return c.finalUnmatched
	}
	return c.unmatched()
}

// unmatched reads the counter; c.mu is held.
func (c *client) unmatched() uint64 {
	var n C.uint64_t
	C.outbound_client_unmatched(c.ptr, &n)
	return uint64(n)
}

func (c *client) SubscriptionStats(name string) (Stats, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ptr == nil {
		s, ok := c.finalSubs[name]
		return s, ok
	}
	return c.subscriptionStats(name)
}

// subscriptionStats reads one subscription's counters; c.mu is held.
func (c *client) subscriptionStats(name string) (Stats, bool) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var s C.outbound_stats
	if C.outbound_client_subscription_stats(c.ptr, cname, &s) != 0 {
		return Stats{}, false // no such subscription (or a name with a NUL, which none has)
	}
	return statsOf(&s), true
}

func (c *client) Close() error {
	if c.closing.Swap(true) {
		return &Error{Op: "Close", Code: ErrClosed, Message: "the client is already closed"}
	}
	c.mu.RLock()
	rc := C.outbound_client_close(c.ptr, C.uint64_t(millis(c.closeTimeout)))
	c.mu.RUnlock()
	// Calls that started before the close may still report an early outcome (Callback).
	if c.cb != nil {
		for c.cb.enqueuing.Load() != 0 {
			runtime.Gosched()
		}
	}
	// Waits for calls still in liboutbound (a Flush on another goroutine returns once the
	// close has given every message its outcome), then frees.
	c.mu.Lock()
	c.final = c.stats()
	c.finalUnmatched = c.unmatched()
	c.finalSubs = make(map[string]Stats, len(c.subscriptions))
	for _, name := range c.subscriptions {
		if s, ok := c.subscriptionStats(name); ok {
			c.finalSubs[name] = s
		}
	}
	if c.rec != nil {
		c.rec.keep(c.recorded())
	}
	C.outbound_client_free(c.ptr)
	c.ptr = nil
	c.mu.Unlock()
	// No callback runs after outbound_client_close returned: the handle can go.
	if c.handle != 0 {
		c.handle.Delete()
	}
	runtime.SetFinalizer(c, nil)
	if rc != 0 {
		return &Error{Op: "Close", Code: Code(rc)}
	}
	return nil
}

// finalize frees a client that was never closed (closing it first, bounded by its timeout).
func (c *client) finalize() {
	C.outbound_client_free(c.ptr)
	if c.handle != 0 {
		c.handle.Delete()
	}
}

func init() {
	bridge.Enqueue = func(c any, w bridge.Wire, wantID bool) (string, error) {
		switch cl := c.(type) {
		case *client:
			return cl.enqueueWire(&w, wantID)
		case failedClient:
			return "", cl.err
		}
		return "", &Error{Op: "Enqueue", Code: ErrNullArgument, Message: "not a client of this package"}
	}
}

// idText copies the NUL-terminated id out of a gob_result, in Go: C.GoString would make the
// result escape to the heap, one allocation per call.
func idText(t *[C.OUTBOUND_ID_BUFFER_LEN]C.char) string {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&t[0])), len(t))
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// failedClient is what New returns when the client could not be built.
type failedClient struct{ err error }

func (f failedClient) Enqueue(Message) error             { return f.err }
func (f failedClient) EnqueueID(Message) (string, error) { return "", f.err }
func (f failedClient) Flush(context.Context) error       { return f.err }
func (f failedClient) Stats() Stats                      { return Stats{} }
func (f failedClient) Close() error                      { return f.err }
func (f failedClient) SpoolOK() bool                     { return false }
func (f failedClient) Unmatched() uint64                 { return 0 }
func (f failedClient) SubscriptionStats(string) (Stats, bool) {
	return Stats{}, false
}
