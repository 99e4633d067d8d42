package analytics

import (
	"errors"
	"strings"

	outbound "outbound.invalid/bindings/go"
)

// The codes of package outbound that errors of this package wrap: test them with errors.Is
// (errors.Is(err, analytics.ErrMissingField)) and read the details with errors.As and
// *outbound.Error.
const (
	ErrMissingField    = outbound.ErrMissingField    // a required field is empty: v2's sentences
	ErrInvalidField    = outbound.ErrInvalidField    // a value broke a rule (a timestamp, NaN, ...)
	ErrWrongType       = outbound.ErrWrongType       // a value of a type JSON cannot hold; a nil message
	ErrMessageTooLarge = outbound.ErrMessageTooLarge // over 32 KB serialized
	ErrQueueFull       = outbound.ErrQueueFull       // MaxQueueSize messages wait already, and QueueFullWait passed
	ErrClosed          = outbound.ErrClosed          // a call or a second Close after Close
	ErrConfig          = outbound.ErrConfig          // the Client's fields were refused (first call)
	ErrIncomplete      = outbound.ErrIncomplete      // Close could not deliver everything
)

// v2Sentences are analytics-go v2's texts for a missing field, by the name the core gives
// the field in its error ("track requires event" names "event").
var v2Sentences = map[string]string{
	"event":                   "You must pass 'event'.",
	"group_id":                "You must pass a 'groupId'.",
	"user_id":                 "You must pass a 'userId'.",
	"previous_id":             "You must pass a 'previousId'.",
	"user_id or anonymous_id": "You must pass either an 'anonymousId' or 'userId'.",
}

// FieldError is a call refused because a required field is empty, with v2's text.
// Unwrap gives the core's *outbound.Error, so errors.Is(err, ErrMissingField) holds.
type FieldError struct {
	// Field is the field's name in the core's error ("event", "user_id or anonymous_id").
	Field string
	text  string
	err   *outbound.Error
}

func (e *FieldError) Error() string { return e.text }

// Unwrap returns the core's error ("outbound: Enqueue: track requires event").
func (e *FieldError) Unwrap() error { return e.err }

// v2Error turns the core's missing-field error into v2's sentence, derived from the field
// the core names; other errors are returned as they are.
func v2Error(err error) error {
	var e *outbound.Error
	if !errors.As(err, &e) || e.Code != outbound.ErrMissingField {
		return err
	}
	_, field, ok := strings.Cut(e.Message, " requires ")
	if !ok {
		return err
	}
	text, ok := v2Sentences[field]
	if !ok {
		text = "You must pass '" + camel(field) + "'."
	}
	return &FieldError{Field: field, text: text, err: e}
}

// camel writes a core field name as the JSON key (group_id -> groupId).
func camel(field string) string {
	parts := strings.Split(field, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}
