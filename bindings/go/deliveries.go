package outbound

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"net/http"
	"time"
	"unsafe"
)

// DeliveryRecords is a client's record of its webhook deliveries: each URL's last attempts and
// health, and its dead letters (with Config.DeadLetters and a Spool) to list, read, delete and
// replay. The Client that New, NewWithConfig and NewRecording return implements it (it is not
// part of Client, so that existing implementations of Client, such as test doubles, keep
// compiling):
//
//	records := client.(outbound.DeliveryRecords)
//	page, err := records.DeadLetters(outbound.DeadLetterQuery{Limit: 100})
//
// Every rule is liboutbound's; the methods convert. After Close they return ErrClosed.
type DeliveryRecords interface {
	// WebhookAttempts returns webhook i's last attempts (up to 100, any outcome), newest
	// first: message id, time, duration, status or error class, and for failures the first
	// 64 KiB of the answer and the headers. Kept in memory for URLs with recent traffic
	// (Config.AttemptLogSize, Config.AttemptRetention): empty for a URL with none. An i
	// that is no webhook of the client is ErrInvalidField naming webhook.
	WebhookAttempts(i int) ([]WebhookAttempt, error)
	// WebhookHealth returns each webhook URL's health, in the order of Config.Webhooks.
	WebhookHealth() ([]WebhookHealth, error)
	// DeadLetters returns one page of dead letters, newest first, without their bodies. A
	// Limit of 0 or above 1,000, or a Cursor no page gave, is ErrInvalidField naming it; a
	// client without Config.DeadLetters gets ErrConfig naming dead_letters.
	DeadLetters(q DeadLetterQuery) (DeadLetterPage, error)
	// DeadLetter returns the dead letter of message messageID with its Body, or nil when
	// there is none.
	DeadLetter(messageID string) (*DeadLetter, error)
	// DeleteDeadLetter discards the dead letter of message messageID and says whether there
	// was one.
	DeleteDeadLetter(messageID string) (bool, error)
	// ReplayDeadLetter sends the dead letter of message messageID again through the normal
	// path: the same messageId, a fresh retry window, signed with the current secret, to
	// every webhook (webhook AllWebhooks) or to webhook webhook alone. It stays listed (as
	// Replaying) until the replay has an outcome: delivered, it leaves the dead letters;
	// failed, it is back with its new attempts. Its outcome reaches OnOutcome and Stats as a
	// resumed message's. nil when there is no such dead letter, or it is being replayed
	// already.
	ReplayDeadLetter(messageID string, webhook int) (*ReplayProgress, error)
	// ReplayDeadLetters replays, in the background, every dead letter that failed at or
	// after since and before until (a zero time leaves that end open), to every webhook
	// (AllWebhooks) or to webhook webhook alone; follow it with ReplayProgress. A range with
	// nothing to replay gives a done replay of ID 0 and Total 0.
	ReplayDeadLetters(since, until time.Time, webhook int) (ReplayProgress, error)
	// ReplayProgress returns how replay id goes, or nil when it is not known (the newest 256
	// replays of the process are kept).
	ReplayProgress(id uint64) (*ReplayProgress, error)
	// DeadLetterStats returns how many dead letters are kept, their bytes, and how many the
	// limits dropped.
	DeadLetterStats() (DeadLetterStats, error)
}

// AttemptQuerier picks among a webhook URL's kept attempts. The Client that New,
// NewWithConfig and NewRecording return implements it, apart from DeliveryRecords so that
// your own implementations of DeliveryRecords keep compiling:
//
//	failed, err := client.(outbound.AttemptQuerier).WebhookAttemptsWhere(0,
//		outbound.AttemptQuery{Result: outbound.AttemptPermanent, Limit: 100})
type AttemptQuerier interface {
	// WebhookAttemptsWhere returns webhook i's kept attempts that q asks for, newest first,
	// as WebhookAttempts gives them. A Limit outside 1 to 10,000 is ErrInvalidField naming
	// limit, an i that is no webhook of the client ErrInvalidField naming webhook.
	WebhookAttemptsWhere(i int, q AttemptQuery) ([]WebhookAttempt, error)
}

