package outbound_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	outbound "outbound.invalid/bindings/go"
)

// A webhook receiver on 127.0.0.1 that answers its status with a body of its own, and counts
// the bodies that carry each messageId.
type hookReceiver struct {
	url    string
	mu     sync.Mutex
	status int
	bodies [][]byte
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	r := &hookReceiver{status: http.StatusOK}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body bytes.Buffer
		_, _ = body.ReadFrom(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, body.Bytes())
		status := r.status
		r.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte("no thanks"))
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/hook"
	return r
}

func (r *hookReceiver) setStatus(status int) {
	r.mu.Lock()
	r.status = status
	r.mu.Unlock()
}

// sent counts the requests whose body carries messageId id.
func (r *hookReceiver) sent(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, b := range r.bodies {
		if bytes.Contains(b, []byte(`"messageId":"`+id+`"`)) {
			n++
		}
	}
	return n
}

// recordsClient is a client with dead letters on, in a spool of its own, to r.
func recordsClient(t *testing.T, r *hookReceiver) (outbound.Client, outbound.DeliveryRecords) {
	t.Helper()
	c := newClient(t, "", outbound.Config{
		Webhooks: []outbound.Webhook{{URL: r.url}}, Spool: filepath.Join(t.TempDir(), "spool"),
		SpoolCommitInterval: 5 * time.Millisecond, DeadLetters: true, IgnoreProxyEnv: true,
		Timeout: 20 * time.Second})
	return c, c.(outbound.DeliveryRecords)
}

