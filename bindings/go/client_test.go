package outbound_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	outbound "outbound.invalid/bindings/go"
)

func newClient(t *testing.T, writeKey string, cfg outbound.Config) outbound.Client {
	t.Helper()
	c, err := outbound.NewWithConfig(writeKey, cfg)
	if err != nil {
		t.Fatalf("NewWithConfig: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func mustEnqueue(t *testing.T, c outbound.Client, msg outbound.Message) string {
	t.Helper()
	id, err := c.EnqueueID(msg)
	if err != nil {
		t.Fatalf("Enqueue(%#v): %v", msg, err)
	}
	return id
}

func flush(t *testing.T, c outbound.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v (stats %+v)", err, c.Stats())
	}
}

func byType(msgs []map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, m := range msgs {
		out[m["type"].(string)] = m
	}
	return out
}

func TestEveryCallReachesTheIngestionEndpointInOneBatch(t *testing.T) {
	rx := newReceiver(t)
	c := newClient(t, "wk-1", outbound.Config{Endpoint: rx.URL})
	ts := time.Date(2026, 11, 21, 11, 30, 0, 123_987_000, time.FixedZone("CEST", 2*3600))
	mustEnqueue(t, c, outbound.Identify{UserId: "u1", Traits: outbound.NewTraits().SetEmail("u1@example.com")})
	mustEnqueue(t, c, &outbound.Track{UserId: "u1", Event: "Order Completed",
		Properties: outbound.NewProperties().SetRevenue(19.99), Timestamp: ts})
	mustEnqueue(t, c, outbound.Page{AnonymousId: "a1", Name: "Pricing", Category: "Docs",
		Properties: outbound.NewProperties().SetPath("/pricing")})
	mustEnqueue(t, c, outbound.Screen{UserId: "u1", Name: "Home"})
	mustEnqueue(t, c, outbound.Group{UserId: "u1", GroupId: "acme", Traits: outbound.Traits{"seats": 10}})
	mustEnqueue(t, c, outbound.Alias{PreviousId: "a1", UserId: "u1", MessageId: "my-own-id"})
	flush(t, c)

	reqs := rx.all()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1 batch", len(reqs))
	}
	if reqs[0].Path != "/v1/batch" {
		t.Errorf("path %q", reqs[0].Path)
	}
	wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("wk-1:"))
	if got := reqs[0].Header.Get("Authorization"); got != wantAuth {
		t.Errorf("Authorization %q, want %q", got, wantAuth)
	}
	m := byType(rx.messages(t))
	if len(m) != 6 {
		t.Fatalf("types received: %v", m)
	}
	if m["identify"]["traits"].(map[string]any)["email"] != "u1@example.com" {
		t.Errorf("identify: %v", m["identify"])
	}
	track := m["track"]
	if track["event"] != "Order Completed" || track["properties"].(map[string]any)["revenue"] != 19.99 {
		t.Errorf("track: %v", track)
	}
	if track["timestamp"] != "2026-11-21T09:30:00.123Z" {
		t.Errorf("track timestamp %v, want UTC milliseconds", track["timestamp"])
	}
	if m["page"]["name"] != "Pricing" || m["page"]["category"] != "Docs" || m["page"]["anonymousId"] != "a1" {
		t.Errorf("page: %v", m["page"])
	}
	if m["group"]["groupId"] != "acme" {
		t.Errorf("group: %v", m["group"])
	}
	if m["alias"]["previousId"] != "a1" || m["alias"]["messageId"] != "my-own-id" {
		t.Errorf("alias: %v", m["alias"])
	}
	lib := m["screen"]["context"].(map[string]any)["library"].(map[string]any)
	if lib["name"] != "outbound" {
		t.Errorf("context.library %v", lib)
	}
}

func TestEnqueueIDReturnsTheIdTheMessageCarries(t *testing.T) {
	rx := newReceiver(t)
	c := newClient(t, "wk", outbound.Config{Endpoint: rx.URL})
	id := mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})
	own := mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E", MessageId: "mine-" + strings.Repeat("x", 60)})
	flush(t, c)
	ids := map[string]bool{}
	for _, m := range rx.messages(t) {
		ids[m["messageId"].(string)] = true
	}
	if len(id) != 36 || !ids[id] || !ids[own] || own != "mine-"+strings.Repeat("x", 60) {
		t.Fatalf("ids %q %q, received %v", id, own, ids)
	}
}