// AttemptQuery says which of a URL's kept attempts WebhookAttemptsWhere returns; a zero
// field keeps any.
type AttemptQuery struct {
	// Result keeps those with this result.
	Result AttemptResult
	// Status keeps those answered with this status.
	Status int
	// MessageId keeps those of this message.
	MessageId string
	// Since keeps those sent at or after it.
	Since time.Time
	// Until keeps those sent before it.
	Until time.Time
	// Limit is the most to return, the newest: 1 to 10,000 (there is no default: 0 is
	// refused, as DeadLetterQuery's).
	Limit int
}

// AllWebhooks is the webhook of a replay to every webhook of the client.
const AllWebhooks = -1

// AttemptResult is what an attempt meant for its message.
type AttemptResult string

// The results of an attempt.
const (
	// AttemptDelivered: a 2xx answer.
	AttemptDelivered AttemptResult = "delivered"
	// AttemptRetryable: a failure worth another try (5xx, 408, 429, timeouts, connection
	// errors).
	AttemptRetryable AttemptResult = "retryable"
	// AttemptPermanent: a failure retrying would not mend (other 4xx, 3xx, certificates,
	// blocked).
	AttemptPermanent AttemptResult = "permanent"
)

// WebhookAttempt is one request to a webhook URL.
type WebhookAttempt struct {
	// Webhook is the webhook's index in Config.Webhooks.
	Webhook int
	// MessageId is the message it carried.
	MessageId string
	// At is when the request went out (millisecond precision).
	At time.Time
	// Duration is how long the exchange took (connect, send, answer; microsecond precision).
	Duration time.Duration
	// Result is what it meant for the message.
	Result AttemptResult
	// Status is the answer's status; 0 when no answer came.
	Status int
	// ErrorClass says how it failed when no status came (or the network guard refused it):
	// "timeout", "refused", "reset", "tls", "dns", "blocked", "connection" or "other"; ""
	// otherwise.
	ErrorClass string
	// Detail is what went wrong, in words ("status 503"); "" for a delivery.
	Detail string
	// Answer is, for a failure, the first bytes of the answer's body (up to 64 KiB in a URL's
	// log, 1 KiB in a dead letter's LastAttempts); nil when none was kept.
	Answer []byte
	// RequestHeaders are, for a failure in a URL's log, the request's headers, the value of
	// any that authorizes or signs (Authorization, X-Signature, a name holding token,
	// secret, key, auth, cookie, password) as "[redacted]"; nil otherwise. Read them with
	// Get, in any case.
	RequestHeaders http.Header
	// AnswerHeaders are, for a failure in a URL's log that got an answer, the answer's
	// headers (credentials redacted as above); nil otherwise.
	AnswerHeaders http.Header
}

// HealthState is where a webhook URL stands.
type HealthState string

// The states of a webhook URL.
const (
	// HealthHealthy: its last request succeeded (or none was made).
	HealthHealthy HealthState = "healthy"
	// HealthFailing: its last requests failed.
	HealthFailing HealthState = "failing"
	// HealthCircuitOpen: so many failed in a row that it is sent one probe at a time until
	// one succeeds.
	HealthCircuitOpen HealthState = "circuit_open"
	// HealthThrottled: its last requests succeeded, and messages wait for its
	// Webhook.RateLimit.
	HealthThrottled HealthState = "throttled"
	// HealthDisabled: BlockPrivateNetworks refuses its address whatever DNS says; nothing is
	// sent to it.
	HealthDisabled HealthState = "disabled"
)

// WebhookHealth is a webhook URL's health: its state, and its last five minutes.
type WebhookHealth struct {
	// Webhook is the webhook's index in Config.Webhooks.
	Webhook int
	// URL is its URL as logs show it: scheme, host and port, anything after them as "/…"
	// (a path or query string can carry a token).
	URL string
	// State is healthy, failing, circuit open, throttled or disabled.
	State HealthState
	// Attempts5m are the requests answered (or failed) in the last five minutes.
	Attempts5m uint64
	// Delivered5m are those of them that delivered.
	Delivered5m uint64
	// SuccessRate5m is Delivered5m / Attempts5m; 0 when Attempts5m is 0.
	SuccessRate5m float64
	// P50Latency5m and P99Latency5m are the median and the 99th percentile of those
	// exchanges' durations (within 10 %); 0 when Attempts5m is 0.
	P50Latency5m, P99Latency5m time.Duration
	// ConsecutiveFailures are the failed requests since its last success.
	ConsecutiveFailures int
	// LastErrorAt is when its last request failed and LastError why; the zero time and ""
	// when none did.
	LastErrorAt time.Time
	LastError   string
	// LastSuccess is when its last request succeeded; the zero time when none did.
	LastSuccess time.Time
	// Waiting are the messages still to be delivered to it (queued, in flight, or waiting
	// to be retried).
	Waiting uint64
	// Throttled are the requests that waited for its Webhook.RateLimit before going out,
	// since the client started.
	Throttled uint64
	// Messages says what became of the messages sent to it, since the client started.
	Messages MessageCounts
}

