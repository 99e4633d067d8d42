package outbound

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"
)

// The packed form liboutbound's outbound_enqueue_packed takes (its doc comment in
// include/outbound.h has the grammar): the wire struct's fields as tagged, length-prefixed
// values, so the core parses no JSON text. It carries the same message as the JSON text
// the direct writer (fastjson.go) would write, value for value: the core writes the same
// bytes from either and applies the same rules. Only plain values are packed (the ones
// fastjson.go writes); anything else or deep nesting makes it give up, and the message goes
// as JSON text. Texts are packed as they are, unchecked: the core checks every one as UTF-8
// anyway, and refuses the packed form of a message with one that is not; the message then
// goes as JSON text (client.enqueue), whose writer replaces invalid UTF-8 as encoding/json
// does (in a key too: two such keys may become one). So the common message's texts are
// checked once, in the core, not also here.

// The field tags of the packed form.
const (
	packType = 1 + iota
	packMessageId
	packAnonymousId
	packUserId
	packPreviousId
	packGroupId
	packEvent
	packName
	packCategory
	packTimestamp
	packContext
	packIntegrations
	packProperties
	packTraits
)

// appendPacked appends w in the packed form to b; ok is false when it must go as JSON text.
func appendPacked(b []byte, w *wire) (_ []byte, ok bool) {
	b = packStr(append(b, packType), w.Type)
	for _, f := range [...]struct {
		tag byte
		v   string
	}{
		{packMessageId, w.MessageId}, {packAnonymousId, w.AnonymousId}, {packUserId, w.UserId},
		{packPreviousId, w.PreviousId}, {packGroupId, w.GroupId}, {packEvent, w.Event},
		{packName, w.Name}, {packCategory, w.Category},
	} {
		if f.v != "" {
			b = packStr(append(b, f.tag), f.v)
		}
	}
	if w.Timestamp != nil {
		b = packStr(append(b, packTimestamp), *w.Timestamp)
	}
	for _, f := range [...]struct {
		tag byte
		v   any
	}{
		{packContext, w.Context}, {packProperties, w.Properties}, {packTraits, w.Traits},
	} {
		if f.v == nil {
			continue
		}
		if !isPlainMap(f.v) {
			return b, false
		}
		b = append(b, f.tag, 0, 0, 0, 0)
		at := len(b)
		if b, ok = packValue(b, f.v, 0); !ok {
			return b, false
		}
		binary.LittleEndian.PutUint32(b[at-4:], uint32(len(b)-at))
	}
	if w.Integrations != nil {
		// Integrations go as JSON text (the core reads them as a parsed object).
		if !isPlainMap(w.Integrations) {
			return b, false
		}
		b = append(b, packIntegrations, 0, 0, 0, 0)
		at := len(b)
		if b, ok = appendValue(b, w.Integrations, 0); !ok {
			return b, false
		}
		binary.LittleEndian.PutUint32(b[at-4:], uint32(len(b)-at))
	}
	return b, true
}

// isPlainMap says whether v is a non-nil map of the kinds packed as objects.
func isPlainMap(v any) bool {
	switch m := v.(type) {
	case map[string]any:
		return m != nil
	case Properties:
		return m != nil
	case Traits:
		return m != nil
	case Integrations:
		return m != nil
	}
	return false
}

// packStr appends a str: its length and its bytes, as they are (see the top of the file).
func packStr(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func packInt(b []byte, i int64) []byte {
	if i >= 0 {
		return packUint(b, uint64(i))
	}
	return binary.LittleEndian.AppendUint64(append(b, 'i'), uint64(i))
}

func packUint(b []byte, u uint64) []byte {
	return binary.LittleEndian.AppendUint64(append(b, 'u'), u)
}

func packFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	return binary.LittleEndian.AppendUint64(append(b, 'd'), math.Float64bits(f)), true
}