func TestWebhooksGetSignedBodiesWithTheirHeadersAndDeleteGoesOnlyThere(t *testing.T) {
	ingest := newReceiver(t)
	hook := newReceiver(t)
	c := newClient(t, "wk", outbound.Config{
		Endpoint:     ingest.URL,
		Webhooks:     []outbound.Webhook{{URL: hook.URL + "/in", Headers: map[string]string{"X-Team": "growth"}}},
		SharedSecret: "s3cret",
	})
	mustEnqueue(t, c, outbound.Track{UserId: "u1", Event: "Signed Up"})
	mustEnqueue(t, c, outbound.Alias{PreviousId: "a1", UserId: "u1"})
	mustEnqueue(t, c, outbound.Delete{UserId: "u1"})
	flush(t, c)

	reqs := hook.waitRequests(t, 3)
	types := map[string]bool{}
	for _, r := range reqs {
		if r.Path != "/in" || r.Header.Get("X-Team") != "growth" || r.Header.Get("User-Agent") != "Outbound/1.0" {
			t.Errorf("webhook request %s %v", r.Path, r.Header)
		}
		if !outbound.Verify("s3cret", r.Body, r.Header.Get("X-Signature")) {
			t.Errorf("X-Signature %q does not verify %s", r.Header.Get("X-Signature"), r.Body)
		}
		if outbound.Verify("other", r.Body, r.Header.Get("X-Signature")) {
			t.Errorf("verifies with the wrong secret")
		}
		if outbound.Sign("s3cret", r.Body) != r.Header.Get("X-Signature") {
			t.Errorf("Sign differs from the header")
		}
	}
	for _, m := range hook.messages(t) {
		types[m["type"].(string)] = true
		if m["type"] == "alias" && (m["Previous ID"] != "a1" || m["User ID"] != "u1") {
			t.Errorf("webhook alias %v", m)
		}
	}
	if !types["track"] || !types["alias"] || !types["delete"] {
		t.Errorf("webhook types %v", types)
	}
	for _, m := range ingest.messages(t) {
		if m["type"] == "delete" {
			t.Errorf("delete reached the ingestion endpoint")
		}
	}
}

func TestIntegrationsKeepAMessageFromTheWebhooks(t *testing.T) {
	ingest := newReceiver(t)
	hook := newReceiver(t)
	c := newClient(t, "wk", outbound.Config{Endpoint: ingest.URL, Webhooks: []outbound.Webhook{{URL: hook.URL}}})
	mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "Quiet", Integrations: outbound.NewIntegrations().Disable("Webhooks")})
	mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "Loud"})
	flush(t, c)
	for _, m := range hook.messages(t) {
		if m["event"] == "Quiet" {
			t.Errorf("a message with Webhooks: false reached the webhook")
		}
	}
	if n := len(ingest.messages(t)); n != 2 {
		t.Errorf("ingestion got %d messages, want 2", n)
	}
}

func TestADisabledWebhookGetsNothingAndTheEnabledOneGetsAll(t *testing.T) {
	off := newReceiver(t)
	on := newReceiver(t)
	c := newClient(t, "", outbound.Config{Webhooks: []outbound.Webhook{
		{URL: off.URL + "/off", Disabled: true},
		{URL: on.URL + "/on", Headers: map[string]string{"X-Team": "growth"}},
	}})
	const n = 20
	ids := map[string]bool{}
	for i := 0; i < n; i++ {
		ids[mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})] = true
	}
	flush(t, c)
	if s := c.Stats(); s.Delivered != n {
		t.Errorf("delivered %d of %d (stats %+v)", s.Delivered, n, s)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	got := on.all()
	if len(got) != n {
		t.Errorf("the enabled webhook got %d requests, want %d", len(got), n)
	}
	for _, m := range on.messages(t) {
		if !ids[m["messageId"].(string)] {
			t.Errorf("unexpected message %v", m)
		}
	}
	if reqs := off.all(); len(reqs) != 0 {
		t.Errorf("the disabled webhook got %d requests", len(reqs))
	}
}

