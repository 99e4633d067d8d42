package analytics_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	outbound "outbound.invalid/bindings/go"
	"outbound.invalid/bindings/go/v2"
)

const writeKey = "h97jamjwbh"

// newClient is New pointed at a fresh receiver.
func newClient(t *testing.T) (*analytics.Client, *receiver) {
	t.Helper()
	r := newReceiver(t)
	c := analytics.New(writeKey)
	c.Endpoint = r.URL
	return c, r
}

// subset reports the first key of want whose value differs in got.
func subset(got, want map[string]any) string {
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			return k
		}
	}
	return ""
}

func checkCommon(t *testing.T, m map[string]any) {
	t.Helper()
	if id, _ := m["messageId"].(string); len(id) != 36 {
		t.Errorf("messageId %v", m["messageId"])
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", m["timestamp"].(string)); err != nil {
		t.Errorf("timestamp: %v", err)
	}
}

// v2's programs (examples_test.go), unchanged: each arrives as v2 sent it.
func TestV2Programs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		program func()
		want    map[string]any
	}{
		{"Identify", ExampleClient_Identify, map[string]any{"type": "identify", "userId": "019mr8mf4r",
			"traits": map[string]any{"name": "Michael Bolton", "email": "mbolton@example.com", "plan": "Enterprise", "friends": 42.0}}},
		{"Track", ExampleClient_Track, map[string]any{"type": "track", "userId": "f4ca124298", "event": "Signed Up",
			"properties": map[string]any{"plan": "Enterprise"}}},
		{"Page", ExampleClient_Page, map[string]any{"type": "page", "userId": "f4ca124298", "category": "Docs",
			"name": "Go library", "properties": map[string]any{"url": "https://segment.com/libraries/go/"}}},
		{"Group", ExampleClient_Group, map[string]any{"type": "group", "userId": "019mr8mf4r", "groupId": "56",
			"traits": map[string]any{"name": "Initech", "description": "Accounting Software"}}},
		{"Alias", ExampleClient_Alias, map[string]any{"type": "alias", "userId": "019mr8mf4r",
			"previousId": "anonymousUser"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t)
			defer analytics.SetDefaultEndpoint(r.URL)()
			tc.program()
			msgs := r.messages(t, writeKey)
			if len(msgs) != 1 {
				t.Fatalf("%d messages arrived, want 1: %v", len(msgs), msgs)
			}
			if k := subset(msgs[0], tc.want); k != "" {
				t.Errorf("%s: got %v, want %v", k, msgs[0][k], tc.want[k])
			}
			checkCommon(t, msgs[0])
		})
	}
}

// examples/track.go of v2: 3 s of tracks every 50 ms, Size 100, then Close.
func TestV2TrackExample(t *testing.T) {
	if testing.Short() {
		t.Skip("3 s")
	}
	r := newReceiver(t)
	defer analytics.SetDefaultEndpoint(r.URL)()
	ExampleNew()
	msgs := r.messages(t, writeKey)
	if len(msgs) < 40 || len(msgs) > 61 {
		t.Fatalf("%d messages, want about 60", len(msgs))
	}
	for _, m := range msgs {
		if k := subset(m, map[string]any{"type": "track", "event": "Download", "userId": "123456",
			"properties": map[string]any{"application": "Segment Desktop", "version": "1.1.0", "platform": "osx"}}); k != "" {
			t.Fatalf("%s: %v", k, m)
		}
	}
}

