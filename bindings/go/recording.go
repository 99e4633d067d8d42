package outbound

/*
#include "outbound.h"
*/
import "C"

import (
	"net/http"
	"sync"
	"unsafe"
)

// Destination is where a recorded request would have gone.
type Destination string

// The two destinations.
const (
	// DestinationIngestion: a batch to Endpoint + "/v1/batch".
	DestinationIngestion Destination = "ingestion"
	// DestinationWebhook: one message to a webhook URL.
	DestinationWebhook Destination = "webhook"
)

// RecordedRequest is a request a recording client would have sent.
type RecordedRequest struct {
	// Destination is DestinationIngestion (a batch) or DestinationWebhook (one message).
	Destination Destination
	// URL is where it would have been POSTed.
	URL string
	// Headers are the headers outbound sets (Content-Type, Authorization, X-Signature or the
	// Webhook-* ones, the webhook's own headers; not the HTTP client's Host and
	// Content-Length), keyed as net/http keys them: read them with Headers.Get, in any case.
	Headers http.Header
	// Body is the body exactly as it would have been sent (gzip-compressed with Config.Gzip).
	Body []byte
}

// Recording is what a recording client (NewRecording) would have sent, and how each message
// ended. Its methods are safe for concurrent use. After the client is closed it keeps what
// was recorded until then.
type Recording struct {
	c *client

	// What was recorded when the client was closed (its C record is freed then); mu guards
	// it.
	mu       sync.Mutex
	requests []RecordedRequest
	outcomes []Outcome
}

// NewRecording builds a recording client for your application's tests: the client
// NewWithConfig would build (the same checks, so a bad call gets the same error; the same
// bodies, batches, signatures and outcomes, made by the same code) with the network replaced
// by a recorder. Nothing is sent, no DNS lookup or connection is made. The Recording holds
// every request that would have been sent, with its exact body and the headers outbound sets,
// and every outcome; OnOutcome and Callback still run. A refused configuration is an *Error
// with ErrConfig, as for NewWithConfig.
func NewRecording(writeKey string, config Config) (Client, *Recording, error) {
	c, err := newClient(writeKey, config, true)
	if err != nil {
		return nil, nil, err
	}
	c.rec = &Recording{c: c}
	return c, c.rec, nil
}

// Requests returns every request so far, in the order they would have been sent. Flush first
// to see what was enqueued.
func (r *Recording) Requests() []RecordedRequest {
	requests, _ := r.read()
	return requests
}

// Outcomes returns every outcome so far, in the order they were reported.
func (r *Recording) Outcomes() []Outcome {
	_, outcomes := r.read()
	return outcomes
}

// RespondWith answers every later request with status instead of 200, to test how your code
// copes with failures; the real rules apply: 410 fails a webhook message at once as gone, 400
// fails it, 503 is retried (with the real backoff) until MaxRetryDuration.
func (r *Recording) RespondWith(status uint16) {
	r.c.mu.RLock()
	defer r.c.mu.RUnlock()
	if r.c.ptr == nil {
		return // closed: nothing more is sent
	}
	mustSucceed(C.outbound_recording_respond_with(r.c.ptr, C.uint16_t(status)))
}

// Clear forgets the requests and outcomes recorded so far.
func (r *Recording) Clear() {
	r.c.mu.RLock()
	defer r.c.mu.RUnlock()
	if r.c.ptr == nil {
		r.keep(nil, nil)
		return
	}
	mustSucceed(C.outbound_recording_clear(r.c.ptr))
}

func (r *Recording) read() ([]RecordedRequest, []Outcome) {
	r.c.mu.RLock()
	defer r.c.mu.RUnlock()
	if r.c.ptr != nil {
		return r.c.recorded()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RecordedRequest{}, r.requests...), append([]Outcome{}, r.outcomes...)
}

// keep holds what was recorded, for after the client is freed.
func (r *Recording) keep(requests []RecordedRequest, outcomes []Outcome) {
	r.mu.Lock()
	r.requests, r.outcomes = requests, outcomes
	r.mu.Unlock()
}

// recorded copies a recording client's record out of liboutbound; c.mu is held and c.ptr is
// live.
func (c *client) recorded() ([]RecordedRequest, []Outcome) {
	var snap *C.outbound_recording
	mustSucceed(C.outbound_recording_snapshot(c.ptr, &snap))
	defer C.outbound_recording_free(snap)

	requests := make([]RecordedRequest, int(C.outbound_recording_requests_len(snap)))
	for i := range requests {
		req := C.outbound_recording_request(snap, C.size_t(i))
		headers := make(http.Header, int(req.headers_len))
		for _, h := range unsafe.Slice(req.headers, int(req.headers_len)) {
			headers.Add(C.GoString(h.name), C.GoString(h.value))
		}
		dest := DestinationWebhook
		if req.destination == C.OUTBOUND_DESTINATION_INGESTION {
			dest = DestinationIngestion
		}
		requests[i] = RecordedRequest{
			Destination: dest,
			URL:         C.GoString(req.url),
			Headers:     headers,
			Body:        C.GoBytes(unsafe.Pointer(req.body), C.int(req.body_len)),
		}
	}
	outcomes := make([]Outcome, int(C.outbound_recording_outcomes_len(snap)))
	for i := range outcomes {
		o := C.outbound_recording_outcome(snap, C.size_t(i))
		outcomes[i] = Outcome{
			MessageId:    C.GoString(o.message_id),
			Kind:         OutcomeKind(C.GoString(o.outcome)),
			Detail:       C.GoString(o.detail),
			Subscription: C.GoString(o.subscription), // NULL: ""
		}
	}
	return requests, outcomes
}

// mustSucceed panics on a failure that only a bug can cause: a *Recording belongs to a live
// recording client here.
func mustSucceed(rc C.outbound_result) {
	if rc != 0 {
		panic(&Error{Op: "Recording", Code: Code(rc)})
	}
}
