package outbound_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	outbound "outbound.invalid/bindings/go"
)

// The recording client (NewRecording): the real client's checks, bytes, signatures and
// outcomes, with nothing sent; compared with what NewWithConfig's client sends to a real
// receiver on 127.0.0.1.

func newRecording(t *testing.T, writeKey string, cfg outbound.Config) (outbound.Client, *outbound.Recording) {
	t.Helper()
	c, rec, err := outbound.NewRecording(writeKey, cfg)
	if err != nil {
		t.Fatalf("NewRecording: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, rec
}

// bothDestinations: ingestion and a signed webhook with a header, both at rx.
func bothDestinations(rx *receiver, onOutcome func(outbound.Outcome)) outbound.Config {
	return outbound.Config{
		Endpoint:       rx.URL,
		Webhooks:       []outbound.Webhook{{URL: rx.URL + "/hook", Headers: map[string]string{"X-Team": "growth"}}},
		SharedSecret:   "s3cret",
		BatchSize:      1,
		IgnoreProxyEnv: true,
		OnOutcome:      onOutcome,
	}
}

func orderCompleted() outbound.Track {
	return outbound.Track{
		UserId: "u1", Event: "Order Completed", MessageId: "m-1",
		Timestamp: time.Date(2026, 11, 21, 9, 30, 0, 123_000_000, time.UTC),
		Properties: outbound.NewProperties().Set("total", 19.99).
			Set("items", []map[string]any{{"sku": "a"}}).Set("note", "caf\u00e9 \u2603"),
	}
}

// recordedTo returns the requests of rec to dest.
func recordedTo(reqs []outbound.RecordedRequest, dest outbound.Destination) []outbound.RecordedRequest {
	var out []outbound.RecordedRequest
	for _, r := range reqs {
		if r.Destination == dest {
			out = append(out, r)
		}
	}
	return out
}

func receivedAt(reqs []request, path string) []request {
	var out []request
	for _, r := range reqs {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// withoutSentAt is a batch body parsed, without its sentAt (the time of sending).
func withoutSentAt(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("batch body is not JSON: %v\n%s", err, body)
	}
	if _, ok := v["sentAt"]; !ok {
		t.Errorf("no sentAt in %s", body)
	}
	delete(v, "sentAt")
	return v
}

func TestRecordingClientSendsNothingAndRecordsWhatTheRealClientSends(t *testing.T) {
	rx := newReceiver(t)
	sender := newClient(t, "wk", bothDestinations(rx, nil))
	mustEnqueue(t, sender, orderCompleted())
	flush(t, sender)
	sent := rx.waitRequests(t, 2)
	realHook, realBatch := receivedAt(sent, "/hook"), receivedAt(sent, "/v1/batch")
	if len(realHook) != 1 || len(realBatch) != 1 {
		t.Fatalf("the real client sent %d webhook requests and %d batches", len(realHook), len(realBatch))
	}

	var mu sync.Mutex
	var seen []outbound.Outcome
	c, rec := newRecording(t, "wk", bothDestinations(rx, func(o outbound.Outcome) {
		mu.Lock()
		seen = append(seen, o)
		mu.Unlock()
	}))
	if id := mustEnqueue(t, c, orderCompleted()); id != "m-1" {
		t.Errorf("id %q", id)
	}
	flush(t, c)
	time.Sleep(100 * time.Millisecond)
	if n := len(rx.all()); n != 2 {
		t.Fatalf("the recording client sent %d requests", n-2)
	}

	reqs := rec.Requests()
	hooks, batches := recordedTo(reqs, outbound.DestinationWebhook), recordedTo(reqs, outbound.DestinationIngestion)
	if len(reqs) != 2 || len(hooks) != 1 || len(batches) != 1 {
		t.Fatalf("recorded %+v", reqs)
	}
	hook := hooks[0]
	if hook.URL != rx.URL+"/hook" {
		t.Errorf("webhook URL %q", hook.URL)
	}
	if string(hook.Body) != string(realHook[0].Body) {
		t.Errorf("the webhook body differs:\n recorded %s\n sent     %s", hook.Body, realHook[0].Body)
	}
	for _, name := range []string{"X-Signature", "content-type", "User-Agent", "x-team"} {
		if got, want := hook.Headers.Get(name), realHook[0].Header.Get(name); got == "" || got != want {
			t.Errorf("%s: recorded %q, sent %q", name, got, want)
		}
	}
	if !outbound.Verify("s3cret", hook.Body, hook.Headers.Get("x-signature")) {
		t.Error("the recorded X-Signature does not verify")
	}

	batch := batches[0]
	if batch.URL != rx.URL+"/v1/batch" {
		t.Errorf("batch URL %q", batch.URL)
	}
	if got, want := batch.Headers.Get("Authorization"), realBatch[0].Header.Get("Authorization"); got == "" || got != want {
		t.Errorf("Authorization: recorded %q, sent %q", got, want)
	}
	if got, want := withoutSentAt(t, batch.Body), withoutSentAt(t, realBatch[0].Body); !reflect.DeepEqual(got, want) {
		t.Errorf("the batch differs beyond sentAt:\n recorded %s\n sent     %s", batch.Body, realBatch[0].Body)
	}

	want := []outbound.Outcome{{MessageId: "m-1", Kind: outbound.Delivered}}
	if got := rec.Outcomes(); !reflect.DeepEqual(got, want) {
		t.Errorf("outcomes %+v, want %+v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("OnOutcome saw %+v, want %+v", seen, want)
	}
}

func TestRecordingRespondWith410FailsAsGoneAndClearForgets(t *testing.T) {
	rx := newReceiver(t)
	c, rec := newRecording(t, "", outbound.Config{Webhooks: []outbound.Webhook{{URL: rx.URL + "/hook"}}})
	rec.RespondWith(410)
	id := mustEnqueue(t, c, outbound.Identify{UserId: "u1"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Flush(ctx); !errors.Is(err, outbound.ErrIncomplete) {
		t.Fatalf("Flush: %v, want ErrIncomplete", err)
	}
	if n := len(rec.Requests()); n != 1 {
		t.Errorf("%d requests: 410 is not retried", n)
	}
	o := rec.Outcomes()
	if len(o) != 1 || o[0].MessageId != id || o[0].Kind != outbound.Failed || !strings.Contains(o[0].Detail, "gone") {
		t.Fatalf("outcomes %+v", o)
	}

	rec.Clear()
	if r, o := rec.Requests(), rec.Outcomes(); len(r) != 0 || len(o) != 0 {
		t.Fatalf("after Clear: %+v, %+v", r, o)
	}
	rec.RespondWith(200)
	mustEnqueue(t, c, outbound.Identify{UserId: "u2"})
	flush(t, c)
	if r, o := rec.Requests(), rec.Outcomes(); len(r) != 1 || len(o) != 1 || o[0].Kind != outbound.Delivered {
		t.Errorf("after RespondWith(200): %d requests, outcomes %+v", len(r), o)
	}
	if n := len(rx.all()); n != 0 {
		t.Errorf("the receiver got %d requests", n)
	}
}

func TestRecordingKeepsStandardWebhooksHeadersAndGzipAsSent(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	c, rec := newRecording(t, "wk", outbound.Config{
		Webhooks:        []outbound.Webhook{{URL: "https://hooks.example.com/in"}},
		SharedSecret:    secret,
		SignatureScheme: "standard-webhooks",
		Gzip:            true,
		BatchSize:       1,
	})
	id := mustEnqueue(t, c, outbound.Identify{UserId: "u1", Traits: outbound.NewTraits().Set("plan", "pro")})
	flush(t, c)
	reqs := rec.Requests()
	hooks, batches := recordedTo(reqs, outbound.DestinationWebhook), recordedTo(reqs, outbound.DestinationIngestion)
	if len(hooks) != 1 || len(batches) != 1 {
		t.Fatalf("recorded %+v", reqs)
	}
	h := hooks[0].Headers
	if h.Get("webhook-id") != id || h.Get("X-Signature") != "" {
		t.Errorf("headers %v, id %s", h, id)
	}
	if err := outbound.VerifyStandard(secret, hooks[0].Body, h.Get("webhook-id"), h.Get("webhook-timestamp"),
		h.Get("webhook-signature"), outbound.DefaultStandardTolerance); err != nil {
		t.Errorf("VerifyStandard: %v", err)
	}
	if b := batches[0]; len(b.Body) < 2 || b.Body[0] != 0x1f || b.Body[1] != 0x8b || b.Headers.Get("Content-Encoding") != "gzip" {
		t.Errorf("the batch is not recorded gzipped: %v % x", b.Headers, b.Body[:min(len(b.Body), 4)])
	}
}

func TestRecordingKeepsWhatWasRecordedAfterClose(t *testing.T) {
	c, rec, err := outbound.NewRecording("", outbound.Config{Webhooks: []outbound.Webhook{{URL: "https://hooks.example.com/in"}}})
	if err != nil {
		t.Fatal(err)
	}
	id := mustEnqueue(t, c, outbound.Track{UserId: "u1", Event: "Closed"})
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if r, o := rec.Requests(), rec.Outcomes(); len(r) != 1 || len(o) != 1 || o[0].MessageId != id {
		t.Fatalf("after Close: %+v, %+v", r, o)
	}
	rec.RespondWith(503) // nothing more is sent: no effect, no panic
	rec.Clear()
	if r, o := rec.Requests(), rec.Outcomes(); len(r) != 0 || len(o) != 0 {
		t.Errorf("after Close and Clear: %+v, %+v", r, o)
	}
}

func TestRecordingClientChecksCallsAndConfigAsTheRealOne(t *testing.T) {
	if c, rec, err := outbound.NewRecording("", outbound.Config{}); c != nil || rec != nil || !errors.Is(err, outbound.ErrConfig) {
		t.Fatalf("NewRecording with no destination = %v, %v, %v; want ErrConfig", c, rec, err)
	}
	c, rec := newRecording(t, "", outbound.Config{Webhooks: []outbound.Webhook{{URL: "https://hooks.example.com/in"}}})
	if err := c.Enqueue(outbound.Track{UserId: "u1"}); !errors.Is(err, outbound.ErrMissingField) ||
		!strings.Contains(err.Error(), "track requires event") {
		t.Errorf("Enqueue without an event: %v", err)
	}
	if err := c.Enqueue(outbound.Identify{UserId: "u1", Traits: outbound.NewTraits().Set("c", make(chan int))}); !errors.Is(err, outbound.ErrWrongType) {
		t.Errorf("Enqueue with a channel: %v", err)
	}
	flush(t, c)
	if r, o := rec.Requests(), rec.Outcomes(); len(r) != 0 || len(o) != 0 {
		t.Errorf("refused calls were recorded: %+v, %+v", r, o)
	}
}

// --- docs/go.md "Testing your application" begins (scripts/test-go.sh checks they match)

// signup is your code under test.
func signup(client outbound.Client, userID string) error {
	return client.Enqueue(outbound.Track{UserId: userID, Event: "Signed Up",
		Properties: outbound.NewProperties().Set("plan", "pro")})
}

func TestSignupNotifiesTheCustomer(t *testing.T) {
	client, rec, err := outbound.NewRecording("", outbound.Config{
		Webhooks:     []outbound.Webhook{{URL: "https://hooks.example.com/in"}},
		SharedSecret: "s3cret",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	if err := signup(client, "u1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	reqs := rec.Requests() // what would have been sent: nothing was
	if len(reqs) != 1 || reqs[0].Destination != outbound.DestinationWebhook {
		t.Fatalf("requests: %+v", reqs)
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil || body["event"] != "Signed Up" {
		t.Errorf("body %s (%v)", reqs[0].Body, err)
	}
	if !outbound.Verify("s3cret", reqs[0].Body, reqs[0].Headers.Get("X-Signature")) {
		t.Error("X-Signature does not verify")
	}
	if o := rec.Outcomes(); len(o) != 1 || o[0].Kind != outbound.Delivered {
		t.Errorf("outcomes: %+v", o)
	}
}

// --- docs/go.md "Testing your application" ends