func TestRefusedCallsReturnTheCoresCodeAndNameTheField(t *testing.T) {
	rx := newReceiver(t)
	c := newClient(t, "wk", outbound.Config{Endpoint: rx.URL})
	cases := []struct {
		name string
		msg  outbound.Message
		code outbound.Code
		text string
	}{
		{"track without event", outbound.Track{UserId: "u"}, outbound.ErrMissingField, "event"},
		{"identify without user", outbound.Identify{Traits: outbound.Traits{"a": 1}}, outbound.ErrMissingField, "user"},
		{"group without group id", outbound.Group{UserId: "u"}, outbound.ErrMissingField, "group"},
		{"alias without previous id", outbound.Alias{UserId: "u"}, outbound.ErrMissingField, "previous"},
		{"delete without webhooks", outbound.Delete{UserId: "u"}, outbound.ErrInvalidField, "webhook"},
		{"timestamp beyond year 9999", outbound.Track{UserId: "u", Event: "E",
			Timestamp: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, outbound.ErrInvalidField, "timestamp"},
		{"integration value not a bool", outbound.Track{UserId: "u", Event: "E",
			Integrations: outbound.Integrations{"Webhooks": "no"}}, outbound.ErrInvalidField, "integrations.Webhooks"},
		{"over 32 KB", outbound.Track{UserId: "u", Event: "E",
			Properties: outbound.Properties{"big": strings.Repeat("x", 33_000)}}, outbound.ErrMessageTooLarge, "32"},
		{"nil pointer", (*outbound.Track)(nil), outbound.ErrWrongType, "nil"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Enqueue(tc.msg)
			if !errors.Is(err, tc.code) {
				t.Fatalf("err = %v, want %s", err, tc.code.String())
			}
			var e *outbound.Error
			if !errors.As(err, &e) || e.Op != "Enqueue" || e.Code != tc.code {
				t.Fatalf("errors.As: %#v", e)
			}
			if !strings.Contains(strings.ToLower(e.Message), strings.ToLower(tc.text)) {
				t.Errorf("message %q does not name %q", e.Message, tc.text)
			}
		})
	}
	if s := c.Stats(); s.Accepted != 0 {
		t.Errorf("refused calls were accepted: %+v", s)
	}
}

func TestGoValuesWithNoJSONFormAreRefusedWithTheirPath(t *testing.T) {
	rx := newReceiver(t)
	c := newClient(t, "wk", outbound.Config{Endpoint: rx.URL})
	cases := []struct {
		name  string
		props outbound.Properties
		code  outbound.Code
		path  string
	}{
		{"NaN", outbound.Properties{"x": []any{1, float64NaN()}}, outbound.ErrInvalidField, "properties"},
		{"a channel", outbound.Properties{"ch": make(chan int)}, outbound.ErrWrongType, "properties"},
		{"a time beyond year 9999 in a slice", outbound.Properties{"when": []any{"a", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
			outbound.ErrInvalidField, "properties.when[1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Enqueue(outbound.Track{UserId: "u", Event: "E", Properties: tc.props})
			var e *outbound.Error
			if !errors.As(err, &e) || e.Code != tc.code || !strings.HasPrefix(e.Message, tc.path) {
				t.Fatalf("err = %v, want %s naming %s", err, tc.code.String(), tc.path)
			}
		})
	}
}

func TestAFullQueueRefusesAtOnceAndCounts(t *testing.T) {
	c := newClient(t, "wk", outbound.Config{Endpoint: stallServer(t), MaxQueueSize: 2, Timeout: 500 * time.Millisecond,
		CloseTimeout: 100 * time.Millisecond})
	mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "1"})
	mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "2"})
	start := time.Now()
	err := c.Enqueue(outbound.Track{UserId: "u", Event: "3"})
	if !errors.Is(err, outbound.ErrQueueFull) {
		t.Fatalf("err = %v, want ErrQueueFull", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("a full queue made Enqueue wait %v", d)
	}
	if s := c.Stats(); s.QueueFull != 1 || s.Accepted != 2 {
		t.Errorf("stats %+v", s)
	}
}

