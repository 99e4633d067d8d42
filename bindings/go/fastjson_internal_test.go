package outbound

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// sameJSON says whether two texts hold the same JSON value (numbers compared exactly by
// value, whatever their spelling).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	parse := func(text []byte) any {
		d := json.NewDecoder(bytes.NewReader(text))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, text)
		}
		return norm(v)
	}
	if !utf8.Valid(a) || !utf8.Valid(b) {
		t.Errorf("not UTF-8 (liboutbound refuses it):\n%q\n%q", a, b)
		return false
	}
	return reflect.DeepEqual(parse(a), parse(b))
}

func norm(v any) any {
	switch x := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(string(x)) // exact, whatever the spelling
		if !ok {
			return "bad number " + string(x)
		}
		return r.RatString()
	case []any:
		for i := range x {
			x[i] = norm(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = norm(x[k])
		}
	}
	return v
}

func both(t *testing.T, w wire) (fast, slow []byte, ok bool) {
	t.Helper()
	fast, ok = appendWire(nil, &w)
	slow, err := json.Marshal(&w)
	if err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return fast, slow, ok
}

func TestTheDirectWriterSaysWhatEncodingJSONSays(t *testing.T) {
	var controls strings.Builder
	for c := 0; c < 0x80; c++ {
		controls.WriteByte(byte(c))
	}
	ts := "2026-11-21T09:30:00.123Z"
	w := wire{Type: "track", MessageId: "m\"1", AnonymousId: "a", UserId: "u\\", PreviousId: "p", GroupId: "g",
		Event: "é ☃ \u2028", Name: "n", Category: "c", Timestamp: &ts,
		Context:      map[string]any{"ip": "1.2.3.4", "x": []any{nil, true}},
		Integrations: Integrations{"All": false, "Webhooks": true},
		Properties: Properties{
			"ascii": controls.String(), "bad utf8": "a\xffb\xc3", "f": 1.5, "f32": float32(0.1), "neg0": math.Copysign(0, -1),
			"big": 1e21, "tiny": 1e-7, "i": -7, "i8": int8(-8), "i16": int16(16), "i32": int32(32), "i64": int64(math.MinInt64),
			"u": uint(1), "u8": uint8(8), "u16": uint16(16), "u32": uint32(32), "u64": uint64(math.MaxUint64),
			"strs": []string{"a", ""}, "nilstrs": []string(nil), "nilmap": map[string]any(nil), "nil": nil,
			"nested": map[string]any{"10": 1, "2": []any{map[string]any{}, []any{}}}, "traits": Traits{"t": "v"},
		},
		Traits: Traits{"k": "v"},
	}
	fast, slow, ok := both(t, w)
	if !ok {
		t.Fatal("the direct writer gave up on plain values")
	}
	if !sameJSON(t, fast, slow) {
		t.Fatalf("direct:\n%s\nencoding/json:\n%s", fast, slow)
	}
}

func TestTheDirectWriterGivesUpOnWhatItDoesNotWrite(t *testing.T) {
	deep := any("x")
	for i := 0; i < maxFastDepth+2; i++ {
		deep = []any{deep}
	}
	for name, v := range map[string]any{
		"a struct": struct{ A int }{1}, "NaN": math.NaN(), "+Inf": math.Inf(1), "a json.Number": json.Number("1"),
		"a typed map": map[string]string{"a": "b"}, "a pointer": new(int), "deep nesting": deep,
	} {
		if _, ok := appendWire(nil, &wire{Type: "track", Properties: Properties{"v": v}}); ok {
			t.Errorf("%s: written directly", name)
		}
	}
}

func TestTheDirectWriterOnRandomValues(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.Intn(10); {
		case k == 0:
			return nil
		case k == 1:
			return r.Intn(2) == 0
		case k == 2:
			return r.NormFloat64() * math.Pow(10, float64(r.Intn(60)-30))
		case k == 3:
			return r.Int63() - r.Int63()
		case k == 4:
			b := make([]byte, r.Intn(12))
			r.Read(b)
			return string(b)
		case k == 5 && depth < 4:
			xs := make([]any, r.Intn(4))
			for i := range xs {
				xs[i] = gen(depth + 1)
			}
			return xs
		case k == 6 && depth < 4:
			m := map[string]any{}
			for i := r.Intn(4); i > 0; i-- {
				m[string(rune('a'+r.Intn(26)))+string(rune(0x80+r.Intn(0x800)))] = gen(depth + 1)
			}
			return m
		default:
			return "plain"
		}
	}
	for i := 0; i < 2000; i++ {
		w := wire{Type: "identify", UserId: "u", Traits: Traits{"v": gen(0)}}
		fast, slow, ok := both(t, w)
		if !ok || !sameJSON(t, fast, slow) {
			t.Fatalf("case %d (ok %v):\ndirect:\n%q\nencoding/json:\n%q", i, ok, fast, slow)
		}
	}
}

// The core keeps an object's keys in the order it reads them, so the order the direct
// writer gives them is the order on the wire: it must be encoding/json's (sorted by the
// key's bytes), at every size (maps of up to 16 entries are sorted on the stack, larger ones
// on the heap), nested too. Values without floats or U+2028/9 have one spelling in both, so
// the texts must be equal byte for byte.
func TestTheDirectWriterWritesKeysInEncodingJSONsOrder(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	alphabet := []string{"a", "B", "é", "☃", "0", "10", "2", " ", `"`, `\`, "\t", "\x00", "\xff", "ab", "aB", "Z"}
	key := func() string {
		var b strings.Builder
		for i := r.Intn(4); i >= 0; i-- {
			b.WriteString(alphabet[r.Intn(len(alphabet))])
		}
		return b.String()
	}
	var gen func(n, depth int) map[string]any
	gen = func(n, depth int) map[string]any {
		m := map[string]any{}
		for len(m) < n {
			switch r.Intn(6) {
			case 0:
				m[key()] = key()
			case 1:
				m[key()] = r.Int63() - r.Int63()
			case 2:
				m[key()] = nil
			case 3:
				m[key()] = []any{true, key(), nil}
			default:
				if depth < 3 {
					m[key()] = gen(r.Intn(20), depth+1)
				} else {
					m[key()] = false
				}
			}
		}
		return m
	}
	for _, n := range []int{0, 1, 2, 15, 16, 17, 40, 100} {
		for i := 0; i < 20; i++ {
			w := wire{Type: "track", UserId: "u", Event: "e", Properties: Properties(gen(n, 0)),
				Context: map[string]any{"ip": "1.2.3.4", "k": gen(n, 2)}}
			fast, ok := appendWire(nil, &w)
			if !ok {
				t.Fatalf("n=%d: the direct writer gave up", n)
			}
			var slow bytes.Buffer
			enc := json.NewEncoder(&slow)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(&w); err != nil {
				t.Fatal(err)
			}
			if want := bytes.TrimSuffix(slow.Bytes(), []byte("\n")); !bytes.Equal(fast, want) {
				t.Fatalf("n=%d:\ndirect:\n%q\nencoding/json:\n%q", n, fast, want)
			}
		}
	}
}
