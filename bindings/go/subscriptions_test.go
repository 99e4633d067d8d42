package outbound_test

// Config.Subscriptions against two receivers on 127.0.0.1 (httptest listens there): each
// gets only what its trigger matches, as its mapping says, signed; outcomes name their
// subscription; the counters are each subscription's; refusals name the field.

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	outbound "outbound.invalid/bindings/go"
)

type captured struct {
	method, path string
	header       http.Header
	body         []byte
}

// capture records every request, whatever its method, and answers 200.
type capture struct {
	*httptest.Server
	mu  sync.Mutex
	got []captured
}

func newCapture(t *testing.T) *capture {
	t.Helper()
	c := &capture{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.got = append(c.got, captured{r.Method, r.URL.Path, r.Header.Clone(), body})
		c.mu.Unlock()
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *capture) requests() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]captured{}, c.got...)
}

func hmacSHA1(secret string, body []byte) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func TestSubscriptionsGetWhatTheirTriggersMatchMappedAndSigned(t *testing.T) {
	a, b := newCapture(t), newCapture(t)
	var mu sync.Mutex
	var outcomes []outbound.Outcome
	c := newClient(t, "", outbound.Config{
		SharedSecret:   "sub-secret",
		IgnoreProxyEnv: true,
		Subscriptions: []json.RawMessage{
			// As Segment exports a subscription.
			json.RawMessage(fmt.Sprintf(`{"name": "orders",
				"subscribe": "type = \"track\" and event = \"Order Completed\"",
				"mapping": {"url": "%s/orders", "method": "PUT", "headers": {"X-Team": "growth"},
					"data": {"order": {"@path": "$.properties.order_id"},
						"who": {"@template": "{{userId}}"}}}}`, a.URL)),
			// In outbound's own settings: the whole event, POSTed.
			json.RawMessage(fmt.Sprintf(`{"name": "ids", "trigger": "type = \"identify\"",
				"url": "%s/ids"}`, b.URL)),
		},
		OnOutcome: func(o outbound.Outcome) {
			mu.Lock()
			outcomes = append(outcomes, o)
			mu.Unlock()
		},
	})
	order := mustEnqueue(t, c, outbound.Track{UserId: "u1", Event: "Order Completed",
		Properties: outbound.NewProperties().Set("order_id", "o-1").Set("total", 12.5)})
	mustEnqueue(t, c, outbound.Track{UserId: "u1", Event: "Cart Viewed"})
	who := mustEnqueue(t, c, outbound.Identify{UserId: "u2", Traits: outbound.NewTraits().Set("plan", "pro")})
	mustEnqueue(t, c, outbound.Page{UserId: "u3", Name: "Home"})
	flush(t, c)

	puts, posts := a.requests(), b.requests()
	if len(puts) != 1 || len(posts) != 1 {
		t.Fatalf("orders got %d requests, ids %d: want 1 each", len(puts), len(posts))
	}
	put := puts[0]
	if put.method != http.MethodPut || put.path != "/orders" {
		t.Errorf("orders: %s %s, want PUT /orders", put.method, put.path)
	}
	if string(put.body) != `{"order":"o-1","who":"u1"}` {
		t.Errorf("orders: body %s", put.body)
	}
	if put.header.Get("X-Team") != "growth" {
		t.Errorf("orders: X-Team %q", put.header.Get("X-Team"))
	}
	post := posts[0]
	var event map[string]any
	if err := json.Unmarshal(post.body, &event); err != nil {
		t.Fatal(err)
	}
	if post.method != http.MethodPost || post.path != "/ids" || event["type"] != "identify" ||
		event["userId"] != "u2" || event["messageId"] != who {
		t.Errorf("ids: %s %s %s", post.method, post.path, post.body)
	}
	for _, r := range []captured{put, post} {
		if got, want := r.header.Get("X-Signature"), hmacSHA1("sub-secret", r.body); got != want {
			t.Errorf("%s: X-Signature %q, HMAC-SHA1 of the body %q", r.path, got, want)
		}
	}

	mu.Lock()
	got := append([]outbound.Outcome{}, outcomes...)
	mu.Unlock()
	want := map[string]string{order: "orders", who: "ids"}
	if len(got) != 2 {
		t.Errorf("outcomes %+v: want one per match (a client of subscriptions alone has none of its own)", got)
	}
	for _, o := range got {
		if want[o.MessageId] != o.Subscription || o.Kind != outbound.Delivered {
			t.Errorf("outcome %+v", o)
		}
	}

	counters := c.(outbound.SubscriptionCounters)
	if n := counters.Unmatched(); n != 2 {
		t.Errorf("Unmatched() = %d, want 2 (Cart Viewed and the page)", n)
	}
	if s, ok := counters.SubscriptionStats("orders"); !ok || s.Accepted != 1 || s.Delivered != 1 {
		t.Errorf("SubscriptionStats(orders) = %+v, %v", s, ok)
	}
	if _, ok := counters.SubscriptionStats("nope"); ok {
		t.Error("SubscriptionStats(nope) found one")
	}
	if s := c.Stats(); s.Accepted != 0 {
		t.Errorf("the client's own Stats %+v: its messages are the subscriptions'", s)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Kept as they were at Close.
	if s, ok := counters.SubscriptionStats("ids"); !ok || s.Delivered != 1 || counters.Unmatched() != 2 {
		t.Errorf("after Close: SubscriptionStats(ids) = %+v, %v; Unmatched %d", s, ok, counters.Unmatched())
	}
}

func TestARefusedSubscriptionIsAnErrConfigNamingItsField(t *testing.T) {
	ok := json.RawMessage(`{"name":"a","trigger":"type = \"track\"","url":"http://127.0.0.1:9/a"}`)
	for _, tc := range []struct {
		name string
		cfg  outbound.Config
		want string
	}{
		{"a method Segment's action has not", outbound.Config{Subscriptions: []json.RawMessage{ok,
			json.RawMessage(`{"name":"b","subscribe":"type = \"track\"","mapping":{"url":"http://127.0.0.1:9/b","method":"GET"}}`)}},
			"subscriptions[1].mapping.method"},
		{"a trigger that is not FQL", outbound.Config{Subscriptions: []json.RawMessage{
			json.RawMessage(`{"name":"b","trigger":"(event = \"a\"","url":"http://127.0.0.1:9/b"}`)}},
			"subscriptions[0].trigger"},
		{"two of one name", outbound.Config{Subscriptions: []json.RawMessage{ok, ok}}, "subscriptions[1].name"},
		{"batches past Segment's limit", outbound.Config{Subscriptions: []json.RawMessage{
			json.RawMessage(`{"name":"b","trigger":"type = \"track\"","url":"http://127.0.0.1:9/b","batch_size":4001}`)}},
			"subscriptions[0].batch_size"},
		{"not JSON", outbound.Config{Subscriptions: []json.RawMessage{json.RawMessage(`{"name":`)}}, "subscriptions[0]"},
		{"a NUL byte", outbound.Config{Subscriptions: []json.RawMessage{json.RawMessage("{\"name\":\"a\x00\"}")}},
			"subscriptions[0]: must not hold a NUL byte"},
		{"Callback with subscriptions", outbound.Config{Subscriptions: []json.RawMessage{ok},
			Callback: callbackFuncs{}}, "invalid configuration Callback"},
	} {
		_, err := outbound.NewWithConfig("", tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
			continue
		}
		if tc.name != "not JSON" && !errors.Is(err, outbound.ErrConfig) {
			t.Errorf("%s: %v is not ErrConfig", tc.name, err)
		}
	}
}

func TestARecordingClientRecordsEachOutcomeWithItsSubscription(t *testing.T) {
	// A recording client sends nothing: the URLs are never called.
	c, rec, err := outbound.NewRecording("", outbound.Config{
		Webhooks: []outbound.Webhook{{URL: "http://127.0.0.1:9/hook"}},
		Subscriptions: []json.RawMessage{
			json.RawMessage(`{"name":"signups","trigger":"event = \"Signed Up\"","url":"http://127.0.0.1:9/crm"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := mustEnqueue(t, c, outbound.Track{UserId: "u1", Event: "Signed Up"})
	flush(t, c)
	subs := map[string]int{}
	for _, o := range rec.Outcomes() {
		if o.MessageId != id || o.Kind != outbound.Delivered {
			t.Errorf("outcome %+v", o)
		}
		subs[o.Subscription]++
	}
	if subs[""] != 1 || subs["signups"] != 1 || len(subs) != 2 {
		t.Errorf("outcomes by subscription %v: want the message's own and the subscription's", subs)
	}
}

// A subscription's endpoint is called as a webhook's is: its bearer token arrives as the
// Authorization header (the receiver refuses a request without it); a value it cannot take
// is an ErrConfig naming the subscription's field.
func TestASubscriptionsEndpointIsCalledAsAWebhooks(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer t0k-sub" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	t.Cleanup(rx.Close)
	c := newClient(t, "", outbound.Config{
		IgnoreProxyEnv: true,
		Subscriptions: []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"name": "crm",
			"trigger": "type = \"track\"", "url": "%s/crm",
			"auth": {"type": "bearer", "token": "t0k-sub"}}`, rx.URL))},
	})
	mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})
	flush(t, c)
	if s, ok := c.(outbound.SubscriptionCounters).SubscriptionStats("crm"); !ok || s.Delivered != 1 {
		mu.Lock()
		defer mu.Unlock()
		t.Errorf("SubscriptionStats(crm) = %+v, %v; the receiver saw %q", s, ok, seen)
	}
	for _, tc := range []struct{ auth, want string }{
		{`{"type": "bearer", "token": ""}`, "subscriptions[0].auth.token: must not be empty"},
		{`{"type": "bearer", "token": 7}`, "subscriptions[0].auth.token: must be a string"},
		{`{"type": "digest"}`, "subscriptions[0].auth.type"},
	} {
		sub := fmt.Sprintf(`{"name": "s", "trigger": "type = \"track\"",
			"url": "http://127.0.0.1:9/s", "auth": %s}`, tc.auth)
		_, err := outbound.NewWithConfig("", outbound.Config{
			Subscriptions: []json.RawMessage{json.RawMessage(sub)}})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, outbound.ErrConfig) {
			t.Errorf("%s: %v, want an ErrConfig naming %s", tc.auth, err, tc.want)
		}
	}
}