func TestConfigurationIsCheckedByTheCore(t *testing.T) {
	six := make([]outbound.Webhook, 6)
	for i := range six {
		six[i] = outbound.Webhook{URL: "http://127.0.0.1:9/h"}
	}
	// A disabled webhook still counts toward the 5.
	sixOneOff := append(append([]outbound.Webhook(nil), six[:5]...), outbound.Webhook{URL: "http://127.0.0.1:9/off", Disabled: true})
	cases := []struct {
		name string
		key  string
		cfg  outbound.Config
		text string
	}{
		{"no destination", "", outbound.Config{}, "write key"},
		{"six webhooks", "", outbound.Config{Webhooks: six}, "webhooks"},
		{"six webhooks, one disabled", "", outbound.Config{Webhooks: sixOneOff}, "6 given, at most 5"},
		{"a bad webhook URL", "", outbound.Config{Webhooks: []outbound.Webhook{{URL: "ftp://x"}}}, "webhooks[0]"},
		{"a reserved header", "", outbound.Config{Webhooks: []outbound.Webhook{{URL: "http://127.0.0.1:9",
			Headers: map[string]string{"X-Signature": "x"}}}}, "X-Signature"},
		{"a bad endpoint", "wk", outbound.Config{Endpoint: "not a url"}, "endpoint"},
		{"synonyms that disagree", "wk", outbound.Config{BatchSize: 10, FlushAt: 20}, "FlushAt"},
		{"a negative size", "wk", outbound.Config{Size: -1}, "Size"},
		{"max batch messages below the batch size", "wk", outbound.Config{BatchSize: 20, MaxBatchMessages: 19}, "max_batch_messages"},
		{"a negative max batch messages", "wk", outbound.Config{MaxBatchMessages: -1}, "MaxBatchMessages"},
		{"a negative interval", "wk", outbound.Config{FlushAfter: -time.Second}, "FlushAfter"},
		{"an unknown redis ack", "wk", outbound.Config{RedisAck: "disk"}, "redis_ack"},
		{"no replicas asked", "wk", outbound.Config{RedisAck: "replicas:0"}, "redis_ack"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := outbound.NewWithConfig(tc.key, tc.cfg)
			if c != nil || !errors.Is(err, outbound.ErrConfig) {
				t.Fatalf("NewWithConfig = %v, %v; want ErrConfig", c, err)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("%q does not name %q", err, tc.text)
			}
		})
	}
}