// MessageCounts says what became of the messages sent to one webhook URL. Success at any one
// URL is success: a message this URL failed and another took is delivered, yet counted here
// as Failed or Abandoned, never Delivered.
type MessageCounts struct {
	// Delivered are the messages it answered with 2xx.
	Delivered uint64
	// Failed are the messages it refused for good (a status retrying would not mend, a
	// certificate, the network guard), or kept failing until their retry window closed.
	Failed uint64
	// Retrying are the messages it has failed and will try again, now.
	Retrying uint64
	// Abandoned are the messages it had failed and was to try again when another URL took
	// them: not tried here again.
	Abandoned uint64
}

// DeadLetter is a message whose webhook delivery failed for good (its retry window closed, a
// permanent 4xx, a 410, the network guard's refusal), kept with Config.DeadLetters.
type DeadLetter struct {
	// MessageId is its messageId: a replay sends it again under the same one.
	MessageId string
	// FailedAt is when it failed (millisecond precision).
	FailedAt time.Time
	// Reason is why, as its outcome said it: "status 400", "gone", "blocked", "expired", ...
	Reason string
	// Detail is the outcome's detail ("webhooks: status 400").
	Detail string
	// Rounds are the webhook rounds it was sent in.
	Rounds int
	// FirstAttempt is when its first attempt went out; the zero time if never.
	FirstAttempt time.Time
	// LastAttempts are each URL's last attempt.
	LastAttempts []WebhookAttempt
	// Size is the webhook body's length in bytes.
	Size int64
	// Replaying says a replay of it is under way.
	Replaying bool
	// Body is the webhook body as it was sent: only from DeadLetter; nil in a page.
	Body []byte
}

// DeadLetterQuery says which dead letters DeadLetters lists: newest first, Limit at a time.
type DeadLetterQuery struct {
	// Since and Until keep those that failed at or after Since and before Until; a zero
	// time leaves that end open.
	Since, Until time.Time
	// Limit is the most the page holds: 1 to 1,000 (0 is refused).
	Limit int
	// Cursor is where the page starts: the Next of the page before ("" for the newest).
	Cursor string
	// Contains keeps those whose event (its JSON as sent) holds this text: exact bytes and
	// case, so `"userId":"u7"` finds u7 and not u70; up to 256 bytes ("" keeps them all). A
	// search reads at most 10,000 dead letters a page, so a page may hold fewer than Limit
	// while Next is set: page on.
	Contains string
}

// DeadLetterPage is one page of dead letters.
type DeadLetterPage struct {
	// Letters are newest first, without their bodies.
	Letters []DeadLetter
	// Next is the Cursor of the next page; "" when there is none.
	Next string
}

// DeadLetterStats are a client's dead letters in all.
type DeadLetterStats struct {
	// Count is the dead letters kept now.
	Count uint64
	// Bytes is their bytes, as Config.DeadLetterMaxBytes counts them.
	Bytes uint64
	// Evicted are those dropped, oldest first, to stay within DeadLetterMaxBytes (since the
	// spool was opened).
	Evicted uint64
	// Expired are those dropped after DeadLetterRetention (since the spool was opened).
	Expired uint64
}

// ReplayProgress is how a replay of dead letters goes.
type ReplayProgress struct {
	// ID is the replay's number, for ReplayProgress (0: a range with nothing to replay).
	ID uint64
	// Total are the dead letters it took (those of its range not already replaying).
	Total uint64
	// Sent are those handed to delivery so far.
	Sent uint64
	// Delivered are those delivered: they left the dead letters.
	Delivered uint64
	// Failed are those that failed again: back in the dead letters with their new attempts.
	Failed uint64
	// Skipped are those gone before their turn (deleted, or dropped by the limits).
	Skipped uint64
	// Started is when it started (millisecond precision).
	Started time.Time
	// Done says every dead letter it took has an outcome.
	Done bool
}

