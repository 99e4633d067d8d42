package outbound

import (
	"bytes"
	"context"
	"errors"
	"math"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// sentAt differs between two requests; everything else of a body is the message's.
var sentAt = regexp.MustCompile(`"sentAt":"[^"]*"`)

// sendBothWays queues w once in the packed form and once as JSON text (the direct writer,
// or encoding/json where it gives up) on a recording client with webhooks and ingestion,
// and returns the two errors and, when both were queued, the bodies each made.
func sendBothWays(t *testing.T, w wire) (packedErr, textErr error, packedBodies, textBodies []string) {
	t.Helper()
	c, rec, err := NewRecording("wk", Config{BatchSize: 1,
		Webhooks: []Webhook{{URL: "https://hooks.example.com/in"}}, SharedSecret: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl := c.(*client)
	bodies := func() []string {
		if err := c.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rec.Requests() {
			out = append(out, string(r.Destination)+" "+sentAt.ReplaceAllString(string(r.Body), `"sentAt":"-"`))
		}
		rec.Clear()
		sort.Strings(out) // the destinations' requests come in either order
		return out
	}
	fast := w
	if ctx, ok := fast.Context.(*Context); ok {
		fast.Context = ctx.object()
	}
	packed, ok := appendPacked(nil, &fast)
	if !ok {
		t.Fatalf("not packed: %+v", w)
	}
	if _, packedErr = cl.enqueueEncoded(packed, true, "", false, nil); packedErr == nil {
		packedBodies = bodies()
	}
	var text bytes.Buffer
	if out, ok := appendWire(nil, &fast); ok {
		text.Write(out)
		text.WriteByte(0)
	} else if err := encodeText(&text, &w); err != nil {
		t.Fatal(err)
	}
	if _, textErr = cl.enqueueEncoded(text.Bytes(), false, "", false, nil); textErr == nil {
		textBodies = bodies()
	}
	return
}

// The packed form and the JSON text carry the same message: the core queues the same bytes
// from both, or refuses both with the same error.
func TestThePackedFormSendsWhatTheJSONTextSends(t *testing.T) {
	var controls strings.Builder
	for c := 0; c < 0x80; c++ {
		controls.WriteByte(byte(c))
	}
	at := time.Date(2026, 11, 21, 11, 30, 0, 123_987_654, time.FixedZone("CEST", 2*3600))
	ts := "2026-11-21T09:30:00.123+02:00"
	bad := "yesterday"
	many := Properties{}
	for i := 0; i < 40; i++ {
		many[string(rune('a'+i%26))+strings.Repeat("x", i)] = i
	}
	props := Properties{
		"ascii": controls.String(), "unicode": "é ☃ \u2028 😀",
		"f": 1.5, "f32": float32(0.1), "f32b": float32(16777217), "neg0": math.Copysign(0, -1),
		"big": 1e21, "tiny": 1e-7, "intf": 3.0, "bigint": 123456789.0, "huge": 1.7976931348623157e308,
		"i": -7, "i8": int8(-8), "i16": int16(16), "i32": int32(32), "i64": int64(math.MinInt64),
		"beyond53": int64(9007199254740993), "u": uint(1), "u8": uint8(8), "u16": uint16(16),
		"u32": uint32(32), "u64": uint64(math.MaxUint64),
		"strs": []string{"a", ""}, "nilstrs": []string(nil), "nilmap": map[string]any(nil), "nil": nil,
		"nested": map[string]any{"10": 1, "2": []any{map[string]any{}, []any{}}, "b": Traits{"t": "v"}},
		"when":   at, "whenp": &at, "nilwhen": (*time.Time)(nil), "times": []any{at, "x"},
		"many": many, "4294967294": "index", "4294967295": "not an index",
	}
	ctx := &Context{Locale: "fr-FR", Direct: true, Extra: map[string]any{"library": map[string]any{"name": "theirs"}, "z": []any{1, "2"}}}
	cases := []struct {
		name string
		w    wire
	}{
		{"track, everything", wire{Type: "track", MessageId: "m-1", AnonymousId: "a\"1", UserId: "u\\1",
			Event: "é ☃ \u2028", Timestamp: &ts, Context: ctx,
			Integrations: Integrations{"All": false, "Webhooks": true, "Segment.io": map[string]any{"x": 1.0}},
			Properties:   props}},
		{"identify", wire{Type: "identify", MessageId: "m-2", UserId: "u", Timestamp: &ts, Traits: Traits{"plan": "pro", "n": 2.5}}},
		{"page", wire{Type: "page", MessageId: "m-3", AnonymousId: "a", Name: "n", Category: "c", Timestamp: &ts, Properties: Properties{"url": "https://x"}}},
		{"screen", wire{Type: "screen", MessageId: "m-4", UserId: "u", Name: "n", Timestamp: &ts}},
		{"group", wire{Type: "group", MessageId: "m-5", UserId: "u", GroupId: "g", Timestamp: &ts, Traits: Traits{}}},
		{"alias", wire{Type: "alias", MessageId: "m-6", UserId: "u", PreviousId: "p", Timestamp: &ts}},
		{"delete", wire{Type: "delete", MessageId: "m-7", UserId: "u", Timestamp: &ts}},
		{"missing event", wire{Type: "track", UserId: "u", Timestamp: &ts}},
		{"missing user", wire{Type: "identify", Timestamp: &ts}},
		{"bad timestamp", wire{Type: "track", UserId: "u", Event: "e", Timestamp: &bad}},
		{"a field the call does not carry", wire{Type: "alias", UserId: "u", PreviousId: "p", Event: "e", Timestamp: &ts}},
		{"unknown type", wire{Type: "purchase", UserId: "u", Timestamp: &ts}},
		{"integrations not booleans", wire{Type: "track", UserId: "u", Event: "e", Timestamp: &ts, Integrations: Integrations{"All": "yes"}}},
		{"too large", wire{Type: "track", UserId: "u", Event: "e", Timestamp: &ts, Properties: Properties{"x": strings.Repeat("y", 40_000)}}},
	}
	for _, tc := range cases {
		pe, te, pb, tb := sendBothWays(t, tc.w)
		if (pe == nil) != (te == nil) || (pe != nil && pe.Error() != te.Error()) {
			t.Errorf("%s: packed: %v; text: %v", tc.name, pe, te)
			continue
		}
		if pe != nil {
			var e *Error
			if !errors.As(pe, &e) {
				t.Errorf("%s: not an *Error: %v", tc.name, pe)
			}
			continue
		}
		if len(pb) == 0 || strings.Join(pb, "\n") != strings.Join(tb, "\n") {
			t.Errorf("%s:\npacked:\n%s\ntext:\n%s", tc.name, strings.Join(pb, "\n"), strings.Join(tb, "\n"))
		}
	}
}

// Texts that are not valid UTF-8 are packed as they are; the core refuses the packed form,
// and the client sends the message as JSON text, whose writer replaces each bad byte with
// U+FFFD as encoding/json does (two keys that become one: the last in encoding/json's order
// wins, as in encoding/json). Both faces: Enqueue, and the wire of bindings/go/v2.
func TestTextsThatAreNotUTF8GoAsJSONText(t *testing.T) {
	c, rec, err := NewRecording("wk", Config{BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl := c.(*client)
	props := Properties{"bad utf8": "a\xffb\xc3", "strs": []string{"a", "\xff"}, "\xff": 1, "\xfe": 2, "ok": "é"}
	w := wire{Type: "track", UserId: "u\xff", Event: "e", Properties: props}
	packed, ok := appendPacked(nil, &w)
	if !ok {
		t.Fatal("not packed")
	}
	_, err = cl.enqueueEncoded(packed, true, "", false, nil)
	if !isCode(err, ErrInvalidJSON) || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Fatalf("the packed form with bad UTF-8: %v", err)
	}
	body := func() string {
		if err := c.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		reqs := rec.Requests()
		rec.Clear()
		if len(reqs) != 1 {
			t.Fatalf("%d requests", len(reqs))
		}
		b := sentAt.ReplaceAllString(string(reqs[0].Body), `"sentAt":"-"`)
		return regexp.MustCompile(`"(messageId|timestamp)":"[^"]*"`).ReplaceAllString(b, `"$1":"-"`)
	}
	var text bytes.Buffer
	tw := w
	if err := encodeText(&text, &tw); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.enqueueEncoded(text.Bytes(), false, "", false, nil); err != nil {
		t.Fatal(err)
	}
	want := body()
	for _, frag := range []string{"\"userId\":\"u\uFFFD\"", "\"bad utf8\":\"a\uFFFDb\uFFFD\"", "\"strs\":[\"a\",\"\uFFFD\"]", "\"\uFFFD\":"} {
		if !strings.Contains(want, frag) {
			t.Fatalf("the JSON text's body lacks %s: %s", frag, want)
		}
	}
	if err := c.Enqueue(Track{UserId: "u\xff", Event: "e", Properties: props}); err != nil {
		t.Fatal(err)
	}
	if got := body(); got != want {
		t.Errorf("Enqueue:\n%s\nthe JSON text:\n%s", got, want)
	}
	vw := w
	if _, err := cl.enqueueWire(&vw, false); err != nil {
		t.Fatal(err)
	}
	if got := body(); got != want {
		t.Errorf("the v2 wire:\n%s\nthe JSON text:\n%s", got, want)
	}
}

// What the packed form does not carry goes as JSON text.
func TestThePackedFormGivesUpOnWhatItDoesNotCarry(t *testing.T) {
	deep := any("x")
	for i := 0; i < maxFastDepth+2; i++ {
		deep = []any{deep}
	}
	for name, v := range map[string]any{
		"a struct": struct{ A int }{1}, "NaN": math.NaN(), "+Inf": math.Inf(1),
		"a typed map": map[string]string{"a": "b"}, "a pointer": new(int), "deep nesting": deep,
		"a time beyond 9999": time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		if _, ok := appendPacked(nil, &wire{Type: "track", Properties: Properties{"v": v}}); ok {
			t.Errorf("%s: packed", name)
		}
	}
	for name, v := range map[string]any{"a nil map": Properties(nil), "an array": []any{1}, "a string": "x"} {
		if _, ok := appendPacked(nil, &wire{Type: "track", Properties: v}); ok {
			t.Errorf("properties as %s: packed", name)
		}
	}
}
