package outbound

/*
#include <stdint.h>
*/
import "C"

import (
	"fmt"
	"log"
	"os"
	"runtime/cgo"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// OutcomeKind is how a message ended.
type OutcomeKind string

// The three endings of an accepted message.
const (
	Delivered OutcomeKind = "delivered"
	Failed    OutcomeKind = "failed"
	Dropped   OutcomeKind = "dropped"
)

// Outcome is how one accepted message ended.
type Outcome struct {
	// MessageId is the id of the message (the one Enqueue used).
	MessageId string
	// Kind is Delivered, Failed or Dropped.
	Kind OutcomeKind
	// Detail says why, when not delivered ("ingestion: status 400", "client closed before
	// delivery"); "" when delivered.
	Detail string
	// Subscription is the name of the subscription this outcome is of (Config.Subscriptions),
	// "" for the message's own outcome (its ingestion and webhooks). A message has its own
	// outcome when it has a destination of its own, and one per subscription it matched.
	Subscription string
}

// OutcomeError is the error a Callback's Failure receives.
type OutcomeError struct {
	Outcome
}

func (e *OutcomeError) Error() string {
	return "outbound: message " + e.MessageId + " " + string(e.Kind) + ": " + e.Detail
}

// Callback is analytics-go's outcome interface: Success for a delivered message, Failure
// (with an *OutcomeError) for one that failed or was dropped.
type Callback interface {
	Success(Message)
	Failure(Message, error)
}

// Logger is analytics-go's logger interface.
type Logger interface {
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
}

// StdLogger adapts a *log.Logger to Logger (lines prefixed "INFO: " and "ERROR: ").
func StdLogger(logger *log.Logger) Logger { return stdLogger{logger} }

type stdLogger struct{ l *log.Logger }

func (s stdLogger) Logf(format string, args ...any)   { s.l.Printf("INFO: "+format, args...) }
func (s stdLogger) Errorf(format string, args ...any) { s.l.Printf("ERROR: "+format, args...) }

// callbacks is what the core's threads reach through the cgo.Handle given as userdata. It
// holds no reference to the client, so an unreachable client can still be finalized.
type callbacks struct {
	onOutcome func(Outcome)
	callback  Callback
	logger    Logger

	// For Callback: the message of each id until its outcome. An outcome can come before
	// Enqueue has recorded its message (a message dropped at once); it then waits in early
	// and Enqueue reports it.
	mu        sync.Mutex
	pending   map[string]Message
	early     map[string]Outcome
	enqueuing atomic.Int64 // Enqueue calls that may still report an early outcome
}

func newCallbacks(c Config) *callbacks {
	if c.Callback == nil && c.OnOutcome == nil && c.Logger == nil {
		return nil
	}
	cb := &callbacks{onOutcome: c.OnOutcome, callback: c.Callback, logger: c.Logger}
	if c.Callback != nil {
		cb.pending = make(map[string]Message)
		cb.early = make(map[string]Outcome)
	}
	return cb
}

// record keeps msg for its outcome, or reports the outcome if it came first.
func (cb *callbacks) record(id string, msg Message) {
	cb.mu.Lock()
	if o, ok := cb.early[id]; ok {
		delete(cb.early, id)
		cb.mu.Unlock()
		cb.dispatch(msg, o)
		return
	}
	cb.pending[id] = msg
	cb.mu.Unlock()
}

func (cb *callbacks) outcome(o Outcome) {
	if cb.onOutcome != nil {
		cb.guard("OnOutcome", func() { cb.onOutcome(o) })
	}
	// Callback is told of each message's own outcome only (NewWithConfig refuses it with
	// Subscriptions).
	if cb.callback == nil || o.Subscription != "" {
		return
	}
	cb.mu.Lock()
	msg, ok := cb.pending[o.MessageId]
	if ok {
		delete(cb.pending, o.MessageId)
	} else {
		cb.early[o.MessageId] = o
	}
	cb.mu.Unlock()
	if ok {
		cb.dispatch(msg, o)
	}
}

func (cb *callbacks) dispatch(msg Message, o Outcome) {
	cb.guard("Callback", func() {
		if o.Kind == Delivered {
			cb.callback.Success(msg)
		} else {
			cb.callback.Failure(msg, &OutcomeError{o})
		}
	})
}

// guard contains a panic of user code: it runs on one of the core's threads, where a panic
// would end the process. It is logged with its stack, like net/http does for handlers.
func (cb *callbacks) guard(what string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("outbound: panic in %s: %v\n%s", what, r, debug.Stack())
			if cb.logger != nil && what != "Logger" {
				cb.logger.Errorf("%s", msg)
			} else {
				fmt.Fprintln(os.Stderr, msg)
			}
		}
	}()
	f()
}

//export goOutboundOutcome
func goOutboundOutcome(messageID, outcome, detail, subscription *C.char, handle C.uintptr_t) {
	cb := cgo.Handle(handle).Value().(*callbacks)
	cb.outcome(Outcome{
		MessageId:    C.GoString(messageID),
		Kind:         outcomeKind(C.GoString(outcome)),
		Detail:       C.GoString(detail),
		Subscription: C.GoString(subscription), // NULL: ""
	})
}

// outcomeKind returns the constant for s, so the three kinds share their strings.
func outcomeKind(s string) OutcomeKind {
	switch OutcomeKind(s) {
	case Delivered:
		return Delivered
	case Failed:
		return Failed
	case Dropped:
		return Dropped
	}
	return OutcomeKind(s)
}

//export goOutboundLog
func goOutboundLog(level C.uint32_t, line *C.char, handle C.uintptr_t) {
	cb := cgo.Handle(handle).Value().(*callbacks)
	text := C.GoString(line)
	cb.guard("Logger", func() {
		if level == 0 { // OUTBOUND_LOG_LEVEL_DEBUG
			cb.logger.Logf("%s", text)
		} else {
			cb.logger.Errorf("%s", text)
		}
	})
}