func TestAWebhookHasAtMostMaxWebhookHeadersAndMaxWebhookHeaderBytes(t *testing.T) {
	// A webhook with n static headers X-H0..X-H{n-1}, each value valueLen bytes.
	hook := func(n, valueLen int) outbound.Webhook {
		h := map[string]string{}
		for i := 0; i < n; i++ {
			h[fmt.Sprintf("X-H%d", i)] = strings.Repeat("v", valueLen)
		}
		return outbound.Webhook{URL: "http://127.0.0.1:9/h", Headers: h}
	}
	accepted := func(name string, cfg outbound.Config) {
		t.Helper()
		c, err := outbound.NewWithConfig("", cfg)
		if err != nil {
			t.Fatalf("%s: NewWithConfig = %v", name, err)
		}
		_ = c.Close()
	}
	refused := func(name string, cfg outbound.Config, text string) {
		t.Helper()
		c, err := outbound.NewWithConfig("", cfg)
		if c != nil || !errors.Is(err, outbound.ErrConfig) || !strings.Contains(err.Error(), text) {
			t.Fatalf("%s: NewWithConfig = %v, %v; want ErrConfig naming %q", name, c, err, text)
		}
	}
	hooks := func(w ...outbound.Webhook) []outbound.Webhook { return w }

	// The defaults: 20 headers, 8192 bytes of names and values.
	accepted("20 headers", outbound.Config{Webhooks: hooks(hook(20, 10))})
	refused("21 headers", outbound.Config{Webhooks: hooks(hook(21, 10))},
		"webhooks[0].headers: 21 headers given, at most 20 allowed (max_webhook_headers)")
	refused("8200 bytes", outbound.Config{Webhooks: hooks(hook(2, 4096))},
		"webhooks[0].headers: 8200 bytes of names and values, at most 8192 allowed (max_webhook_header_bytes)")
	// Raised, they accept what the defaults refuse; lowered, they refuse less.
	accepted("21 headers allowed", outbound.Config{Webhooks: hooks(hook(21, 10)), MaxWebhookHeaders: 21})
	accepted("8200 bytes allowed", outbound.Config{Webhooks: hooks(hook(2, 4096)), MaxWebhookHeaderBytes: 8200})
	refused("2 headers, 1 allowed", outbound.Config{Webhooks: hooks(hook(1, 10), hook(2, 10)), MaxWebhookHeaders: 1},
		"webhooks[1].headers: 2 headers given, at most 1 allowed (max_webhook_headers)")
	refused("14 bytes, 13 allowed", outbound.Config{Webhooks: hooks(hook(1, 10)), MaxWebhookHeaderBytes: 13},
		"14 bytes of names and values, at most 13 allowed (max_webhook_header_bytes)")
	// Negative numbers have no C form: refused by their Go names.
	refused("negative headers", outbound.Config{Webhooks: hooks(hook(0, 0)), MaxWebhookHeaders: -1}, "MaxWebhookHeaders")
	refused("negative bytes", outbound.Config{Webhooks: hooks(hook(0, 0)), MaxWebhookHeaderBytes: -1}, "MaxWebhookHeaderBytes")
}

func TestNewWithAnEmptyWriteKeyReturnsAClientThatReportsWhy(t *testing.T) {
	c := outbound.New("")
	if err := c.Enqueue(outbound.Track{UserId: "u", Event: "E"}); !errors.Is(err, outbound.ErrConfig) {
		t.Fatalf("Enqueue: %v", err)
	}
	if err := c.Close(); !errors.Is(err, outbound.ErrConfig) {
		t.Fatalf("Close: %v", err)
	}
}

func TestSizeOneSendsEveryMessageAtOnce(t *testing.T) {
	for _, cfg := range []outbound.Config{{Size: 1}, {FlushAt: 1}, {BatchSize: 1}} {
		rx := newReceiver(t)
		cfg.Endpoint = rx.URL
		cfg.FlushAfter = time.Hour // so only the size sends
		c := newClient(t, "wk", cfg)
		for i := 0; i < 3; i++ {
			mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})
			rx.waitRequests(t, i+1) // no flush: each one goes by itself
		}
		if n := len(rx.all()); n != 3 {
			t.Errorf("%+v: %d requests, want 3", cfg, n)
		}
	}
}

func TestARequestCarriesAtMostBatchSizeMessages(t *testing.T) {
	rx := newReceiver(t)
	c := newClient(t, "wk", outbound.Config{Endpoint: rx.URL, BatchSize: 5, Interval: time.Minute})
	for i := 0; i < 12; i++ {
		mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})
	}
	rx.waitRequests(t, 2)              // both full batches, without a flush
	time.Sleep(200 * time.Millisecond) // long enough for a joined or third request to show
	if got := rx.batchSizes(t); !slices.Equal(got, []int{5, 5}) {
		t.Errorf("requests of %v messages, want [5 5]", got)
	}
	flush(t, c)
	if got := rx.batchSizes(t); !slices.Equal(got, []int{5, 5, 2}) {
		t.Errorf("requests of %v messages, want [5 5 2]", got)
	}
}

func TestMaxBatchMessagesJoinsWaitingBatchesUpToIt(t *testing.T) {
	rx := newReceiver(t)
	// One request out at a time, answered slowly: closed batches wait behind it and join.
	rx.setDelay(300 * time.Millisecond)
	c := newClient(t, "wk", outbound.Config{Endpoint: rx.URL, BatchSize: 5, MaxBatchMessages: 15, MaxInFlight: 1})
	for i := 0; i < 50; i++ {
		mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})
	}
	flush(t, c)
	sizes := rx.batchSizes(t)
	total, largest := 0, 0
	for _, n := range sizes {
		total += n
		largest = max(largest, n)
	}
	if total != 50 || largest > 15 || largest <= 5 {
		t.Errorf("requests of %v messages: want 50 in all, some joined past 5, none past 15", sizes)
	}
}