// records runs call with the live C client, or returns ErrClosed for op.
func (c *client) records(op string, call func(*C.outbound_client) C.gob_status) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ptr == nil {
		return &Error{Op: op, Code: ErrClosed, Message: "the client is closed"}
	}
	if s := call(c.ptr); s.rc != 0 {
		return takeError(op, s.rc, s.err)
	}
	return nil
}

func (c *client) WebhookAttempts(i int) ([]WebhookAttempt, error) {
	var list *C.outbound_webhook_attempt_list
	err := c.records("WebhookAttempts", func(p *C.outbound_client) C.gob_status {
		return C.gob_webhook_attempts(p, C.size_t(i), &list)
	})
	if err != nil {
		return nil, err
	}
	return attemptsOf(list), nil
}

func (c *client) WebhookAttemptsWhere(i int, q AttemptQuery) ([]WebhookAttempt, error) {
	query := C.outbound_attempt_query{
		status:   C.uint16_t(q.Status),
		since_ms: millisOf(q.Since),
		until_ms: millisOf(q.Until),
		limit:    C.size_t(q.Limit),
	}
	if q.Status < 0 || q.Status > 65535 {
		return nil, &Error{Op: "WebhookAttemptsWhere", Code: ErrInvalidField,
			Message: fmt.Sprintf("invalid status: must be 0 to 65535, got %d", q.Status)}
	}
	if q.Result != "" {
		query.result = C.CString(string(q.Result))
		defer C.free(unsafe.Pointer(query.result))
	}
	if q.MessageId != "" {
		query.message_id = C.CString(q.MessageId)
		defer C.free(unsafe.Pointer(query.message_id))
	}
	var list *C.outbound_webhook_attempt_list
	err := c.records("WebhookAttemptsWhere", func(p *C.outbound_client) C.gob_status {
		return C.gob_webhook_attempts_where(p, C.size_t(i), &query, &list)
	})
	if err != nil {
		return nil, err
	}
	return attemptsOf(list), nil
}

// attemptsOf copies an attempt list out of liboutbound, with each attempt's headers, and
// frees it.
func attemptsOf(list *C.outbound_webhook_attempt_list) []WebhookAttempt {
	defer C.outbound_webhook_attempt_list_free(list)
	attempts := make([]WebhookAttempt, int(C.outbound_webhook_attempt_list_len(list)))
	for j := range attempts {
		attempts[j] = attemptOf(C.outbound_webhook_attempt_list_get(list, C.size_t(j)))
		h := C.outbound_webhook_attempt_list_headers(list, C.size_t(j))
		attempts[j].RequestHeaders = headersOf(h.request_headers, h.request_headers_len)
		attempts[j].AnswerHeaders = headersOf(h.answer_headers, h.answer_headers_len)
	}
	return attempts
}

// headersOf copies n headers out of liboutbound; nil for none.
func headersOf(p *C.outbound_recorded_header, n C.size_t) http.Header {
	if p == nil {
		return nil
	}
	headers := make(http.Header, int(n))
	for _, h := range unsafe.Slice(p, int(n)) {
		headers.Add(C.GoString(h.name), C.GoString(h.value))
	}
	return headers
}

func (c *client) WebhookHealth() ([]WebhookHealth, error) {
	var list *C.outbound_webhook_health_list
	err := c.records("WebhookHealth", func(p *C.outbound_client) C.gob_status {
		return C.gob_webhook_health(p, &list)
	})
	if err != nil {
		return nil, err
	}
	defer C.outbound_webhook_health_list_free(list)
	health := make([]WebhookHealth, int(C.outbound_webhook_health_list_len(list)))
	for j := range health {
		h := C.outbound_webhook_health_list_get(list, C.size_t(j))
		health[j] = WebhookHealth{
			Webhook: int(h.webhook), URL: C.GoString(h.url), State: HealthState(C.GoString(h.state)),
			Attempts5m: uint64(h.attempts_5m), Delivered5m: uint64(h.delivered_5m),
			SuccessRate5m: max(float64(h.success_rate_5m), 0), // -1: no attempts
			P50Latency5m:  micros(h.p50_5m_us), P99Latency5m: micros(h.p99_5m_us),
			ConsecutiveFailures: int(h.consecutive_failures),
			LastErrorAt:         unixMillis(h.last_error_ms), LastError: optString(h.last_error),
			LastSuccess: unixMillis(h.last_success_ms), Waiting: uint64(h.waiting),
			Throttled: uint64(h.throttled),
			Messages: MessageCounts{
				Delivered: uint64(h.messages.delivered), Failed: uint64(h.messages.failed),
				Retrying: uint64(h.messages.retrying), Abandoned: uint64(h.messages.abandoned),
			},
		}
	}
	return health, nil
}