func TestV2ValidationMessages(t *testing.T) {
	c, r := newClient(t)
	for _, tc := range []struct {
		call func() error
		text string
	}{
		{func() error { return c.Track(&analytics.Track{UserId: "u"}) }, "You must pass 'event'."},
		{func() error { return c.Group(&analytics.Group{UserId: "u"}) }, "You must pass a 'groupId'."},
		{func() error { return c.Alias(&analytics.Alias{PreviousId: "p"}) }, "You must pass a 'userId'."},
		{func() error { return c.Alias(&analytics.Alias{UserId: "u"}) }, "You must pass a 'previousId'."},
		{func() error { return c.Identify(&analytics.Identify{}) }, "You must pass either an 'anonymousId' or 'userId'."},
		{func() error { return c.Track(&analytics.Track{Event: "E"}) }, "You must pass either an 'anonymousId' or 'userId'."},
		{func() error { return c.Page(&analytics.Page{}) }, "You must pass either an 'anonymousId' or 'userId'."},
		{func() error { return c.Screen(&analytics.Screen{}) }, "You must pass either an 'anonymousId' or 'userId'."},
		{func() error { return c.Group(&analytics.Group{GroupId: "g"}) }, "You must pass either an 'anonymousId' or 'userId'."},
	} {
		err := tc.call()
		if err == nil || err.Error() != tc.text {
			t.Errorf("got %v, want %q", err, tc.text)
			continue
		}
		if !errors.Is(err, analytics.ErrMissingField) || !errors.Is(err, outbound.ErrMissingField) {
			t.Errorf("%q does not match ErrMissingField", err)
		}
		var core *outbound.Error
		if !errors.As(err, &core) || !strings.Contains(core.Message, " requires ") {
			t.Errorf("%q: the core's error is not under it (%v)", err, core)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := r.got(); len(got) != 0 {
		t.Fatalf("refused calls sent %d requests", len(got))
	}
	// Other refusals are the core's errors as they are.
	c2, _ := newClient(t)
	defer c2.Close()
	err := c2.Track(&analytics.Track{UserId: "u", Event: "E", Message: analytics.Message{Timestamp: "yesterday"}})
	if !errors.Is(err, analytics.ErrInvalidField) || !strings.Contains(err.Error(), "timestamp") {
		t.Errorf("bad timestamp: %v", err)
	}
	if err := c2.Track(nil); !errors.Is(err, analytics.ErrWrongType) {
		t.Errorf("nil message: %v", err)
	}
}

func TestV2FlushAtOneSendsEachMessageAtOnce(t *testing.T) {
	c, r := newClient(t)
	c.FlushAt = 1
	c.Interval = time.Hour
	for i := 1; i <= 3; i++ {
		if err := c.Track(&analytics.Track{UserId: "u", Event: "E"}); err != nil {
			t.Fatal(err)
		}
		r.waitRequests(t, i) // before Close, and long before the hour
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(r.messages(t, writeKey)); n != 3 {
		t.Fatalf("%d messages", n)
	}
}

func TestV2SizeOneToo(t *testing.T) {
	c, r := newClient(t)
	c.Size = 1
	c.FlushAfter = time.Hour
	if err := c.Identify(&analytics.Identify{UserId: "u"}); err != nil {
		t.Fatal(err)
	}
	r.waitRequests(t, 1)
	c.Close()
}

func TestV2ARequestCarriesAtMostSizeMessages(t *testing.T) {
	c, r := newClient(t)
	c.Size = 5
	c.Interval = time.Hour
	for i := 0; i < 12; i++ {
		if err := c.Track(&analytics.Track{UserId: "u", Event: "E"}); err != nil {
			t.Fatal(err)
		}
	}
	r.waitRequests(t, 2)               // both full batches, before Close
	time.Sleep(200 * time.Millisecond) // long enough for a joined or third request to show
	if got := r.sizes(t); !slices.Equal(got, []int{5, 5}) {
		t.Errorf("requests of %v messages, want [5 5]", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := r.sizes(t); !slices.Equal(got, []int{5, 5, 2}) {
		t.Errorf("requests of %v messages, want [5 5 2]", got)
	}
}

func TestV2MaxBatchMessagesJoinsWaitingBatchesUpToIt(t *testing.T) {
	c, r := newClient(t)
	// Requests answered slowly: once every thread the lane gives a new receiver is busy,
	// closed batches wait behind them and join.
	r.setDelay(300 * time.Millisecond)
	c.Size = 5
	c.MaxBatchMessages = 15
	for i := 0; i < 200; i++ {
		if err := c.Track(&analytics.Track{UserId: "u", Event: "E"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	total, largest := 0, 0
	for _, n := range r.sizes(t) {
		total += n
		largest = max(largest, n)
	}
	if total != 200 || largest > 15 || largest <= 5 {
		t.Errorf("requests of %v messages: want 200 in all, some joined past 5, none past 15", r.sizes(t))
	}
}

func TestV2MaxBatchMessagesBelowSizeIsAConfigError(t *testing.T) {
	c, _ := newClient(t)
	c.Size = 20
	c.MaxBatchMessages = 19
	err := c.Track(&analytics.Track{UserId: "u", Event: "E"})
	if !errors.Is(err, analytics.ErrConfig) || !strings.Contains(err.Error(), "max_batch_messages") {
		t.Fatalf("got %v", err)
	}
}

func TestV2RedisAckIsCheckedAndNamed(t *testing.T) {
	c, _ := newClient(t)
	c.Spool = "redis://127.0.0.1:1/0"
	c.RedisAck = "disk"
	err := c.Track(&analytics.Track{UserId: "u", Event: "E"})
	if !errors.Is(err, analytics.ErrConfig) || !strings.Contains(err.Error(), "redis_ack") {
		t.Fatalf("got %v", err)
	}
}

func TestV2CloseDeliversWhatIsQueued(t *testing.T) {
	c, r := newClient(t)
	c.Size = 100
	c.Interval = time.Hour
	for i := 0; i < 7; i++ {
		if err := c.Track(&analytics.Track{UserId: "u", Event: "E"}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(r.got()); n != 0 {
		t.Fatalf("%d requests before Close with Size 100", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(r.messages(t, writeKey)); n != 7 {
		t.Fatalf("%d messages after Close, want 7", n)
	}
}

func TestV2AfterCloseAnErrorNotAPanic(t *testing.T) {
	c, _ := newClient(t)
	if err := c.Track(&analytics.Track{UserId: "u", Event: "E"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Track(&analytics.Track{UserId: "u", Event: "E"}); !errors.Is(err, analytics.ErrClosed) {
		t.Errorf("Track after Close: %v", err)
	}
	if err := c.Close(); !errors.Is(err, analytics.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	// Closed before any call: nothing starts.
	c2 := analytics.New(writeKey)
	if err := c2.Close(); err != nil {
		t.Errorf("Close of an unused client: %v", err)
	}
	if err := c2.Alias(&analytics.Alias{UserId: "u", PreviousId: "p"}); !errors.Is(err, analytics.ErrClosed) {
		t.Errorf("Alias after Close: %v", err)
	}
}

// The fields v2 set on the caller's struct, the spec's optional fields on every call, v2's
// own timestamp form, and Screen.
func TestV2FieldsAndScreen(t *testing.T) {
	c, r := newClient(t)
	ctx := map[string]interface{}{"ip": "8.8.8.8"}
	ints := map[string]interface{}{"All": false, "Webhooks": true}
	track := &analytics.Track{UserId: "u", Event: "E", Context: ctx, Integrations: ints, AnonymousId: "a1",
		Message: analytics.Message{Timestamp: "2009-11-10T23:00:00+0000"}}
	alias := &analytics.Alias{UserId: "u", PreviousId: "p", Context: ctx, Integrations: ints, AnonymousId: "a1",
		Message: analytics.Message{MessageId: "my-id", Timestamp: "2009-11-10T23:00:00.250-0130"}}
	screen := &analytics.Screen{UserId: "u", Name: "Home", Category: "App",
		Properties: map[string]interface{}{"tab": "feed"}}
	if err := c.Track(track); err != nil {
		t.Fatal(err)
	}
	if err := c.Alias(alias); err != nil {
		t.Fatal(err)
	}
	if err := c.Screen(screen); err != nil {
		t.Fatal(err)
	}
	if track.Type != "track" || len(track.MessageId) != 36 || alias.Type != "alias" || alias.MessageId != "my-id" ||
		screen.Type != "screen" {
		t.Errorf("set on the structs: %+v %+v %+v", track.Message, alias.Message, screen.Message)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	msgs := r.messages(t, writeKey)
	if len(msgs) != 3 {
		t.Fatalf("%d messages", len(msgs))
	}
	want := []map[string]any{
		{"type": "track", "messageId": track.MessageId, "anonymousId": "a1", "timestamp": "2009-11-10T23:00:00.000Z",
			"integrations": map[string]any{"All": false, "Webhooks": true}},
		{"type": "alias", "messageId": "my-id", "anonymousId": "a1", "previousId": "p", "userId": "u",
			"timestamp": "2009-11-11T00:30:00.250Z"},
		{"type": "screen", "name": "Home", "category": "App", "properties": map[string]any{"tab": "feed"}},
	}
	for i, m := range msgs {
		if k := subset(m, want[i]); k != "" {
			t.Errorf("message %d, %s: %v", i, k, m[k])
		}
		if ctx, _ := m["context"].(map[string]any); i < 2 && ctx["ip"] != "8.8.8.8" {
			t.Errorf("message %d context %v", i, m["context"])
		}
	}
}

// Verbose and DEBUG=analytics log through Logger, and the write key never appears.
func TestV2Logging(t *testing.T) {
	for _, tc := range []struct {
		name    string
		verbose bool
		debug   string
	}{{"Verbose", true, ""}, {"DEBUG=analytics", false, "analytics"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("DEBUG", tc.debug)
			c, r := newClient(t)
			var lines safeBuffer
			c.Logger = log.New(&lines, "segment ", 0)
			c.Verbose = tc.verbose
			c.Track(&analytics.Track{UserId: "u", Event: "E"})
			c.Close()
			r.waitRequests(t, 1)
			text := lines.String()
			if !strings.Contains(text, "segment ") {
				t.Fatalf("nothing logged through Logger: %q", text)
			}
			if strings.Contains(text, writeKey) {
				t.Errorf("the write key was logged: %q", text)
			}
		})
	}
	t.Run("quiet", func(t *testing.T) {
		t.Setenv("DEBUG", "")
		c, _ := newClient(t)
		var lines safeBuffer
		c.Logger = log.New(&lines, "segment ", 0)
		c.Track(&analytics.Track{UserId: "u", Event: "E"})
		c.Close()
		if text := lines.String(); text != "" {
			t.Errorf("logged without Verbose or DEBUG: %q", text)
		}
	})
}

// Many goroutines share one client (run with -race).
func TestV2Concurrent(t *testing.T) {
	c, r := newClient(t)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if err := c.Track(&analytics.Track{UserId: "u", Event: "E"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(r.messages(t, writeKey)); n != 400 {
		t.Fatalf("%d messages", n)
	}
}

func TestV2MaxQueueSize(t *testing.T) {
	c, _ := newClient(t)
	if c.QueueFullWait != analytics.DefaultQueueFullWait || analytics.DefaultQueueFullWait != 5*time.Second {
		t.Fatalf("New's QueueFullWait %v", c.QueueFullWait)
	}
	c.MaxQueueSize = 2
	c.QueueFullWait = 200 * time.Millisecond
	c.Interval = time.Hour
	c.Size = 100
	for i := 0; i < 2; i++ {
		if err := c.Track(&analytics.Track{UserId: "u", Event: "E"}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := c.Track(&analytics.Track{UserId: "u", Event: "E"}); !errors.Is(err, analytics.ErrQueueFull) {
		t.Fatalf("third message: %v", err)
	}
	if w := time.Since(start); w < 150*time.Millisecond || w > 5*time.Second {
		t.Fatalf("refused after %v, QueueFullWait 200 ms", w)
	}
	c.Close()
}

// v2 blocked a caller while its loop was busy; with New's QueueFullWait a full queue waits
// for room the same way, so a program faster than its endpoint loses nothing.
func TestV2AFullQueueWaitsForRoomByDefault(t *testing.T) {
	c, r := newClient(t)
	c.MaxQueueSize = 1
	c.Size = 1
	for i := 0; i < 50; i++ {
		if err := c.Track(&analytics.Track{UserId: "u", Event: "E"}); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(r.messages(t, writeKey)); n != 50 {
		t.Fatalf("%d messages", n)
	}
}

func TestV2ConfigErrorAtFirstCall(t *testing.T) {
	c := analytics.New(writeKey)
	c.Endpoint = "ftp://example.com"
	err := c.Track(&analytics.Track{UserId: "u", Event: "E"})
	if !errors.Is(err, analytics.ErrConfig) {
		t.Fatalf("got %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestV2DeadLettersNeedASpoolAndReachTheCore(t *testing.T) {
	c, _ := newClient(t)
	c.DeadLetters = true
	err := c.Track(&analytics.Track{UserId: "u", Event: "E"})
	if !errors.Is(err, analytics.ErrConfig) || !strings.Contains(err.Error(), "dead_letters") {
		t.Fatalf("dead letters without a spool: %v", err)
	}
	c2, _ := newClient(t)
	c2.Spool = t.TempDir()
	c2.DeadLetters = true
	c2.DeadLetterRetention = time.Hour
	c2.DeadLetterMaxBytes = 1 << 20
	if err := c2.Track(&analytics.Track{UserId: "u", Event: "E"}); err != nil {
		t.Fatal(err)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	c3, _ := newClient(t)
	c3.Spool = t.TempDir()
	c3.DeadLetterMaxBytes = -1
	if err := c3.Track(&analytics.Track{UserId: "u", Event: "E"}); !errors.Is(err, analytics.ErrConfig) ||
		!strings.Contains(err.Error(), "DeadLetterMaxBytes") {
		t.Fatalf("negative DeadLetterMaxBytes: %v", err)
	}
}

// A v2 client has no webhooks, so the bounds of their headers bound nothing in it; the
// settings its fields give the core do, as the core's webhooks show, and a negative one is
// refused by its name.
func TestV2MaxWebhookHeadersAndMaxWebhookHeaderBytesReachTheCore(t *testing.T) {
	// The core's settings of c, with a webhook of n static headers of valueLen bytes each.
	withHook := func(c *analytics.Client, n, valueLen int) outbound.Config {
		cfg := analytics.CoreConfig(c)
		h := map[string]string{}
		for i := 0; i < n; i++ {
			h[fmt.Sprintf("X-H%d", i)] = strings.Repeat("v", valueLen)
		}
		cfg.Webhooks = []outbound.Webhook{{URL: "http://127.0.0.1:9/h", Headers: h}}
		return cfg
	}
	built := func(cfg outbound.Config, text string) {
		t.Helper()
		core, err := outbound.NewWithConfig("", cfg)
		if text == "" {
			if err != nil {
				t.Fatalf("NewWithConfig = %v", err)
			}
			_ = core.Close()
			return
		}
		if core != nil || !errors.Is(err, outbound.ErrConfig) || !strings.Contains(err.Error(), text) {
			t.Fatalf("NewWithConfig = %v, %v; want ErrConfig naming %q", core, err, text)
		}
	}
	c := analytics.New(writeKey)
	// The defaults: 20 headers, 8192 bytes of names and values.
	built(withHook(c, 20, 10), "")
	built(withHook(c, 21, 10), "webhooks[0].headers: 21 headers given, at most 20 allowed (max_webhook_headers)")
	built(withHook(c, 2, 4096), "webhooks[0].headers: 8200 bytes of names and values, at most 8192 allowed (max_webhook_header_bytes)")
	// Raised, they accept what the defaults refuse.
	c.MaxWebhookHeaders = 21
	c.MaxWebhookHeaderBytes = 8200
	built(withHook(c, 21, 10), "")
	built(withHook(c, 2, 4096), "")

	// The client itself, without webhooks: set, it works; negative, its calls say why.
	c2, _ := newClient(t)
	c2.MaxWebhookHeaders = 1
	c2.MaxWebhookHeaderBytes = 16
	if err := c2.Track(&analytics.Track{UserId: "u", Event: "E"}); err != nil {
		t.Fatal(err)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  func(*analytics.Client)
	}{
		{"MaxWebhookHeaders", func(c *analytics.Client) { c.MaxWebhookHeaders = -1 }},
		{"MaxWebhookHeaderBytes", func(c *analytics.Client) { c.MaxWebhookHeaderBytes = -1 }},
	} {
		c, _ := newClient(t)
		tc.set(c)
		if err := c.Track(&analytics.Track{UserId: "u", Event: "E"}); !errors.Is(err, analytics.ErrConfig) ||
			!strings.Contains(err.Error(), tc.name) {
			t.Fatalf("negative %s: %v", tc.name, err)
		}
	}
}
