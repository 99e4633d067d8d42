package outbound

/*
#include <stdlib.h>
#include "outbound.h"
*/
import "C"

import (
	"strings"
	"unsafe"
)

// Code is a result code of liboutbound (outbound_result in include/outbound.h). Every error
// this package returns wraps one, so callers test for a kind of failure with errors.Is:
//
//	if errors.Is(err, outbound.ErrQueueFull) { ... }
//
// and read the details with errors.As and *Error.
type Code uint32

// The codes, with the values of include/outbound.h (stable: new ones are only added).
const (
	// ErrNullArgument: a required argument was missing (a bug in this package if you see it).
	ErrNullArgument Code = 1
	// ErrInvalidUTF8: a text was not valid UTF-8.
	ErrInvalidUTF8 Code = 2
	// ErrInvalidJSON: a JSON text was not valid JSON.
	ErrInvalidJSON Code = 3
	// ErrWrongType: a value had the wrong type (an array where an object is needed, a value
	// encoding/json cannot write such as a channel or a func, ...).
	ErrWrongType Code = 4
	// ErrMissingField: a required field was absent or empty ("track requires event").
	ErrMissingField Code = 5
	// ErrInvalidField: a field's value broke a rule (a timestamp out of range, NaN, a field
	// the call does not carry, ...).
	ErrInvalidField Code = 6
	// ErrMessageTooLarge: the message serializes to more than 32 KB; nothing was queued.
	ErrMessageTooLarge Code = 7
	// ErrQueueFull: the queue already holds MaxQueueSize messages; this one was dropped
	// (counted in Stats().QueueFull). Calls never wait for room.
	ErrQueueFull Code = 8
	// ErrClosed: the client is closed: nothing more can be enqueued, and Close was already
	// called.
	ErrClosed Code = 9
	// ErrConfig: NewWithConfig refused the configuration (the message names the setting).
	ErrConfig Code = 10
	// ErrInsufficientSize: an output buffer was too small (a bug in this package if you see
	// it).
	ErrInsufficientSize Code = 11
	// ErrIncomplete: a Flush or Close ended before every message had an outcome, or some
	// message failed or was dropped since the previous Flush or Close returned (see Stats
	// and the outcome callback).
	ErrIncomplete Code = 12
	// ErrBadSignature: a signature did not match.
	ErrBadSignature Code = 13
	// ErrPanic: a bug: liboutbound panicked inside the call (contained). Please report it.
	ErrPanic Code = 14
	// ErrOther: a failure this version of the package does not know how to classify.
	ErrOther Code = 15
	// ErrSpool: the spool directory or a file in it could not be used (cannot be created,
	// already used by another client of this process, a disk error); the message names the
	// path.
	ErrSpool Code = 16
	// ErrNotRecording: a recording accessor was given a client that does not record (a bug
	// in this package if you see it: a *Recording always belongs to a recording client).
	ErrNotRecording Code = 17
)

// ErrMessageTooBig is analytics-go's name for ErrMessageTooLarge.
const ErrMessageTooBig = ErrMessageTooLarge

// Error returns liboutbound's description of the code
// ("OUTBOUND_RESULT_QUEUE_FULL: the queue is full; ...").
func (c Code) Error() string {
	return C.GoString(C.outbound_result_str(C.uint32_t(c)))
}

// String returns the code's name without its description ("OUTBOUND_RESULT_QUEUE_FULL").
func (c Code) String() string {
	name, _, _ := strings.Cut(c.Error(), ":")
	return name
}

// Error is a failed call: which method, the code, and liboutbound's text of the failure (for
// a refused call it names the field: "track requires event").
type Error struct {
	// Op is the method that failed: "NewWithConfig", "Enqueue", "Flush", "Close".
	Op string
	// Code says what kind of failure it was.
	Code Code
	// Message is the text of the failure.
	Message string
	// Cause is an underlying error from Go, when there is one (the context's error of a
	// Flush, encoding/json's error for a value it cannot write); nil otherwise.
	Cause error
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Code.Error()
	}
	return "outbound: " + e.Op + ": " + msg
}

// Unwrap gives the code (so errors.Is(err, ErrQueueFull) works) and the cause, if any.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Code, e.Cause}
	}
	return []error{e.Code}
}

// takeError builds an *Error from a code and a malloc'd text from the shim, freeing the text.
func takeError(op string, rc C.outbound_result, text *C.char) *Error {
	e := &Error{Op: op, Code: Code(rc)}
	if text != nil {
		e.Message = C.GoString(text)
		C.free(unsafe.Pointer(text))
	}
	return e
}