func (c *client) DeadLetters(q DeadLetterQuery) (DeadLetterPage, error) {
	var cursor *C.char
	if q.Cursor != "" {
		cursor = C.CString(q.Cursor)
		defer C.free(unsafe.Pointer(cursor))
	}
	var contains *C.char
	if q.Contains != "" {
		contains = C.CString(q.Contains)
		defer C.free(unsafe.Pointer(contains))
	}
	var list *C.outbound_dead_letter_list
	err := c.records("DeadLetters", func(p *C.outbound_client) C.gob_status {
		return C.gob_dead_letters(p, millisOf(q.Since), millisOf(q.Until), C.size_t(q.Limit), cursor, contains, &list)
	})
	if err != nil {
		return DeadLetterPage{}, err
	}
	defer C.outbound_dead_letter_list_free(list)
	return DeadLetterPage{Letters: lettersOf(list), Next: optString(C.outbound_dead_letter_list_next(list))}, nil
}

func (c *client) DeadLetter(messageID string) (*DeadLetter, error) {
	id := C.CString(messageID)
	defer C.free(unsafe.Pointer(id))
	var list *C.outbound_dead_letter_list
	err := c.records("DeadLetter", func(p *C.outbound_client) C.gob_status {
		return C.gob_dead_letter(p, id, &list)
	})
	if err != nil {
		return nil, err
	}
	defer C.outbound_dead_letter_list_free(list)
	if letters := lettersOf(list); len(letters) == 1 {
		return &letters[0], nil
	}
	return nil, nil
}

func (c *client) DeleteDeadLetter(messageID string) (bool, error) {
	id := C.CString(messageID)
	defer C.free(unsafe.Pointer(id))
	var found C.bool
	err := c.records("DeleteDeadLetter", func(p *C.outbound_client) C.gob_status {
		return C.gob_delete_dead_letter(p, id, &found)
	})
	return bool(found), err
}

func (c *client) ReplayDeadLetter(messageID string, webhook int) (*ReplayProgress, error) {
	id := C.CString(messageID)
	defer C.free(unsafe.Pointer(id))
	var out C.outbound_replay_progress
	var found C.bool
	// AllWebhooks (-1) becomes OUTBOUND_ALL_WEBHOOKS (SIZE_MAX) in the conversion.
	err := c.records("ReplayDeadLetter", func(p *C.outbound_client) C.gob_status {
		return C.gob_replay_dead_letter(p, id, C.size_t(webhook), &out, &found)
	})
	if err != nil || !bool(found) {
		return nil, err
	}
	progress := progressOf(&out)
	return &progress, nil
}

func (c *client) ReplayDeadLetters(since, until time.Time, webhook int) (ReplayProgress, error) {
	var out C.outbound_replay_progress
	err := c.records("ReplayDeadLetters", func(p *C.outbound_client) C.gob_status {
		return C.gob_replay_dead_letters(p, millisOf(since), millisOf(until), C.size_t(webhook), &out)
	})
	if err != nil {
		return ReplayProgress{}, err
	}
	return progressOf(&out), nil
}

func (c *client) ReplayProgress(id uint64) (*ReplayProgress, error) {
	var out C.outbound_replay_progress
	var found C.bool
	err := c.records("ReplayProgress", func(p *C.outbound_client) C.gob_status {
		return C.gob_replay_progress(p, C.uint64_t(id), &out, &found)
	})
	if err != nil || !bool(found) {
		return nil, err
	}
	progress := progressOf(&out)
	return &progress, nil
}

func (c *client) DeadLetterStats() (DeadLetterStats, error) {
	var out C.outbound_dead_letter_stats
	err := c.records("DeadLetterStats", func(p *C.outbound_client) C.gob_status {
		return C.gob_dead_letter_stats(p, &out)
	})
	if err != nil {
		return DeadLetterStats{}, err
	}
	return DeadLetterStats{Count: uint64(out.count), Bytes: uint64(out.bytes),
		Evicted: uint64(out.evicted), Expired: uint64(out.expired)}, nil
}

