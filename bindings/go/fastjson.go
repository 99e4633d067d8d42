package outbound

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// A direct writer for the JSON text of the common messages: the wire struct whose maps hold
// only strings, numbers, booleans, nil, time.Time (in the core's wire form), []string, []any
// and string-keyed maps of those. It writes what encoding/json writes for them up to
// spelling (the core re-reads the text and writes the canonical form): map keys sorted,
// invalid UTF-8 as U+FFFD. Anything else (structs, other types, NaN and infinities, deep
// nesting) makes it give up, and the whole message goes through encoding/json, which also
// produces the errors. It saves the reflection and the key sorting of encoding/json on the
// hot path, and the separate walk for time values (encode.go's wireValue).

// maxFastDepth bounds the direct writer's recursion; deeper values take encoding/json.
const maxFastDepth = 64

// appendWire appends w's JSON text to b; ok is false when encoding/json must write it.
func appendWire(b []byte, w *wire) (_ []byte, ok bool) {
	b = append(b, `{"type":`...)
	b = appendString(b, w.Type)
	for _, f := range [...]struct {
		key string
		v   string
	}{
		{`,"messageId":`, w.MessageId}, {`,"anonymousId":`, w.AnonymousId}, {`,"userId":`, w.UserId},
		{`,"previousId":`, w.PreviousId}, {`,"groupId":`, w.GroupId}, {`,"event":`, w.Event},
		{`,"name":`, w.Name}, {`,"category":`, w.Category},
	} {
		if f.v != "" {
			b = append(b, f.key...)
			b = appendString(b, f.v)
		}
	}
	if w.Timestamp != nil {
		b = append(b, `,"timestamp":`...)
		b = appendString(b, *w.Timestamp)
	}
	for _, f := range [...]struct {
		key string
		v   any
	}{
		{`,"context":`, w.Context}, {`,"integrations":`, w.Integrations},
		{`,"properties":`, w.Properties}, {`,"traits":`, w.Traits},
	} {
		if f.v == nil {
			continue
		}
		b = append(b, f.key...)
		if b, ok = appendValue(b, f.v, 0); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func appendValue(b []byte, v any, depth int) (_ []byte, ok bool) {
	if depth > maxFastDepth {
		return b, false
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return appendString(b, x), true
	case bool:
		return strconv.AppendBool(b, x), true
	case float64:
		return appendFloat(b, x, 64)
	case float32:
		return appendFloat(b, float64(x), 32)
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case int32:
		return strconv.AppendInt(b, int64(x), 10), true
	case int16:
		return strconv.AppendInt(b, int64(x), 10), true
	case int8:
		return strconv.AppendInt(b, int64(x), 10), true
	case uint:
		return strconv.AppendUint(b, uint64(x), 10), true
	case uint64:
		return strconv.AppendUint(b, x, 10), true
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), true
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10), true
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10), true
	case time.Time:
		return appendTime(b, x)
	case *time.Time:
		if x == nil {
			return append(b, "null"...), true
		}
		return appendTime(b, *x)
	case []string:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		return append(b, ']'), true
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendValue(b, e, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		return appendMap(b, x, depth)
	case Properties:
		return appendMap(b, x, depth)
	case Traits:
		return appendMap(b, x, depth)
	case Integrations:
		return appendMap(b, x, depth)
	}
	return b, false
}

// entry is one key and value of a map being written.
type entry struct {
	k string
	v any
}

// smallMap is the most entries a map written from the stack has; larger ones are copied to
// the heap.
const smallMap = 16

func appendMap[M ~map[string]any](b []byte, m M, depth int) (_ []byte, ok bool) {
	if m == nil {
		return append(b, "null"...), true
	}
	if len(m) > smallMap {
		return appendLargeMap(b, m, depth)
	}
	// The entries are taken in one walk of the map (no lookup per key afterwards) into an
	// array on the stack (stores there need no GC write barrier), and written sorted by key,
	// as encoding/json sorts them: the sort moves indexes, not the entries.
	var es [smallMap]entry
	var order [smallMap]uint8
	n := 0
	for k, v := range m {
		if n == smallMap {
			break // the map grew while being read: encoding/json says what it says
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
	b = append(b, '{')
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		e := &es[order[i]]
		b = appendString(b, e.k)
		b = append(b, ':')
		if b, ok = appendValue(b, e.v, depth+1); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendLargeMap is appendMap for maps of more than smallMap entries.
func appendLargeMap[M ~map[string]any](b []byte, m M, depth int) (_ []byte, ok bool) {
	es := sortedEntries(m)
	b = append(b, '{')
	for i := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, es[i].k)
		b = append(b, ':')
		if b, ok = appendValue(b, es[i].v, depth+1); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// sortedEntries returns m's entries sorted by key (on the heap: for large maps).
func sortedEntries[M ~map[string]any](m M) []entry {
	es := make([]entry, 0, len(m))
	for k, v := range m {
		es = append(es, entry{k, v})
	}
	slices.SortFunc(es, func(x, y entry) int { return strings.Compare(x.k, y.k) })
	return es
}

// appendTime writes t in the core's wire form (UTC, milliseconds), as wireValue does; a time
// the core refuses (beyond year 9999) makes the caller take the slow path, which reports it
// with its path.
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	s, err := formatTime(t)
	if err != nil {
		return b, false
	}
	return appendString(b, s), true
}

// appendFloat writes a finite number; NaN and infinities have no JSON form (encoding/json
// reports them).
func appendFloat(b []byte, f float64, bits int) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits), true
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string: `"`, `\` and control characters escaped, invalid
// UTF-8 replaced by U+FFFD (as encoding/json does).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