func TestFlushAtBatchesAndFlushAfterSendsWhatWaits(t *testing.T) {
	rx := newReceiver(t)
	c := newClient(t, "wk", outbound.Config{Endpoint: rx.URL, FlushAt: 3, FlushAfter: 300 * time.Millisecond})
	start := time.Now()
	for i := 0; i < 4; i++ {
		mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})
	}
	reqs := rx.waitRequests(t, 2) // 3 at once, then 1 after FlushAfter
	if d := reqs[1].Arrived.Sub(start); d < 250*time.Millisecond {
		t.Errorf("the partial batch left after %v, before FlushAfter", d)
	}
	if n := len(rx.messages(t)); n != 4 {
		t.Errorf("%d messages", n)
	}
}

func TestOutcomesReachCallbackAndOnOutcome(t *testing.T) {
	ok := newReceiver(t)
	bad := newReceiver(t)
	bad.setStatus(http.StatusBadRequest)
	var mu sync.Mutex
	var success, failure []outbound.Message
	var failErrs []error
	outcomes := map[string]outbound.Outcome{}
	cb := callbackFuncs{
		success: func(m outbound.Message) { mu.Lock(); success = append(success, m); mu.Unlock() },
		failure: func(m outbound.Message, err error) {
			mu.Lock()
			failure, failErrs = append(failure, m), append(failErrs, err)
			mu.Unlock()
		},
	}
	onOutcome := func(o outbound.Outcome) { mu.Lock(); outcomes[o.MessageId] = o; mu.Unlock() }

	good := newClient(t, "wk", outbound.Config{Endpoint: ok.URL, Callback: cb, OnOutcome: onOutcome})
	idOK := mustEnqueue(t, good, outbound.Track{UserId: "u", Event: "Fine"})
	flush(t, good)
	failing := newClient(t, "wk", outbound.Config{Endpoint: bad.URL, Callback: cb, OnOutcome: onOutcome})
	idBad := mustEnqueue(t, failing, &outbound.Track{UserId: "u", Event: "Refused"})
	if err := failing.Flush(context.Background()); !errors.Is(err, outbound.ErrIncomplete) {
		t.Errorf("Flush with a failure = %v, want ErrIncomplete", err)
	}
	dry := newClient(t, "wk", outbound.Config{Endpoint: ok.URL, DryRun: true, Callback: cb, OnOutcome: onOutcome})
	idDry := mustEnqueue(t, dry, outbound.Identify{UserId: "u"})
	_ = dry.Flush(context.Background())

	mu.Lock()
	defer mu.Unlock()
	if len(success) != 1 || success[0].(outbound.Track).MessageId != idOK {
		t.Errorf("Success got %#v", success)
	}
	if len(failure) != 2 {
		t.Fatalf("Failure got %#v", failure)
	}
	if tr, isTrack := failure[0].(outbound.Track); !isTrack || tr.MessageId != idBad || tr.Event != "Refused" {
		t.Errorf("Failure message %#v", failure[0])
	}
	var oe *outbound.OutcomeError
	if !errors.As(failErrs[0], &oe) || oe.Kind != outbound.Failed || !strings.Contains(oe.Detail, "400") {
		t.Errorf("Failure error %v", failErrs[0])
	}
	if !errors.As(failErrs[1], &oe) || oe.Kind != outbound.Dropped || failure[1].(outbound.Identify).MessageId != idDry {
		t.Errorf("dry run: %v %#v", failErrs[1], failure[1])
	}
	if outcomes[idOK].Kind != outbound.Delivered || outcomes[idOK].Detail != "" ||
		outcomes[idBad].Kind != outbound.Failed || outcomes[idDry].Kind != outbound.Dropped {
		t.Errorf("OnOutcome got %+v", outcomes)
	}
}

type callbackFuncs struct {
	success func(outbound.Message)
	failure func(outbound.Message, error)
}