func attemptOf(a *C.outbound_webhook_attempt) WebhookAttempt {
	return WebhookAttempt{
		Webhook: int(a.webhook), MessageId: C.GoString(a.message_id), At: unixMillis(a.at_ms),
		Duration: micros(a.duration_us), Result: AttemptResult(C.GoString(a.result)),
		Status: int(a.status), ErrorClass: optString(a.error), Detail: C.GoString(a.detail),
		Answer: optBytes(a.answer, a.answer_len),
	}
}

// lettersOf copies a dead letter list out of liboutbound.
func lettersOf(list *C.outbound_dead_letter_list) []DeadLetter {
	letters := make([]DeadLetter, int(C.outbound_dead_letter_list_len(list)))
	for i := range letters {
		d := C.outbound_dead_letter_list_get(list, C.size_t(i))
		var last []WebhookAttempt
		for _, a := range unsafe.Slice(d.last_attempts, int(d.last_attempts_len)) {
			last = append(last, attemptOf(&a))
		}
		letters[i] = DeadLetter{
			MessageId: C.GoString(d.message_id), FailedAt: unixMillis(d.failed_at_ms),
			Reason: C.GoString(d.reason), Detail: C.GoString(d.detail), Rounds: int(d.rounds),
			FirstAttempt: unixMillis(d.first_attempt_ms), LastAttempts: last,
			Size: int64(d.size), Replaying: bool(d.replaying), Body: optBytes(d.body, d.body_len),
		}
	}
	return letters
}

func progressOf(p *C.outbound_replay_progress) ReplayProgress {
	return ReplayProgress{
		ID: uint64(p.id), Total: uint64(p.total), Sent: uint64(p.sent),
		Delivered: uint64(p.delivered), Failed: uint64(p.failed), Skipped: uint64(p.skipped),
		Started: unixMillis(p.started_ms), Done: bool(p.done),
	}
}

// unixMillis is the time of liboutbound's Unix milliseconds; the zero time for
// OUTBOUND_TIME_NONE.
func unixMillis(ms C.int64_t) time.Time {
	if ms == C.OUTBOUND_TIME_NONE {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms))
}

// millisOf is t in Unix milliseconds for liboutbound; OUTBOUND_TIME_NONE for the zero time.
func millisOf(t time.Time) C.int64_t {
	if t.IsZero() {
		return C.OUTBOUND_TIME_NONE
	}
	return C.int64_t(t.UnixMilli())
}

// micros is liboutbound's microseconds as a Duration; 0 for OUTBOUND_DURATION_NONE.
func micros(us C.uint64_t) time.Duration {
	if us == C.OUTBOUND_DURATION_NONE {
		return 0
	}
	return time.Duration(us) * time.Microsecond
}

func optString(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

func optBytes(p *C.uint8_t, n C.size_t) []byte {
	if p == nil {
		return nil
	}
	return C.GoBytes(unsafe.Pointer(p), C.int(n))
}

func (f failedClient) WebhookAttempts(int) ([]WebhookAttempt, error) { return nil, f.err }
func (f failedClient) WebhookHealth() ([]WebhookHealth, error)       { return nil, f.err }
func (f failedClient) WebhookAttemptsWhere(int, AttemptQuery) ([]WebhookAttempt, error) {
	return nil, f.err
}
func (f failedClient) DeadLetters(DeadLetterQuery) (DeadLetterPage, error) {
	return DeadLetterPage{}, f.err
}
func (f failedClient) DeadLetter(string) (*DeadLetter, error)         { return nil, f.err }
func (f failedClient) DeleteDeadLetter(string) (bool, error)          { return false, f.err }
func (f failedClient) ReplayProgress(uint64) (*ReplayProgress, error) { return nil, f.err }
func (f failedClient) ReplayDeadLetter(string, int) (*ReplayProgress, error) {
	return nil, f.err
}
func (f failedClient) ReplayDeadLetters(time.Time, time.Time, int) (ReplayProgress, error) {
	return ReplayProgress{}, f.err
}
func (f failedClient) DeadLetterStats() (DeadLetterStats, error) { return DeadLetterStats{}, f.err }

// The clients of this package keep their records.
var (
	_ DeliveryRecords = (*client)(nil)
	_ DeliveryRecords = failedClient{}
	_ AttemptQuerier  = (*client)(nil)
	_ AttemptQuerier  = failedClient{}
)
