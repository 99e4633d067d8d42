package outbound_test

import (
	"bytes"
	"encoding/json"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	outbound "outbound.invalid/bindings/go"
)

type lineItem struct {
	SKU   string  `json:"sku"`
	Qty   int     `json:"qty"`
	Note  string  `json:"note,omitempty"`
	Price float64 `json:"price"`
}

var cest = time.FixedZone("CEST", 2*3600)

// The values of docs/go.md's table, and the exact properties object the core writes for them
// (keys of a Go map come sorted from encoding/json; the core then puts array-index keys
// first, as JSON.stringify does).
func valuesCase() (outbound.Properties, string) {
	at := time.Date(2026, 11, 21, 11, 30, 0, 123_987_654, cest)
	props := outbound.Properties{
		"b_int":       1.0,
		"big":         1e21,
		"bool":        true,
		"f32":         float32(0.1),
		"i64":         int64(1<<53 + 1),
		"items":       []lineItem{{SKU: "s1", Qty: 2, Price: 9.5}},
		"neg_zero":    math.Copysign(0, -1),
		"nested":      []any{[]any{1, "a"}, map[string]any{"10": 1, "2": 2, "a": 3}},
		"nil":         nil,
		"num":         json.Number("1.50"),
		"small":       0.000001,
		"struct_time": struct{ At time.Time }{at},
		"text":        "é\u2028<>&\"\\\n\x01",
		"times":       []time.Time{at},
		"tiny":        1e-7,
		"u64":         uint64(math.MaxUint64),
		"when":        at,
		"whenp":       &at,
	}
	want := `{"b_int":1,"big":1e+21,"bool":true,"f32":0.1,"i64":9007199254740992,` +
		`"items":[{"sku":"s1","qty":2,"price":9.5}],"neg_zero":0,` +
		`"nested":[[1,"a"],{"2":2,"10":1,"a":3}],"nil":null,"num":1.5,"small":0.000001,` +
		`"struct_time":{"At":"2026-11-21T11:30:00.123987654+02:00"},` +
		"\"text\":\"é\u2028<>&\\\"\\\\\\n\\u0001\"," +
		`"times":["2026-11-21T09:30:00.123Z"],"tiny":1e-7,"u64":18446744073709552000,` +
		`"when":"2026-11-21T09:30:00.123Z","whenp":"2026-11-21T09:30:00.123Z"}`
	return props, want
}

func TestGoValuesBecomeTheCanonicalBodyAtBothDestinations(t *testing.T) {
	ingest := newReceiver(t)
	hook := newReceiver(t)
	c := newClient(t, "wk", outbound.Config{Endpoint: ingest.URL, Webhooks: []outbound.Webhook{{URL: hook.URL}}})
	props, want := valuesCase()
	mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "Values", Properties: props})
	flush(t, c)
	for name, rx := range map[string]*receiver{"ingestion": ingest, "webhook": hook} {
		raw := rx.rawMessages(t)
		if len(raw) != 1 {
			t.Fatalf("%s: %d messages", name, len(raw))
		}
		if !bytes.Contains(raw[0], []byte(`"properties":`+want)) {
			t.Errorf("%s body:\n%s\nwant properties:\n%s", name, raw[0], want)
		}
	}
}

func TestTheCallersValuesAreNotModified(t *testing.T) {
	rx := newReceiver(t)
	c := newClient(t, "wk", outbound.Config{Endpoint: rx.URL})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	inner := map[string]any{"at": at}
	list := []any{at}
	props := outbound.Properties{"inner": inner, "list": list, "at": at}
	mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E", Properties: props})
	if props["at"] != at || inner["at"] != at || list[0] != at {
		t.Fatalf("Enqueue changed the caller's values: %v", props)
	}
}

func TestContextInAnalyticsGoShapeWithExtra(t *testing.T) {
	rx := newReceiver(t)
	c := newClient(t, "wk", outbound.Config{Endpoint: rx.URL})
	ctx := &outbound.Context{
		App:     outbound.AppInfo{Name: "shop", Version: "1.2"},
		IP:      net.ParseIP("10.0.0.1"),
		Locale:  "fr-FR",
		Library: outbound.LibraryInfo{Name: "not-us"},
		Extra:   map[string]any{"locale": "ignored", "source": "cron", "at": time.Date(2026, 1, 1, 0, 0, 0, 0, cest)},
	}
	mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E", Context: ctx})
	flush(t, c)
	got := rx.messages(t)[0]["context"].(map[string]any)
	if got["app"].(map[string]any)["name"] != "shop" || got["ip"] != "10.0.0.1" || got["locale"] != "fr-FR" ||
		got["source"] != "cron" || got["at"] != "2025-12-31T22:00:00.000Z" {
		t.Errorf("context %v", got)
	}
	if got["library"].(map[string]any)["name"] != "outbound" {
		t.Errorf("context.library %v: the core's own must win", got["library"])
	}
	if _, ok := got["campaign"]; ok {
		t.Errorf("a zero field was sent: %v", got)
	}
	// Marshalled by itself, a Context has the same shape.
	b, err := json.Marshal(ctx)
	if err != nil || !strings.Contains(string(b), `"app":{"name":"shop","version":"1.2"}`) {
		t.Errorf("json.Marshal(Context) = %s, %v", b, err)
	}
}

func TestEveryBodySentFromGoIsAFixedPointOfJSONStringifyInNode(t *testing.T) {
	ingest := newReceiver(t)
	hook := newReceiver(t)
	c := newClient(t, "wk", outbound.Config{Endpoint: ingest.URL, Webhooks: []outbound.Webhook{{URL: hook.URL}},
		SharedSecret: "s"})
	props, _ := valuesCase()
	at := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	ctx := &outbound.Context{Device: outbound.DeviceInfo{Model: "Pixel", Type: "android"},
		OS: outbound.OSInfo{Name: "Android", Version: "15"}, App: outbound.AppInfo{Build: "7", Name: "a", Version: "1"}}
	for _, m := range []outbound.Message{
		outbound.Identify{UserId: "u", Traits: outbound.NewTraits().SetCreatedAt(at).SetAge(41).Set("1", "index key")},
		outbound.Track{UserId: "u", Event: "Values ☃", Properties: props, Context: ctx},
		outbound.Page{UserId: "u", Name: "Home", Properties: outbound.NewProperties().SetURL("https://x.test/?a=1&b=<2>")},
		outbound.Screen{UserId: "u", Name: "Main", Context: ctx},
		outbound.Group{UserId: "u", GroupId: "g", Traits: outbound.Traits{"name": "Acme", "employee count": 1e3}},
		outbound.Alias{PreviousId: "p", UserId: "u", Timestamp: at},
		outbound.Delete{UserId: "u"},
	} {
		mustEnqueue(t, c, m)
	}
	flush(t, c)
	var bodies [][]byte
	for _, r := range append(ingest.all(), hook.all()...) {
		bodies = append(bodies, r.Body)
	}
	if len(hook.all()) != 7 {
		t.Fatalf("webhook got %d bodies, want 7", len(hook.all()))
	}
	nodeRoundTrip(t, bodies)
}