// waitDeadLetters waits until the client keeps n dead letters.
func waitDeadLetters(t *testing.T, records outbound.DeliveryRecords, n uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := records.DeadLetterStats()
		if err != nil {
			t.Fatal(err)
		}
		if s.Count == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dead letters, want %d", s.Count, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// makeDeadLetter sends a track with messageId id while r answers 400, so it fails for good,
// and waits for its dead letter (then the client keeps `then`).
func makeDeadLetter(t *testing.T, c outbound.Client, r *hookReceiver, id string, then uint64) {
	t.Helper()
	r.setStatus(http.StatusBadRequest)
	mustEnqueue(t, c, outbound.Track{MessageId: id, UserId: "u", Event: "Refused"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Flush(ctx); !errors.Is(err, outbound.ErrIncomplete) {
		t.Fatalf("Flush = %v, want ErrIncomplete (the message failed)", err)
	}
	waitDeadLetters(t, c.(outbound.DeliveryRecords), then)
}

// waitReplay waits until replay id is done and returns its progress.
func waitReplay(t *testing.T, records outbound.DeliveryRecords, id uint64) outbound.ReplayProgress {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, err := records.ReplayProgress(id)
		if err != nil || p == nil {
			t.Fatalf("ReplayProgress(%d) = %v, %v", id, p, err)
		}
		if p.Done {
			return *p
		}
		if time.Now().After(deadline) {
			t.Fatalf("replay %d not done: %+v", id, *p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestARefusedMessageIsADeadLetterWithItsAttemptAndBody(t *testing.T) {
	r := newHookReceiver(t)
	c, records := recordsClient(t, r)
	before := time.Now().Add(-time.Second)
	makeDeadLetter(t, c, r, "dl-refused", 1)

	page, err := records.DeadLetters(outbound.DeadLetterQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Letters) != 1 || page.Next != "" {
		t.Fatalf("page %+v, want one dead letter and no next", page)
	}
	d := page.Letters[0]
	if d.MessageId != "dl-refused" || d.Reason != "status 400" || !strings.Contains(d.Detail, "400") {
		t.Errorf("dead letter %+v", d)
	}
	if d.FailedAt.Before(before) || d.FailedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("FailedAt %v, the test started at %v", d.FailedAt, before)
	}
	if d.FirstAttempt.IsZero() || d.FirstAttempt.After(d.FailedAt) {
		t.Errorf("FirstAttempt %v, FailedAt %v", d.FirstAttempt, d.FailedAt)
	}
	if d.Rounds != 1 || d.Replaying || d.Size <= 0 || d.Body != nil {
		t.Errorf("rounds %d replaying %v size %d body %q (a page carries none)", d.Rounds, d.Replaying, d.Size, d.Body)
	}
	if len(d.LastAttempts) != 1 {
		t.Fatalf("last attempts %+v", d.LastAttempts)
	}
	a := d.LastAttempts[0]
	if a.Webhook != 0 || a.Status != 400 || a.ErrorClass != "" || a.Result != outbound.AttemptPermanent ||
		a.MessageId != "dl-refused" || string(a.Answer) != "no thanks" {
		t.Errorf("last attempt %+v (answer %q)", a, a.Answer)
	}

	one, err := records.DeadLetter("dl-refused")
	if err != nil || one == nil {
		t.Fatalf("DeadLetter = %v, %v", one, err)
	}
	if int64(len(one.Body)) != one.Size || !bytes.Contains(one.Body, []byte(`"event":"Refused"`)) {
		t.Errorf("body %q (size %d)", one.Body, one.Size)
	}
	if none, err := records.DeadLetter("no-such-id"); none != nil || err != nil {
		t.Errorf("DeadLetter(no-such-id) = %v, %v; want nil, nil", none, err)
	}
	s, err := records.DeadLetterStats()
	if err != nil || s.Count != 1 || s.Bytes == 0 || s.Evicted != 0 || s.Expired != 0 {
		t.Errorf("DeadLetterStats = %+v, %v", s, err)
	}
}

func TestWebhookAttemptsAndHealthShowAFailingURL(t *testing.T) {
	r := newHookReceiver(t)
	c, records := recordsClient(t, r)
	makeDeadLetter(t, c, r, "att-1", 1)
	attempts, err := records.WebhookAttempts(0)
	if err != nil || len(attempts) != 1 {
		t.Fatalf("WebhookAttempts(0) = %+v, %v", attempts, err)
	}
	a := attempts[0]
	if a.MessageId != "att-1" || a.Status != 400 || a.Detail != "status 400" || a.Duration <= 0 ||
		time.Since(a.At) > time.Minute {
		t.Errorf("attempt %+v", a)
	}
	health, err := records.WebhookHealth()
	if err != nil || len(health) != 1 {
		t.Fatalf("WebhookHealth = %+v, %v", health, err)
	}
	h := health[0]
	if h.State != outbound.HealthFailing || !strings.HasPrefix(h.URL, "http://127.0.0.1:") {
		t.Errorf("health %+v", h)
	}
	if h.Attempts5m != 1 || h.Delivered5m != 0 || h.SuccessRate5m != 0 || h.P50Latency5m <= 0 ||
		h.P99Latency5m < h.P50Latency5m {
		t.Errorf("last five minutes: %+v", h)
	}
	if h.ConsecutiveFailures != 1 || h.LastError == "" || h.LastErrorAt.IsZero() || !h.LastSuccess.IsZero() {
		t.Errorf("failures: %+v", h)
	}
	if want := (outbound.MessageCounts{Failed: 1}); h.Messages != want {
		t.Errorf("messages %+v, want %+v", h.Messages, want)
	}
}

// A URL's log keeps AttemptLogSize attempts, each for AttemptRetention; out of range, either
// is refused naming it.
func TestAURLsAttemptLogKeepsAttemptLogSizeForAttemptRetention(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  outbound.Config
		text string
	}{
		{"negative size", outbound.Config{AttemptLogSize: -1}, "AttemptLogSize"},
		{"size past the most", outbound.Config{AttemptLogSize: 10_001}, "attempt_log_size"},
		{"negative retention", outbound.Config{AttemptRetention: -time.Second}, "AttemptRetention"},
		{"retention past 30 days", outbound.Config{AttemptRetention: 30*24*time.Hour + time.Second}, "attempt_retention"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Webhooks = []outbound.Webhook{{URL: "http://127.0.0.1:9/hook"}}
			c, err := outbound.NewWithConfig("", tc.cfg)
			if c != nil || !errors.Is(err, outbound.ErrConfig) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("NewWithConfig = %v, %v; want ErrConfig naming %q", c, err, tc.text)
			}
		})
	}
	r := newHookReceiver(t)
	kept := func(cfg outbound.Config, n int) []outbound.WebhookAttempt {
		t.Helper()
		cfg.Webhooks, cfg.Size, cfg.IgnoreProxyEnv = []outbound.Webhook{{URL: r.url}}, 1, true
		c := newClient(t, "", cfg)
		for i := 0; i < n; i++ {
			mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "Logged"})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := c.Flush(ctx); err != nil {
			t.Fatalf("Flush = %v", err)
		}
		attempts, err := c.(outbound.DeliveryRecords).WebhookAttempts(0)
		if err != nil {
			t.Fatalf("WebhookAttempts(0) = %v", err)
		}
		return attempts
	}
	if got := kept(outbound.Config{AttemptLogSize: 5}, 12); len(got) != 5 {
		t.Errorf("AttemptLogSize 5 kept %d attempts of 12", len(got))
	}
	// The longest retention is taken; past a short one an attempt is no longer listed.
	if got := kept(outbound.Config{AttemptLogSize: 10_000, AttemptRetention: 30 * 24 * time.Hour}, 12); len(got) != 12 {
		t.Errorf("AttemptLogSize 10000 kept %d attempts of 12", len(got))
	}
	brief := newClient(t, "", outbound.Config{Webhooks: []outbound.Webhook{{URL: r.url}}, Size: 1,
		IgnoreProxyEnv: true, AttemptRetention: 500 * time.Millisecond})
	mustEnqueue(t, brief, outbound.Track{UserId: "u", Event: "Brief"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := brief.Flush(ctx); err != nil {
		t.Fatalf("Flush = %v", err)
	}
	time.Sleep(600 * time.Millisecond)
	if got, err := brief.(outbound.DeliveryRecords).WebhookAttempts(0); err != nil || len(got) != 0 {
		t.Errorf("past AttemptRetention: %d attempts, %v", len(got), err)
	}
}

// Two URLs, one answering 200 and one 400: each message is delivered (one URL is enough), the
// first URL counts every one delivered, the second none, each failed or abandoned.
func TestEachURLCountsItsMessagesBesideOneThatTakesThem(t *testing.T) {
	const n = 10
	good, refusing := newHookReceiver(t), newHookReceiver(t)
	refusing.setStatus(http.StatusBadRequest)
	c := newClient(t, "", outbound.Config{
		Webhooks:       []outbound.Webhook{{URL: good.url}, {URL: refusing.url}},
		IgnoreProxyEnv: true, Timeout: 20 * time.Second})
	records := c.(outbound.DeliveryRecords)
	for i := 0; i < n; i++ {
		mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "Counted"})
	}
	flush(t, c)
	if s := c.Stats(); s.Delivered != n || s.Failed != 0 {
		t.Errorf("stats %+v, want every message delivered", s)
	}
	// A refusal may come after the other URL took the message: wait for every answer.
	var health []outbound.WebhookHealth
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		health, err = records.WebhookHealth()
		if err != nil || len(health) != 2 {
			t.Fatalf("WebhookHealth = %+v, %v", health, err)
		}
		if m := health[1].Messages; m.Failed+m.Abandoned == n || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if want := (outbound.MessageCounts{Delivered: n}); health[0].Messages != want ||
		health[0].State != outbound.HealthHealthy {
		t.Errorf("the 200 URL: %s, messages %+v, want healthy, %+v", health[0].State, health[0].Messages, want)
	}
	r := health[1].Messages
	if r.Delivered != 0 || r.Retrying != 0 || r.Failed+r.Abandoned != n || health[1].State != outbound.HealthFailing {
		t.Errorf("the 400 URL: %s, messages %+v, want failing, %d failed or abandoned", health[1].State, r, n)
	}
}

func TestAReplayedDeadLetterIsDeliveredOnceAndLeaves(t *testing.T) {
	r := newHookReceiver(t)
	c, records := recordsClient(t, r)
	makeDeadLetter(t, c, r, "dl-replayed", 1)
	r.setStatus(http.StatusOK)
	sentBefore := r.sent("dl-replayed")
	p, err := records.ReplayDeadLetter("dl-replayed", outbound.AllWebhooks)
	if err != nil || p == nil || p.Total != 1 || p.ID == 0 {
		t.Fatalf("ReplayDeadLetter = %+v, %v", p, err)
	}
	done := waitReplay(t, records, p.ID)
	if done.Delivered != 1 || done.Failed != 0 || done.Skipped != 0 {
		t.Errorf("replay %+v", done)
	}
	waitDeadLetters(t, records, 0)
	if n := r.sent("dl-replayed") - sentBefore; n != 1 {
		t.Errorf("the replay sent it %d times, want once under the same messageId", n)
	}
	if d, err := records.DeadLetter("dl-replayed"); d != nil || err != nil {
		t.Errorf("after the replay: %+v, %v", d, err)
	}
	if again, err := records.ReplayDeadLetter("dl-replayed", 0); again != nil || err != nil {
		t.Errorf("a replay of a dead letter that is gone = %+v, %v; want nil, nil", again, err)
	}
	if s := c.Stats(); s.Resumed != 1 || s.Delivered != 1 {
		t.Errorf("stats %+v, want the replay resumed and delivered", s)
	}
}

func TestADeletedDeadLetterIsGone(t *testing.T) {
	r := newHookReceiver(t)
	c, records := recordsClient(t, r)
	makeDeadLetter(t, c, r, "dl-deleted", 1)
	if found, err := records.DeleteDeadLetter("dl-deleted"); !found || err != nil {
		t.Fatalf("DeleteDeadLetter = %v, %v", found, err)
	}
	if s, _ := records.DeadLetterStats(); s.Count != 0 {
		t.Errorf("%d dead letters after the delete", s.Count)
	}
	if page, err := records.DeadLetters(outbound.DeadLetterQuery{Limit: 100}); err != nil || len(page.Letters) != 0 {
		t.Errorf("listed after the delete: %+v, %v", page, err)
	}
	if found, err := records.DeleteDeadLetter("dl-deleted"); found || err != nil {
		t.Errorf("a second delete = %v, %v; want false, nil", found, err)
	}
}

func TestDeadLetterPagesAreNewestFirstWithACursor(t *testing.T) {
	r := newHookReceiver(t)
	c, records := recordsClient(t, r)
	makeDeadLetter(t, c, r, "dl-older", 1)
	makeDeadLetter(t, c, r, "dl-newer", 2)
	first, err := records.DeadLetters(outbound.DeadLetterQuery{Limit: 1})
	if err != nil || len(first.Letters) != 1 || first.Letters[0].MessageId != "dl-newer" || first.Next == "" {
		t.Fatalf("first page %+v, %v", first, err)
	}
	second, err := records.DeadLetters(outbound.DeadLetterQuery{Limit: 1, Cursor: first.Next})
	if err != nil || len(second.Letters) != 1 || second.Letters[0].MessageId != "dl-older" {
		t.Fatalf("second page %+v, %v", second, err)
	}
	since, err := records.DeadLetters(outbound.DeadLetterQuery{Limit: 10, Since: first.Letters[0].FailedAt})
	if err != nil || len(since.Letters) != 1 || since.Letters[0].MessageId != "dl-newer" {
		t.Errorf("since the newer one failed: %+v, %v", since, err)
	}
	future, err := records.DeadLetters(outbound.DeadLetterQuery{Limit: 10, Since: time.Now().Add(time.Hour)})
	if err != nil || len(future.Letters) != 0 {
		t.Errorf("none failed in the future: %+v, %v", future, err)
	}
}

func TestDeadLettersAreFoundByATextOfTheirEvent(t *testing.T) {
	r := newHookReceiver(t)
	c, records := recordsClient(t, r)
	r.setStatus(http.StatusBadRequest)
	for _, u := range []string{"u3", "u30"} {
		mustEnqueue(t, c, outbound.Track{MessageId: "dl-" + u, UserId: u, Event: "Signed Up",
			Properties: outbound.Properties{"orderId": "ord-" + u}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Flush(ctx); !errors.Is(err, outbound.ErrIncomplete) {
		t.Fatalf("Flush = %v, want ErrIncomplete (the messages failed)", err)
	}
	waitDeadLetters(t, records, 2)
	found := func(text string, limit int) []string {
		t.Helper()
		var ids []string
		q := outbound.DeadLetterQuery{Limit: limit, Contains: text}
		for {
			page, err := records.DeadLetters(q)
			if err != nil || len(page.Letters) > limit {
				t.Fatalf("DeadLetters(%q) = %+v, %v", text, page, err)
			}
			for _, l := range page.Letters {
				ids = append(ids, l.MessageId)
			}
			if page.Next == "" {
				sort.Strings(ids)
				return ids
			}
			q.Cursor = page.Next
		}
	}
	if got := found(`"userId":"u3"`, 10); !reflect.DeepEqual(got, []string{"dl-u3"}) {
		t.Errorf(`"userId":"u3" found %v, want u3's alone`, got)
	}
	if got := found("u3", 1); !reflect.DeepEqual(got, []string{"dl-u3", "dl-u30"}) {
		t.Errorf("u3 a page at a time found %v, want both", got)
	}
	if got := found(`"ORD-U3"`, 10); len(got) != 0 {
		t.Errorf("the case matters: found %v", got)
	}
	_, err := records.DeadLetters(outbound.DeadLetterQuery{Limit: 10, Contains: strings.Repeat("x", 257)})
	var e *outbound.Error
	if !errors.Is(err, outbound.ErrInvalidField) || !errors.As(err, &e) || !strings.Contains(e.Message, "contains") {
		t.Errorf("257 bytes: %v; want ErrInvalidField naming contains", err)
	}
}

func TestARangeReplayDeliversWhatFailedInIt(t *testing.T) {
	r := newHookReceiver(t)
	c, records := recordsClient(t, r)
	makeDeadLetter(t, c, r, "dl-range-1", 1)
	makeDeadLetter(t, c, r, "dl-range-2", 2)
	r.setStatus(http.StatusOK)
	empty, err := records.ReplayDeadLetters(time.Now().Add(time.Hour), time.Time{}, outbound.AllWebhooks)
	if err != nil || empty.ID != 0 || empty.Total != 0 || !empty.Done {
		t.Errorf("an empty range: %+v, %v", empty, err)
	}
	p, err := records.ReplayDeadLetters(time.Time{}, time.Now().Add(time.Second), 0)
	if err != nil || p.Total != 2 || p.ID == 0 || time.Since(p.Started) > time.Minute {
		t.Fatalf("ReplayDeadLetters = %+v, %v", p, err)
	}
	if done := waitReplay(t, records, p.ID); done.Delivered != 2 || done.Sent != 2 {
		t.Errorf("replay %+v", done)
	}
	waitDeadLetters(t, records, 0)
	if unknown, err := records.ReplayProgress(987654); unknown != nil || err != nil {
		t.Errorf("an unknown replay = %+v, %v; want nil, nil", unknown, err)
	}
}

func TestDeliveryRecordsRefuseBadArgumentsNamingTheField(t *testing.T) {
	r := newHookReceiver(t)
	c, records := recordsClient(t, r)
	refused := func(what string, err error, code outbound.Code, field string) {
		t.Helper()
		var e *outbound.Error
		if !errors.Is(err, code) || !errors.As(err, &e) || !strings.Contains(e.Message, field) {
			t.Errorf("%s: %v; want %s naming %q", what, err, code.String(), field)
		}
	}
	_, err := records.DeadLetters(outbound.DeadLetterQuery{Limit: 0})
	refused("limit 0", err, outbound.ErrInvalidField, "limit")
	_, err = records.DeadLetters(outbound.DeadLetterQuery{Limit: 1001})
	refused("limit 1001", err, outbound.ErrInvalidField, "limit")
	_, err = records.DeadLetters(outbound.DeadLetterQuery{Limit: 10, Cursor: "not-a-cursor"})
	refused("a cursor no page gave", err, outbound.ErrInvalidField, "cursor")
	_, err = records.WebhookAttempts(1)
	refused("webhook 1 of 1", err, outbound.ErrInvalidField, "webhook")
	_, err = records.WebhookAttempts(-1)
	refused("webhook -1", err, outbound.ErrInvalidField, "webhook")
	_, err = records.ReplayDeadLetter("m", 1)
	refused("a replay to webhook 1 of 1", err, outbound.ErrInvalidField, "webhook")
	_, err = records.ReplayDeadLetters(time.Time{}, time.Time{}, 5)
	refused("a range replay to webhook 5", err, outbound.ErrInvalidField, "webhook")
	var e *outbound.Error
	if errors.As(err, &e) && e.Op != "ReplayDeadLetters" {
		t.Errorf("Op %q, want the method's name", e.Op)
	}

	// Without dead letters: attempts and health, but no dead letters.
	off := newClient(t, "", outbound.Config{Webhooks: []outbound.Webhook{{URL: r.url}}})
	offRecords := off.(outbound.DeliveryRecords)
	if h, err := offRecords.WebhookHealth(); err != nil || len(h) != 1 || h[0].State != outbound.HealthHealthy {
		t.Errorf("WebhookHealth without a spool = %+v, %v", h, err)
	}
	if a, err := offRecords.WebhookAttempts(0); err != nil || len(a) != 0 {
		t.Errorf("WebhookAttempts without traffic = %+v, %v", a, err)
	}
	_, err = offRecords.DeadLetters(outbound.DeadLetterQuery{Limit: 10})
	refused("dead letters off", err, outbound.ErrConfig, "dead_letters")
	_, err = offRecords.DeadLetterStats()
	refused("dead letters off", err, outbound.ErrConfig, "dead_letters")

	// After Close, and on the client New returns when it cannot build one.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = records.DeadLetterStats()
	refused("after Close", err, outbound.ErrClosed, "closed")
	failed := outbound.New("").(outbound.DeliveryRecords)
	if _, err := failed.WebhookHealth(); !errors.Is(err, outbound.ErrConfig) {
		t.Errorf("the client New could not build: %v", err)
	}
}

// WebhookAttemptsWhere picks by result, status, message and time; a failure keeps its
// request's headers (the credential redacted), its answer's headers and a 5,000-byte answer
// whole.
func TestWebhookAttemptsWhereFiltersAndKeepsAFailuresHeaders(t *testing.T) {
	var mu sync.Mutex
	status := http.StatusOK
	answer := bytes.Repeat([]byte("x"), 5000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		s := status
		mu.Unlock()
		w.Header().Set("X-Reason", "busy")
		w.WriteHeader(s)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, "", outbound.Config{
		Webhooks: []outbound.Webhook{{URL: srv.URL + "/hook",
			Headers: map[string]string{"Authorization": "Bearer s3cret", "X-Team": "growth"}}},
		IgnoreProxyEnv: true})
	records := c.(outbound.DeliveryRecords)
	query := c.(outbound.AttemptQuerier)
	ids := []string{"aq-1", "aq-2", "aq-3"}
	var marks []time.Time
	for i, s := range []int{400, 200, 422} {
		mu.Lock()
		status = s
		mu.Unlock()
		marks = append(marks, time.Now())
		time.Sleep(5 * time.Millisecond)
		mustEnqueue(t, c, outbound.Track{MessageId: ids[i], UserId: "u", Event: "Tried"})
		deadline := time.Now().Add(20 * time.Second)
		for {
			a, err := records.WebhookAttempts(0)
			if err != nil {
				t.Fatal(err)
			}
			if len(a) == i+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d attempts, want %d", len(a), i+1)
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
	}
	picked := func(q outbound.AttemptQuery) []string {
		t.Helper()
		if q.Limit == 0 {
			q.Limit = 100
		}
		got, err := query.WebhookAttemptsWhere(0, q)
		if err != nil {
			t.Fatalf("WebhookAttemptsWhere(%+v) = %v", q, err)
		}
		var names []string
		for _, a := range got {
			names = append(names, a.MessageId)
		}
		return names
	}
	for _, tc := range []struct {
		q    outbound.AttemptQuery
		want []string
	}{
		{outbound.AttemptQuery{}, []string{"aq-3", "aq-2", "aq-1"}},
		{outbound.AttemptQuery{Result: outbound.AttemptDelivered}, []string{"aq-2"}},
		{outbound.AttemptQuery{Result: outbound.AttemptPermanent}, []string{"aq-3", "aq-1"}},
		{outbound.AttemptQuery{Result: outbound.AttemptRetryable}, nil},
		{outbound.AttemptQuery{Status: 400}, []string{"aq-1"}},
		{outbound.AttemptQuery{MessageId: "aq-3"}, []string{"aq-3"}},
		{outbound.AttemptQuery{Since: marks[1]}, []string{"aq-3", "aq-2"}},
		{outbound.AttemptQuery{Until: marks[1]}, []string{"aq-1"}},
		{outbound.AttemptQuery{Since: marks[1], Until: marks[2]}, []string{"aq-2"}},
		{outbound.AttemptQuery{Limit: 1}, []string{"aq-3"}},
	} {
		if got := picked(tc.q); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("WebhookAttemptsWhere(%+v) = %v, want %v", tc.q, got, tc.want)
		}
	}

	refused, err := query.WebhookAttemptsWhere(0, outbound.AttemptQuery{Status: 400, Limit: 10})
	if err != nil || len(refused) != 1 {
		t.Fatalf("status 400: %+v, %v", refused, err)
	}
	a := refused[0]
	if !bytes.Equal(a.Answer, answer) {
		t.Errorf("answer of %d bytes, want the 5000 whole", len(a.Answer))
	}
	if got := a.RequestHeaders.Get("Authorization"); got != "[redacted]" {
		t.Errorf("Authorization %q, want [redacted]", got)
	}
	if got := a.RequestHeaders.Get("X-Team"); got != "growth" {
		t.Errorf("X-Team %q", got)
	}
	if got := a.AnswerHeaders.Get("X-Reason"); got != "busy" {
		t.Errorf("answer's X-Reason %q (headers %v)", got, a.AnswerHeaders)
	}
	delivered, err := query.WebhookAttemptsWhere(0, outbound.AttemptQuery{MessageId: "aq-2", Limit: 1})
	if err != nil || len(delivered) != 1 || delivered[0].Answer != nil ||
		delivered[0].RequestHeaders != nil || delivered[0].AnswerHeaders != nil {
		t.Errorf("a delivery: %+v, %v", delivered, err)
	}

	var e *outbound.Error
	for _, tc := range []struct {
		q    outbound.AttemptQuery
		text string
	}{
		{outbound.AttemptQuery{}, "limit"},
		{outbound.AttemptQuery{Limit: 10_001}, "limit"},
		{outbound.AttemptQuery{Limit: 1, Result: "lost"}, "result"},
		{outbound.AttemptQuery{Limit: 1, Status: 70_000}, "status"},
	} {
		_, err := query.WebhookAttemptsWhere(0, tc.q)
		if !errors.Is(err, outbound.ErrInvalidField) || !errors.As(err, &e) || !strings.Contains(e.Message, tc.text) {
			t.Errorf("%+v: %v; want ErrInvalidField naming %s", tc.q, err, tc.text)
		}
	}
	if _, err := query.WebhookAttemptsWhere(1, outbound.AttemptQuery{Limit: 1}); !errors.Is(err, outbound.ErrInvalidField) {
		t.Errorf("webhook 1: %v", err)
	}
}