// packFloat32 packs the float64 the JSON text of f would be read as: its shortest decimal
// as a float32 (what encoding/json writes), read back as a float64.
func packFloat32(b []byte, f float32) ([]byte, bool) {
	var text [32]byte
	s := strconv.AppendFloat(text[:0], float64(f), 'g', -1, 32)
	g, err := strconv.ParseFloat(string(s), 64)
	if err != nil {
		return b, false
	}
	return packFloat(b, g)
}

func packValue(b []byte, v any, depth int) (_ []byte, ok bool) {
	if depth > maxFastDepth {
		return b, false
	}
	switch x := v.(type) {
	case nil:
		return append(b, 'n'), true
	case string:
		return packStr(append(b, 's'), x), true
	case bool:
		if x {
			return append(b, 't'), true
		}
		return append(b, 'f'), true
	case float64:
		return packFloat(b, x)
	case float32:
		return packFloat32(b, x)
	case int:
		return packInt(b, int64(x)), true
	case int64:
		return packInt(b, x), true
	case int32:
		return packInt(b, int64(x)), true
	case int16:
		return packInt(b, int64(x)), true
	case int8:
		return packInt(b, int64(x)), true
	case uint:
		return packUint(b, uint64(x)), true
	case uint64:
		return packUint(b, x), true
	case uint32:
		return packUint(b, uint64(x)), true
	case uint16:
		return packUint(b, uint64(x)), true
	case uint8:
		return packUint(b, uint64(x)), true
	case time.Time:
		return packTime(b, x)
	case *time.Time:
		if x == nil {
			return append(b, 'n'), true
		}
		return packTime(b, *x)
	case []string:
		if x == nil {
			return append(b, 'n'), true
		}
		b = binary.LittleEndian.AppendUint32(append(b, '['), uint32(len(x)))
		for _, s := range x {
			b = packStr(append(b, 's'), s)
		}
		return b, true
	case []any:
		if x == nil {
			return append(b, 'n'), true
		}
		b = binary.LittleEndian.AppendUint32(append(b, '['), uint32(len(x)))
		for _, e := range x {
			if b, ok = packValue(b, e, depth+1); !ok {
				return b, false
			}
		}
		return b, true
	case map[string]any:
		return packMap(b, x, depth)
	case Properties:
		return packMap(b, x, depth)
	case Traits:
		return packMap(b, x, depth)
	case Integrations:
		return packMap(b, x, depth)
	}
	return b, false
}

// packTime packs t in the core's wire form, as appendTime writes it.
func packTime(b []byte, t time.Time) ([]byte, bool) {
	s, err := formatTime(t)
	if err != nil {
		return b, false
	}
	return packStr(append(b, 's'), s), true
}

// packMap packs m with its keys sorted, as appendMap writes them (the core keeps the order).
func packMap[M ~map[string]any](b []byte, m M, depth int) (_ []byte, ok bool) {
	if m == nil {
		return append(b, 'n'), true
	}
	if len(m) > smallMap {
		return packLargeMap(b, m, depth)
	}
	var es [smallMap]entry
	var order [smallMap]uint8
	n := 0
	for k, v := range m {
		if n == smallMap {
			break
		}
		es[n] = entry{k, v}
		order[n] = uint8(n)
		n++
	}
	if n != len(m) {
		return b, false
	}
	for i := 1; i < n; i++ {
		for j := i; j > 0 && es[order[j]].k < es[order[j-1]].k; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	b = binary.LittleEndian.AppendUint32(append(b, '{'), uint32(n))
	for i := 0; i < n; i++ {
		e := &es[order[i]]
		b = packStr(b, e.k)
		if b, ok = packValue(b, e.v, depth+1); !ok {
			return b, false
		}
	}
	return b, true
}

func packLargeMap[M ~map[string]any](b []byte, m M, depth int) (_ []byte, ok bool) {
	es := sortedEntries(m)
	b = binary.LittleEndian.AppendUint32(append(b, '{'), uint32(len(es)))
	for i := range es {
		b = packStr(b, es[i].k)
		if b, ok = packValue(b, es[i].v, depth+1); !ok {
			return b, false
		}
	}
	return b, true
}