func (c callbackFuncs) Success(m outbound.Message)            { c.success(m) }
func (c callbackFuncs) Failure(m outbound.Message, err error) { c.failure(m, err) }

func TestAPanicInACallbackIsLoggedAndChangesNothingElse(t *testing.T) {
	rx := newReceiver(t)
	logs := &memLogger{}
	var calls atomic.Int64
	c := newClient(t, "wk", outbound.Config{Endpoint: rx.URL, Logger: logs, OnOutcome: func(outbound.Outcome) {
		calls.Add(1)
		panic("boom")
	}})
	for i := 0; i < 3; i++ {
		mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})
	}
	flush(t, c)
	if calls.Load() != 3 || c.Stats().Delivered != 3 {
		t.Fatalf("calls %d, stats %+v", calls.Load(), c.Stats())
	}
	if !logs.has("ERROR", "panic in OnOutcome: boom") {
		t.Errorf("logs: %v", logs.lines())
	}
}

type memLogger struct {
	mu  sync.Mutex
	out []string
}

func (l *memLogger) Logf(format string, args ...any)   { l.add("INFO", format, args) }
func (l *memLogger) Errorf(format string, args ...any) { l.add("ERROR", format, args) }
func (l *memLogger) add(level, format string, args []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.out = append(l.out, level+" "+fmt.Sprintf(format, args...))
}
func (l *memLogger) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.out...)
}
func (l *memLogger) has(level, text string) bool {
	for _, line := range l.lines() {
		if strings.HasPrefix(line, level+" ") && strings.Contains(line, text) {
			return true
		}
	}
	return false
}

func TestVerboseSendsTheCoresLogLinesToTheLoggerWithoutSecrets(t *testing.T) {
	rx := newReceiver(t)
	rx.setStatus(http.StatusBadRequest)
	logs := &memLogger{}
	c := newClient(t, "secret-write-key", outbound.Config{Endpoint: rx.URL, Verbose: true, Logger: logs,
		Webhooks: []outbound.Webhook{{URL: rx.URL + "/hook"}}, SharedSecret: "shared-s3cret"})
	mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})
	_ = c.Flush(context.Background())
	_ = c.Close()
	lines := logs.lines()
	if !logs.has("INFO", "") || !logs.has("ERROR", "400") {
		t.Fatalf("want progress through Logf and the failure through Errorf, got %q", lines)
	}
	for _, l := range lines {
		if strings.Contains(l, "secret-write-key") || strings.Contains(l, "shared-s3cret") {
			t.Errorf("a secret in the logs: %q", l)
		}
	}
}

func TestDEBUGAnalyticsTurnsLoggingOn(t *testing.T) {
	rx := newReceiver(t)
	for _, env := range []string{"", "analytics"} {
		t.Setenv("DEBUG", env)
		logs := &memLogger{}
		c := newClient(t, "wk", outbound.Config{Endpoint: rx.URL, Logger: logs})
		mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})
		flush(t, c)
		_ = c.Close()
		if got := len(logs.lines()) > 0; got != (env == "analytics") {
			t.Errorf("DEBUG=%q: logged %v: %q", env, got, logs.lines())
		}
	}
}

func TestFlushHonoursTheContext(t *testing.T) {
	c := newClient(t, "wk", outbound.Config{Endpoint: stallServer(t), Timeout: 3 * time.Second, CloseTimeout: 50 * time.Millisecond})
	mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Flush(ctx)
	if !errors.Is(err, outbound.ErrIncomplete) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Flush past its deadline = %v", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 2*time.Second {
		t.Errorf("Flush returned after %v", d)
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	err = c.Flush(ctx)
	if !errors.Is(err, outbound.ErrIncomplete) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Flush = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cancelled Flush returned after %v", d)
	}
	if err := c.Flush(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Flush with a done context = %v", err)
	}
}

