package outbound

/*
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"time"
)

// Go values to the JSON text liboutbound takes. The only conversions made here are of
// types: encoding/json writes the values (json tags, MarshalJSON), plain values are written
// directly (fastjson.go) to the same effect, and time.Time values in maps and slices are
// written in the core's wire form (outbound_timestamp_format), as the Python package does
// for datetime. The core parses the text, validates the message and writes the canonical
// body; every rule is there.

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeMessage writes msg into buf, in the packed form when packed is true, otherwise as
// NUL-terminated JSON text, and returns the MessageId the caller set ("" for none).
func encodeMessage(buf *bytes.Buffer, msg Message) (given string, packed bool, err error) {
	w, ok := toWire(msg)
	if !ok {
		return "", false, &Error{Op: "Enqueue", Code: ErrWrongType,
			Message: "message: a nil pointer or an unknown type; use Identify, Track, Page, Screen, Group, Alias or Delete"}
	}
	packed, err = encodeWire(buf, &w)
	return w.MessageId, packed, err
}

// encodeWire writes w into buf: in the packed form of outbound_enqueue_packed when it can
// (packed is true), otherwise as NUL-terminated JSON text. Its map fields are replaced by
// their wire forms (a copy only where a time.Time had to be written).
func encodeWire(buf *bytes.Buffer, w *wire) (packed bool, err error) {
	// One pass for the common messages: the packed form (packed.go) walks the maps once and
	// writes time.Time values itself; nothing is parsed from text in the core. Anything it
	// does not handle, or a value that is refused, takes the JSON text: the direct writer
	// (fastjson.go), or the two passes below, which also make the errors.
	fast := *w
	if c, ok := fast.Context.(*Context); ok {
		fast.Context = c.object()
	}
	if out, ok := appendPacked(buf.AvailableBuffer(), &fast); ok {
		buf.Write(out)
		return true, nil
	}
	if out, ok := appendWire(buf.AvailableBuffer(), &fast); ok {
		buf.Write(out)
		buf.WriteByte(0)
		return false, nil
	}
	return false, encodeText(buf, w)
}

// encodeText writes w's JSON text, NUL-terminated, into buf, through encoding/json where
// the direct writer cannot.
func encodeText(buf *bytes.Buffer, w *wire) error {
	var err error
	if w.Context, err = wireField("context", w.Context); err != nil {
		return err
	}
	if w.Integrations, err = wireField("integrations", w.Integrations); err != nil {
		return err
	}
	if w.Properties, err = wireField("properties", w.Properties); err != nil {
		return err
	}
	if w.Traits, err = wireField("traits", w.Traits); err != nil {
		return err
	}
	if out, ok := appendWire(buf.AvailableBuffer(), w); ok {
		buf.Write(out)
	} else {
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false) // the core writes its own escapes; this only saves bytes
		// A copy goes to encoding/json, so w itself does not escape: the caller's wire stays
		// on its stack (no allocation, no GC write barriers on the hot path).
		wc := *w
		if err := enc.Encode(&wc); err != nil {
			return marshalError(*w, err)
		}
	}
	buf.WriteByte(0)
	return nil
}

// wireField converts one map field (nil stays nil).
func wireField(name string, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if c, ok := v.(*Context); ok {
		v = c.object()
	}
	out, _, err := wireValue(v, 0)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Message = name + e.Message
		}
		return nil, err
	}
	return out, nil
}

// marshalError names the field encoding/json could not write and maps its error to a code:
// a value with no JSON form (NaN, ±Inf, a cycle) is ErrInvalidField, a type with none (a
// channel, a func, a complex number) ErrWrongType.
func marshalError(w wire, err error) error {
	field := "message"
	for _, f := range []struct {
		name string
		v    any
	}{{"context", w.Context}, {"integrations", w.Integrations}, {"properties", w.Properties}, {"traits", w.Traits}} {
		if f.v == nil {
			continue
		}
		if _, e := json.Marshal(f.v); e != nil {
			field, err = f.name, e
			break
		}
	}
	code := ErrInvalidField
	var typeErr *json.UnsupportedTypeError
	if errors.As(err, &typeErr) {
		code = ErrWrongType
	}
	return &Error{Op: "Enqueue", Code: code, Message: field + ": " + err.Error(), Cause: err}
}

// formatTime is the core's wire form of t: UTC with milliseconds.
func formatTime(t time.Time) (string, error) {
	r := C.gob_timestamp_format(C.int64_t(t.Unix()), C.uint32_t(t.Nanosecond()))
	if r.rc != 0 {
		e := takeError("Enqueue", r.rc, r.err)
		e.Message = ": " + e.Message // after the value's path, added on the way out
		return "", e
	}
	return C.GoString(&r.text[0]), nil
}

// maxDepth bounds the walk; deeper values are left to encoding/json (which reports cycles).
const maxDepth = 1000

// wireValue returns v with every time.Time (and non-nil *time.Time) inside maps and slices
// replaced by its wire form; changed says whether anything was. Containers are copied only
// when something in them changes; the caller's values are never modified. Struct values are
// left to encoding/json, json tags and MarshalJSON included (a time.Time field in a struct is
// written by time.Time's own MarshalJSON: RFC 3339 with its offset and nanoseconds).
func wireValue(v any, depth int) (out any, changed bool, err error) {
	if depth > maxDepth {
		return v, false, nil
	}
	switch x := v.(type) {
	case nil, string, bool, float64, float32, int, int64, int32, int16, int8,
		uint, uint64, uint32, uint16, uint8, json.Number, json.RawMessage, []string:
		return v, false, nil
	case time.Time:
		s, err := formatTime(x)
		return s, true, err
	case *time.Time:
		if x == nil {
			return v, false, nil
		}
		s, err := formatTime(*x)
		return s, true, err
	case map[string]any:
		return wireMap(x, depth)
	case Properties:
		return wireMap(x, depth)
	case Traits:
		return wireMap(x, depth)
	case Integrations:
		return wireMap(x, depth)
	case []any:
		return wireSlice(v, len(x), func(i int) any { return x[i] }, depth)
	}
	rv := reflect.ValueOf(v)
	if !mayHoldTime(rv.Type()) {
		return v, false, nil
	}
	switch rv.Kind() {
	case reflect.Map:
		if rv.IsNil() {
			return v, false, nil
		}
		m := make(map[string]any, rv.Len())
		seen := false
		for it := rv.MapRange(); it.Next(); {
			e, c, err := wireValue(it.Value().Interface(), depth+1)
			if err != nil {
				return nil, false, keyed(err, it.Key().String())
			}
			m[it.Key().String()] = e
			seen = seen || c
		}
		if !seen {
			return v, false, nil
		}
		return m, true, nil
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return v, false, nil
		}
		return wireSlice(v, rv.Len(), func(i int) any { return rv.Index(i).Interface() }, depth)
	case reflect.Pointer:
		if rv.IsNil() {
			return v, false, nil
		}
		return wireValue(rv.Elem().Interface(), depth+1)
	}
	return v, false, nil
}

func wireMap[M ~map[string]any](m M, depth int) (any, bool, error) {
	var out map[string]any
	for k, e := range m {
		w, c, err := wireValue(e, depth+1)
		if err != nil {
			return nil, false, keyed(err, k)
		}
		if c && out == nil {
			out = make(map[string]any, len(m))
			for k2, e2 := range m {
				out[k2] = e2
			}
		}
		if out != nil {
			out[k] = w
		}
	}
	if out == nil {
		return m, false, nil
	}
	return out, true, nil
}

func wireSlice(orig any, n int, at func(int) any, depth int) (any, bool, error) {
	var out []any
	for i := 0; i < n; i++ {
		w, c, err := wireValue(at(i), depth+1)
		if err != nil {
			return nil, false, indexed(err, i)
		}
		if c && out == nil {
			out = make([]any, n)
			for j := 0; j < i; j++ {
				out[j] = at(j)
			}
		}
		if out != nil {
			out[i] = w
		}
	}
	if out == nil {
		return orig, false, nil
	}
	return out, true, nil
}

// keyed and indexed prefix an error's message with where the value sits, innermost last:
// properties.when[2].
func keyed(err error, key string) error {
	var e *Error
	if errors.As(err, &e) {
		e.Message = "." + key + e.Message
	}
	return err
}

func indexed(err error, i int) error {
	var e *Error
	if errors.As(err, &e) {
		e.Message = "[" + strconv.Itoa(i) + "]" + e.Message
	}
	return err
}

var (
	timeType          = reflect.TypeOf(time.Time{})
	jsonMarshalerType = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	textMarshalerType = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
	holdsTime         sync.Map // reflect.Type -> bool
)

// mayHoldTime says whether a value of type t can have a time.Time in a map or slice (so the
// walk must look inside); cached per type.
func mayHoldTime(t reflect.Type) bool {
	if v, ok := holdsTime.Load(t); ok {
		return v.(bool)
	}
	r := holdsTimeIn(t, map[reflect.Type]bool{})
	holdsTime.Store(t, r)
	return r
}

func holdsTimeIn(t reflect.Type, visiting map[reflect.Type]bool) bool {
	if t == timeType {
		return true
	}
	if visiting[t] {
		return false // a recursive type: its other branches decide
	}
	visiting[t] = true
	if t.Kind() != reflect.Interface && (t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) ||
		reflect.PointerTo(t).Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType)) {
		return false // the type writes itself
	}
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Map:
		return t.Key().Kind() == reflect.String && holdsTimeIn(t.Elem(), visiting)
	case reflect.Slice, reflect.Array:
		return t.Elem().Kind() != reflect.Uint8 && holdsTimeIn(t.Elem(), visiting)
	case reflect.Pointer:
		return holdsTimeIn(t.Elem(), visiting)
	}
	return false
}

// MarshalJSON writes the context as it is sent (zero fields left out, Extra merged), for
// code that marshals a Context itself.
func (c Context) MarshalJSON() ([]byte, error) {
	v, err := wireField("context", &c)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}