func TestCloseTwiceAndCallsAfterCloseReturnErrClosed(t *testing.T) {
	rx := newReceiver(t)
	c, err := outbound.NewWithConfig("wk", outbound.Config{Endpoint: rx.URL})
	if err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); !errors.Is(err, outbound.ErrClosed) {
		t.Errorf("second Close = %v", err)
	}
	if err := c.Enqueue(outbound.Track{UserId: "u", Event: "E"}); !errors.Is(err, outbound.ErrClosed) {
		t.Errorf("Enqueue after Close = %v", err)
	}
	if err := c.Flush(context.Background()); !errors.Is(err, outbound.ErrClosed) {
		t.Errorf("Flush after Close = %v", err)
	}
	if s := c.Stats(); s.Delivered != 1 || s.Accepted != 1 {
		t.Errorf("Stats after Close = %+v", s)
	}
	if n := len(rx.messages(t)); n != 1 {
		t.Errorf("Close delivered %d messages, want 1", n)
	}
}

func TestCloseDropsWhatItCannotDeliverAndNoCallbackRunsAfterIt(t *testing.T) {
	var calls atomic.Int64
	var dropped atomic.Int64
	cb := callbackFuncs{
		success: func(outbound.Message) { calls.Add(1) },
		failure: func(_ outbound.Message, err error) {
			calls.Add(1)
			var oe *outbound.OutcomeError
			if errors.As(err, &oe) && oe.Kind == outbound.Dropped {
				dropped.Add(1)
			}
		},
	}
	c, err := outbound.NewWithConfig("wk", outbound.Config{Endpoint: stallServer(t), Timeout: 5 * time.Second,
		CloseTimeout: 200 * time.Millisecond, Callback: cb})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})
	}
	if err := c.Close(); !errors.Is(err, outbound.ErrIncomplete) {
		t.Errorf("Close = %v, want ErrIncomplete", err)
	}
	after := calls.Load()
	if after != 50 || dropped.Load() != 50 {
		t.Errorf("%d callbacks (%d dropped) by the time Close returned, want 50", after, dropped.Load())
	}
	time.Sleep(300 * time.Millisecond)
	if calls.Load() != after {
		t.Errorf("a callback ran after Close returned")
	}
	if s := c.Stats(); s.Dropped != 50 {
		t.Errorf("stats %+v", s)
	}
}

func float64NaN() float64 {
	zero := 0.0
	return zero / zero
}

// With DryRun every message ends at once, often before Enqueue has returned: the Callback
// still gets each one, with its message, by the time Close returns.
func TestCallbackGetsOutcomesThatComeBeforeEnqueueReturns(t *testing.T) {
	var mu sync.Mutex
	got := map[string]outbound.Message{}
	c, err := outbound.NewWithConfig("wk", outbound.Config{DryRun: true, MaxQueueSize: 100_000, Callback: callbackFuncs{
		success: func(m outbound.Message) { t.Errorf("delivered in a dry run: %v", m) },
		failure: func(m outbound.Message, _ error) {
			mu.Lock()
			got[m.(outbound.Track).MessageId] = m
			mu.Unlock()
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 8, 1000
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := c.Enqueue(outbound.Track{UserId: "u", Event: "E"}); err != nil {
					t.Errorf("Enqueue: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	_ = c.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != goroutines*each {
		t.Fatalf("Failure called for %d messages by the time Close returned, want %d", len(got), goroutines*each)
	}
}

// Enqueue calls racing with Close: every call that succeeded has its outcome reported by
// the time Close returns, none after.
func TestCloseWaitsForTheOutcomesOfEnqueueCallsRacingWithIt(t *testing.T) {
	var reported atomic.Int64
	c, err := outbound.NewWithConfig("wk", outbound.Config{DryRun: true, MaxQueueSize: 1_000_000, Callback: callbackFuncs{
		success: func(outbound.Message) { reported.Add(1) },
		failure: func(outbound.Message, error) { reported.Add(1) },
	}})
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				err := c.Enqueue(outbound.Track{UserId: "u", Event: "E"})
				if errors.Is(err, outbound.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("Enqueue: %v", err)
					return
				}
				accepted.Add(1)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	_ = c.Close()
	atClose := reported.Load()
	wg.Wait()
	if atClose != accepted.Load() || reported.Load() != atClose {
		t.Fatalf("%d accepted, %d reported when Close returned, %d in the end", accepted.Load(), atClose, reported.Load())
	}
}
