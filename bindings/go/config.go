package outbound

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"
	"unsafe"
)

// Config holds a client's settings. The zero value of every field means "the default", which
// is liboutbound's (listed per field). Names from analytics-go v3 are kept; the seed's names
// (Size, FlushAt, FlushAfter) are accepted as synonyms.
type Config struct {
	// Endpoint is the ingestion base URL; batches go to Endpoint + "/v1/batch".
	// Default "https://api.segment.io".
	Endpoint string

	// Interval: a batch is sent at the latest this long after its first message (default
	// 5 s). Synonym: FlushAfter. Rounded up to whole milliseconds.
	Interval time.Duration
	// FlushAfter is the seed's name for Interval.
	FlushAfter time.Duration

	// BatchSize: a batch is sent at this many messages (default 20; 1: each message closes
	// its own), and no request carries more (as in analytics-go), unless MaxBatchMessages
	// is set higher. Synonyms: Size, FlushAt.
	// (analytics-go's default was 250.)
	BatchSize int
	// Size is the seed's name for BatchSize.
	Size int
	// FlushAt is the seed's (and outbound's) name for BatchSize.
	FlushAt int
	// MaxBatchMessages is the most messages one ingestion request may carry when closed
	// batches waiting together are joined (0, the default: BatchSize, so nothing joins past
	// it; below BatchSize is an ErrConfig naming max_batch_messages). Set higher, batches
	// that wait for a connection, or for the answer to a request sent less than 25 ms ago,
	// go out together in one request of up to this many messages, within 500,000 bytes:
	// fewer, larger requests, but one bad answer (a 400) fails every message the request
	// carried, and a receiver that takes less per request may refuse them.
	MaxBatchMessages int

	// Verbose turns logging on. When false, the DEBUG environment variable decides
	// (logging is on when it contains "analytics" or "*").
	Verbose bool
	// Logger receives the log lines when logging is on: progress through Logf, failures and
	// a full queue through Errorf. Nil: lines go to stderr. It may be called from several
	// of the client's threads at once. The write key and the shared secret never appear.
	Logger Logger

	// Callback is told of every message's outcome, as in analytics-go: Success(msg) when it
	// was delivered, Failure(msg, err) when it failed or was dropped (err is an
	// *OutcomeError). msg is the message as enqueued, with its MessageId set. Not with
	// Subscriptions (an ErrConfig naming Callback): a message then has an outcome per
	// subscription it matched, or none at all; OnOutcome gets each.
	Callback Callback
	// OnOutcome is called once per accepted message with how it ended, and once more per
	// subscription the message matched (Outcome.Subscription names it).
	OnOutcome func(Outcome)

	// Webhooks: up to 5 URLs that get every message (one POST each), each with its own
	// static headers; one with Disabled set gets nothing but still counts toward the 5.
	Webhooks []Webhook
	// Subscriptions are up to 50 destinations of Segment's Webhooks (Actions) kind, each one
	// subscription as a JSON object: as Segment exports it ({"name", "subscribe": the
	// trigger, "mapping": {"url", "method", "headers", "data"}}) or in outbound's own settings
	// ({"name", "trigger", "url", "method", "headers", "data", "enabled"}). The events its
	// trigger (Segment's FQL) matches go to its URL as its mapping (Segment's mapping-kit)
	// says, each in a request of its own (or, with batch_size, in batches: a JSON array of
	// mapped bodies per request) signed with SharedSecret, retried and counted on its own
	// (SubscriptionCounters). Its endpoint is called as a Webhook's may be, with the same
	// keys beside the others, in either form: "auth" ({"type": "basic", "user", "password"},
	// {"type": "bearer", "token"} or {"type": "oauth2", "token_url", "client_id",
	// "client_secret" or "client_assertion_key", "scope", "audience"}), "tls"
	// ({"client_cert", "client_key", "ca_certs"}, each PEM text or a path),
	// "signature_header", "signature_scheme" and "rate_limit" ({"per_second", "burst"}). A
	// name is required and unique. A refused one is an ErrConfig naming subscriptions[i] and
	// the field (subscriptions[0].mapping.url, subscriptions[0].auth.token).
	Subscriptions []json.RawMessage
	// SharedSecret signs webhook requests: X-Signature is the hex HMAC-SHA1 of the body.
	// With SignatureScheme "standard-webhooks" it is one or more whsec_ secrets separated by
	// spaces, each adding one signature to webhook-signature (key rotation: the new and the
	// old one).
	SharedSecret string
	// SignatureScheme chooses how webhook requests are signed: "" or "x-signature" (the
	// default, X-Signature), "standard-webhooks" (https://www.standardwebhooks.com):
	// webhook-id (the message id), webhook-timestamp (Unix seconds of the attempt) and
	// webhook-signature (v1, HMAC-SHA256 of "id.timestamp.body"), or "hmac-sha256"
	// (X-Signature-256: sha256=<lowercase hex HMAC-SHA256 of the body>). The body is the
	// same bytes under each. Receivers check them with Verify, VerifyStandard and
	// VerifySHA256. A webhook may have its own (Webhook.SignatureScheme).
	SignatureScheme string
	// WebhookUserAgent is the User-Agent of webhook requests (default "Outbound/1.0").
	WebhookUserAgent string
	// MaxWebhookHeaders is the most static headers one webhook may have (default 20):
	// NewWithConfig refuses a webhook with more, an ErrConfig naming webhooks[i].headers
	// and max_webhook_headers.
	MaxWebhookHeaders int
	// MaxWebhookHeaderBytes bounds one webhook's static headers, names and values together
	// (default 8192 bytes), which every request to it carries: NewWithConfig refuses a
	// webhook with more, an ErrConfig naming webhooks[i].headers and
	// max_webhook_header_bytes.
	MaxWebhookHeaderBytes int

	// MaxQueueSize bounds the messages held in memory at once, retries included (default
	// 10000). When full, Enqueue returns ErrQueueFull at once, unless QueueFullWait is set.
	// With a Spool, a backlog past it waits on disk, bounded by SpoolMaxBytes.
	MaxQueueSize int
	// QueueFullWait is how long an Enqueue that finds the queue (or the spool) full waits
	// for room (messages reaching their outcome free it) before it returns ErrQueueFull.
	// 0, the default: it returns at once and never blocks. Close ends the wait with
	// ErrClosed. At most 1 hour.
	QueueFullWait time.Duration
	// Timeout bounds one whole HTTP exchange (default 5 s).
	Timeout time.Duration
	// RetryBase is the first retry's backoff ceiling, doubled per attempt (default 500 ms).
	RetryBase time.Duration
	// MaxBackoff is the largest backoff ceiling (default 10 s).
	MaxBackoff time.Duration
	// MaxRetryAfter is the largest Retry-After honoured (default 10 min).
	MaxRetryAfter time.Duration
	// MaxRetryDuration: a message is retried for at most this long after its first
	// attempt, then fails as "expired" (default 4 h).
	MaxRetryDuration time.Duration
	// Gzip compresses ingestion bodies.
	Gzip bool
	// CACerts adds trusted root certificates for HTTPS: PEM text or the path of a PEM file.
	CACerts string
	// Workers is the number of delivery threads each destination keeps ready when idle
	// (default 2); more start on demand, up to MaxInFlight.
	Workers int
	// MaxInFlight is the most requests in flight at once to each destination: the
	// ingestion endpoint, and each webhook URL on its own (default 512), so a slow or
	// failing receiver never takes another's budget.
	MaxInFlight int

	// Spool is a directory (created if missing) where every accepted message is written
	// before its first attempt and removed at its outcome, so a restart, a deploy or a
	// crash loses nothing that was flushed: the next client on the directory (or a live
	// sibling process, for the files of a dead one) delivers what is pending. Each process
	// takes its own file; a second client of one process on it is refused with ErrSpool.
	// Empty: memory only. With a spool, Close leaves what is undelivered in it
	// (Stats().Spooled) instead of dropping it.
	//
	// Spool may instead be "redis://host:port/db?prefix=NAME" ("rediss://" for TLS): the
	// durable copy lives in Redis 6.2+ (run with appendonly yes, appendfsync everysec), and a
	// living process on the same server and prefix delivers what a dead one left, once it has
	// been silent for Timeout + 10 s. Through Sentinel:
	// "redis+sentinel://host:26379,host:26379/MASTER/db?prefix=NAME" (the primary is asked of
	// the Sentinels at each connection). See docs/python.md, "A fleet on Redis".
	Spool string
	// RedisAck is when a commit to a Redis spool counts as acknowledged (Flush, and the
	// relay's 200): "memory", "replicas:N" (WAIT: on N replicas), "fsync" (WAITAOF: in the
	// primary's AOF on disk; Redis 7.2+, else NewWithConfig fails with ErrSpool saying so),
	// or "auto" (empty, the default): replicas:1 when the primary has a replica, else fsync
	// when it can, else memory. A commit whose confirmation does not come within half of
	// Timeout is not acknowledged.
	RedisAck string
	// SpoolMaxBytes bounds the spool (default 1 GiB), and so a backlog while a destination
	// is down; past it Enqueue returns ErrQueueFull.
	SpoolMaxBytes int64
	// SpoolCommitInterval is how often accepted messages are committed to the spool
	// together (default 20 ms, at most 1 s): a power cut loses at most what was accepted
	// within one interval; Flush commits at once.
	SpoolCommitInterval time.Duration
	// DeadLetters keeps, in the Spool, each message whose webhook delivery failed for good
	// (its retry window closed, a permanent 4xx, a 410, the network guard's refusal), with
	// its body and each URL's last attempt, to be listed and replayed through
	// DeliveryRecords (c.(outbound.DeliveryRecords)). Needs Spool: without one it is an
	// ErrConfig naming dead_letters. Outcomes and counters are the same either way.
	DeadLetters bool
	// DeadLetterRetention is how long a dead letter is kept (default 14 days).
	DeadLetterRetention time.Duration
	// DeadLetterMaxBytes bounds the dead letters (default 256 MiB): past it the oldest go.
	DeadLetterMaxBytes int64
	// AttemptLogSize is how many attempts each webhook URL's log keeps, the newest, for
	// WebhookAttempts (default 100, at most 10000). The logs are in memory, all of a
	// process's within one 32 MiB budget, the least recently used freed first; a failure's
	// attempt holds up to 64 KiB of its answer plus its headers.
	AttemptLogSize int
	// AttemptRetention is how long an attempt stays in its URL's log (default 24 hours, at
	// most 30 days).
	AttemptRetention time.Duration
	// DryRun validates and counts messages but sends nothing; each one ends "dropped".
	DryRun bool
	// IgnoreProxyEnv stops the client from using HTTP_PROXY / HTTPS_PROXY / ALL_PROXY.
	IgnoreProxyEnv bool
	// BlockPrivateNetworks refuses to send webhooks to non-public addresses: loopback,
	// private (RFC 1918), link-local (169.254.0.0/16, the cloud metadata services),
	// unique-local (fc00::/7), unspecified and the like, checked after DNS resolution and
	// again for the addresses about to be dialled. Such a message fails at once with a
	// detail starting "webhooks: blocked: " and nothing is sent. Recommended when webhook
	// URLs come from customers (SSRF). Ingestion is never checked.
	BlockPrivateNetworks bool
	// AllowedNetworks are exceptions to BlockPrivateNetworks, in CIDR notation
	// ("10.1.0.0/16", "fd00::/8"; a bare address is one host).
	AllowedNetworks []string

	// CloseTimeout bounds how long Close waits for delivery (default 30 s, as Python's
	// close). What is left then is dropped, and reported.
	CloseTimeout time.Duration
}

// Webhook is one webhook URL (absolute http or https, no credentials) and the static headers
// added to every request to it (at most Config.MaxWebhookHeaders of them, of
// Config.MaxWebhookHeaderBytes bytes of names and values), and how its endpoint wants to be
// called. The zero value of each endpoint field means "not set". NewWithConfig checks every
// field; a bad one is an ErrConfig naming it (webhooks[0].auth.user,
// webhooks[0].tls.client_key, webhooks[0].rate_limit.per_second).
type Webhook struct {
	URL     string
	Headers map[string]string
	// Disabled turns the webhook off: it stays configured (checked, counted among the 5, its
	// index kept) but no request goes to it, and a message accepted while it is off is never
	// sent to it. It is "Disabled", not "Enabled", so that the zero value, and every Webhook
	// literal written before the field existed, keeps the webhook on (the default).
	Disabled bool
	// Auth is how the endpoint authenticates the requests: BasicAuth, BearerAuth or OAuth2
	// (each also as a pointer). Nil: no Authorization of its own. Not with an Authorization
	// static header.
	Auth WebhookAuth
	// TLS is the endpoint's TLS: a client certificate for mutual TLS, roots of its own.
	TLS WebhookTLS
	// SignatureHeader is the header the signature goes in instead of the scheme's own
	// (X-Signature, X-Signature-256), e.g. "X-Hub-Signature-256". Not with
	// "standard-webhooks", whose headers are fixed.
	SignatureHeader string
	// SignatureScheme signs this webhook's requests instead of Config.SignatureScheme (with
	// Config.SharedSecret): "x-signature", "standard-webhooks" or "hmac-sha256"
	// (X-Signature-256: sha256=<lowercase hex HMAC-SHA256 of the body>, GitHub's form;
	// receivers check it with VerifySHA256). "": the client's.
	SignatureScheme string
	// RateLimit bounds the requests a second to the endpoint; nil: unlimited.
	RateLimit *RateLimit
}

// WebhookAuth is a webhook's authentication: a BasicAuth, a BearerAuth or an OAuth2 (or a
// pointer to one).
type WebhookAuth interface {
	webhookAuth()
}

// BasicAuth sends Authorization: Basic base64(User:Password) (RFC 7617). User is not empty
// and has no ':'.
type BasicAuth struct {
	User     string
	Password string
}

// BearerAuth sends Authorization: Bearer <Token> (RFC 6750), the token as given (visible
// ASCII).
type BearerAuth struct {
	Token string
}

// OAuth2 is OAuth2 client credentials (RFC 6749 §4.4): a token is asked of TokenURL (a form
// POST of grant_type=client_credentials, with Scope and Audience when set, authenticated with
// HTTP Basic of ClientID and ClientSecret, or with a JWT signed by ClientAssertionKey), kept
// until shortly before it expires and sent as a bearer token, and asked again once when the endpoint answers 401. The token request goes
// under the webhook's network guard, TLS and Config.Timeout; a failed one fails the attempt as
// the delivery's would (a 5xx or a timeout is retried, a 4xx is permanent).
type OAuth2 struct {
	// TokenURL is the authorization server's token endpoint (absolute http or https).
	TokenURL string
	ClientID string
	// ClientSecret is empty with ClientAssertionKey.
	ClientSecret string
	// ClientAssertionKey, when set, proves the client with a JWT client assertion (RFC 7523)
	// instead of ClientSecret (not both): a private key (RSA or P-256; PEM text or the path of
	// a PEM file, read when the client is built) that signs a JWT for each token request
	// (RS256 or ES256; iss and sub the client id, aud the token URL, valid 5 minutes), sent in
	// the form as client_assertion with client_id and client_assertion_type
	// urn:ietf:params:oauth:client-assertion-type:jwt-bearer, and no Authorization.
	ClientAssertionKey string
	// Scope (space separated) and Audience are sent when not empty.
	Scope    string
	Audience string
}

func (BasicAuth) webhookAuth()  {}
func (BearerAuth) webhookAuth() {}
func (OAuth2) webhookAuth()     {}

// WebhookTLS is a webhook's TLS, each part PEM text or the path of a PEM file (read when the
// client is built); "" leaves it unset.
type WebhookTLS struct {
	// ClientCert is the client certificate (and its chain) shown to the endpoint, for mutual
	// TLS. Needs ClientKey.
	ClientCert string
	// ClientKey is its private key (PKCS#8, PKCS#1 or SEC1). Needs ClientCert.
	ClientKey string
	// CACerts are the only roots the endpoint's certificate may chain to (a private CA):
	// they replace the web's roots and Config.CACerts for this webhook.
	CACerts string
}

// RateLimit is at most PerSecond requests a second to a webhook, in bursts of up to Burst
// after a quiet spell (a token bucket). A request carries one message. Messages past it wait
// in the webhook's queue, inside their retry window (the health's State is HealthThrottled
// meanwhile, and Throttled counts the waits); none is dropped for it. Each process enforces it
// on its own deliveries.
type RateLimit struct {
	// PerSecond is at least 1.
	PerSecond int
	// Burst is at least 1; 0 means PerSecond.
	Burst int
}

// DefaultCloseTimeout is how long Close waits when Config.CloseTimeout is zero.
const DefaultCloseTimeout = 30 * time.Second

// DefaultEndpoint is the ingestion endpoint used when Config.Endpoint is empty.
const DefaultEndpoint = "https://api.segment.io"

// newOptions turns a write key and a Config into liboutbound options: the one place that maps
// Go settings to C setters (recording: a recording client, NewRecording). The caller owns the
// result (outbound_client_new consumes it).
// The checks of values are the core's, at outbound_client_new; here only what has no C form
// is refused (a negative number, two synonyms that disagree).
func newOptions(writeKey string, c Config, handle uintptr, recording bool) (*C.outbound_options, error) {
	flushAt, err := synonym([]string{"BatchSize", "Size", "FlushAt"}, c.BatchSize, c.Size, c.FlushAt)
	if err != nil {
		return nil, err
	}
	if c.Callback != nil && len(c.Subscriptions) > 0 {
		// Callback's contract is one outcome per message, which subscriptions do not keep.
		return nil, configError("Callback", "is not taken with Subscriptions (a message has an "+
			"outcome per subscription it matched, or none): use OnOutcome")
	}
	interval, err := synonym([]string{"Interval", "FlushAfter"}, c.Interval, c.FlushAfter)
	if err != nil {
		return nil, err
	}

	// outbound_last_error is per thread: keep every call and its error text on one thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	o := C.outbound_options_new()
	if o == nil {
		return nil, &Error{Op: "NewWithConfig", Code: ErrPanic, Message: "outbound_options_new failed"}
	}
	ok := false
	defer func() {
		if !ok {
			C.outbound_options_free(o)
		}
	}()
	check := func(rc C.outbound_result) error {
		if rc == 0 {
			return nil
		}
		return takeError("NewWithConfig", rc, C.gob_last_error())
	}
	str := func(set func(*C.char) C.outbound_result, v string) error {
		if v == "" {
			return nil
		}
		cs := C.CString(v)
		defer C.free(unsafe.Pointer(cs))
		return check(set(cs))
	}
	count := func(name string, v int, set func(C.size_t) C.outbound_result) error {
		if v == 0 {
			return nil
		}
		if v < 0 {
			return configError(name, fmt.Sprintf("must not be negative, got %d", v))
		}
		return check(set(C.size_t(v)))
	}
	dur := func(name string, d time.Duration, set func(C.uint64_t) C.outbound_result) error {
		if d == 0 {
			return nil
		}
		if d < 0 {
			return configError(name, fmt.Sprintf("must not be negative, got %s", d))
		}
		return check(set(C.uint64_t(millis(d))))
	}

	steps := []func() error{
		func() error {
			return str(func(s *C.char) C.outbound_result { return C.outbound_options_set_write_key(o, s) }, writeKey)
		},
		func() error {
			return str(func(s *C.char) C.outbound_result { return C.outbound_options_set_endpoint(o, s) }, c.Endpoint)
		},
		func() error {
			return str(func(s *C.char) C.outbound_result { return C.outbound_options_set_shared_secret(o, s) }, c.SharedSecret)
		},
		func() error {
			return str(func(s *C.char) C.outbound_result { return C.outbound_options_set_signature_scheme(o, s) }, c.SignatureScheme)
		},
		func() error {
			return str(func(s *C.char) C.outbound_result { return C.outbound_options_set_webhook_user_agent(o, s) }, c.WebhookUserAgent)
		},
		func() error {
			return str(func(s *C.char) C.outbound_result { return C.outbound_options_set_ca_certs(o, s) }, c.CACerts)
		},
		func() error {
			return count("MaxWebhookHeaders", c.MaxWebhookHeaders, func(n C.size_t) C.outbound_result {
				return C.outbound_options_set_max_webhook_headers(o, n)
			})
		},
		func() error {
			return count("MaxWebhookHeaderBytes", c.MaxWebhookHeaderBytes, func(n C.size_t) C.outbound_result {
				return C.outbound_options_set_max_webhook_header_bytes(o, n)
			})
		},
		func() error {
			return count(flushAt.name, flushAt.value, func(n C.size_t) C.outbound_result { return C.outbound_options_set_flush_at(o, n) })
		},
		func() error {
			return count("MaxBatchMessages", c.MaxBatchMessages, func(n C.size_t) C.outbound_result {
				return C.outbound_options_set_max_batch_messages(o, n)
			})
		},
		func() error {
			return count("MaxQueueSize", c.MaxQueueSize, func(n C.size_t) C.outbound_result { return C.outbound_options_set_max_queue_size(o, n) })
		},
		func() error {
			return count("Workers", c.Workers, func(n C.size_t) C.outbound_result { return C.outbound_options_set_workers(o, n) })
		},
		func() error {
			return count("MaxInFlight", c.MaxInFlight, func(n C.size_t) C.outbound_result { return C.outbound_options_set_max_in_flight(o, n) })
		},
		func() error {
			return str(func(s *C.char) C.outbound_result { return C.outbound_options_set_spool(o, s) }, c.Spool)
		},
		func() error {
			return str(func(s *C.char) C.outbound_result { return C.outbound_options_set_redis_ack(o, s) }, c.RedisAck)
		},
		func() error {
			if c.SpoolMaxBytes == 0 {
				return nil
			}
			if c.SpoolMaxBytes < 0 {
				return configError("SpoolMaxBytes", fmt.Sprintf("must not be negative, got %d", c.SpoolMaxBytes))
			}
			return check(C.outbound_options_set_spool_max_bytes(o, C.uint64_t(c.SpoolMaxBytes)))
		},
		func() error {
			return dur("SpoolCommitInterval", c.SpoolCommitInterval, func(ms C.uint64_t) C.outbound_result {
				return C.outbound_options_set_spool_commit_interval_ms(o, ms)
			})
		},
		func() error {
			if !c.DeadLetters {
				return nil
			}
			return check(C.outbound_options_set_dead_letters(o, true))
		},
		func() error {
			return dur("DeadLetterRetention", c.DeadLetterRetention, func(ms C.uint64_t) C.outbound_result {
				return C.outbound_options_set_dead_letter_retention_ms(o, ms)
			})
		},
		func() error {
			if c.DeadLetterMaxBytes == 0 {
				return nil
			}
			if c.DeadLetterMaxBytes < 0 {
				return configError("DeadLetterMaxBytes", fmt.Sprintf("must not be negative, got %d", c.DeadLetterMaxBytes))
			}
			return check(C.outbound_options_set_dead_letter_max_bytes(o, C.uint64_t(c.DeadLetterMaxBytes)))
		},
		func() error {
			return count("AttemptLogSize", c.AttemptLogSize, func(n C.size_t) C.outbound_result {
				return C.outbound_options_set_attempt_log_size(o, n)
			})
		},
		func() error {
			return dur("AttemptRetention", c.AttemptRetention, func(ms C.uint64_t) C.outbound_result {
				return C.outbound_options_set_attempt_retention_ms(o, ms)
			})
		},
		func() error {
			return dur(interval.name, interval.value, func(ms C.uint64_t) C.outbound_result { return C.outbound_options_set_flush_interval_ms(o, ms) })
		},
		func() error {
			return dur("QueueFullWait", c.QueueFullWait, func(ms C.uint64_t) C.outbound_result {
				return C.outbound_options_set_queue_full_wait_ms(o, ms)
			})
		},
		func() error {
			return dur("Timeout", c.Timeout, func(ms C.uint64_t) C.outbound_result { return C.outbound_options_set_timeout_ms(o, ms) })
		},
		func() error {
			return dur("RetryBase", c.RetryBase, func(ms C.uint64_t) C.outbound_result { return C.outbound_options_set_retry_base_ms(o, ms) })
		},
		func() error {
			return dur("MaxBackoff", c.MaxBackoff, func(ms C.uint64_t) C.outbound_result { return C.outbound_options_set_max_backoff_ms(o, ms) })
		},
		func() error {
			return dur("MaxRetryAfter", c.MaxRetryAfter, func(ms C.uint64_t) C.outbound_result { return C.outbound_options_set_max_retry_after_ms(o, ms) })
		},
		func() error {
			return dur("MaxRetryDuration", c.MaxRetryDuration, func(ms C.uint64_t) C.outbound_result {
				return C.outbound_options_set_max_retry_duration_ms(o, ms)
			})
		},
		func() error {
			if !c.Gzip {
				return nil
			}
			return check(C.outbound_options_set_gzip(o, true))
		},
		func() error {
			if !c.Verbose {
				return nil // unset: DEBUG decides, in the core
			}
			return check(C.outbound_options_set_debug(o, true))
		},
		func() error {
			if !c.DryRun {
				return nil
			}
			return check(C.outbound_options_set_send(o, false))
		},
		func() error {
			if !c.IgnoreProxyEnv {
				return nil
			}
			return check(C.outbound_options_set_proxy_from_env(o, false))
		},
		func() error {
			if !recording {
				return nil
			}
			return check(C.outbound_options_set_recording(o, true))
		},
		func() error {
			if !c.BlockPrivateNetworks {
				return nil
			}
			return check(C.outbound_options_set_block_private_networks(o, true))
		},
		func() error {
			for _, n := range c.AllowedNetworks {
				if err := str(func(s *C.char) C.outbound_result { return C.outbound_options_add_allowed_network(o, s) }, n); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			for i, w := range c.Webhooks {
				if err := addWebhook(o, i, w, check); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			for i, sub := range c.Subscriptions {
				if err := addSubscription(o, i, sub, check); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			if handle == 0 {
				return nil
			}
			if c.Callback != nil || c.OnOutcome != nil {
				if err := check(C.gob_set_outcome_callback(o, C.uintptr_t(handle))); err != nil {
					return err
				}
			}
			if c.Logger != nil {
				return check(C.gob_set_log_callback(o, C.uintptr_t(handle)))
			}
			return nil
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	ok = true
	return o, nil
}

func addWebhook(o *C.outbound_options, i int, w Webhook, check func(C.outbound_result) error) error {
	url := C.CString(w.URL)
	defer C.free(unsafe.Pointer(url))
	var headers *C.char
	if len(w.Headers) > 0 {
		text, err := json.Marshal(w.Headers)
		if err != nil {
			return configError("Webhooks", err.Error())
		}
		headers = C.CString(string(text))
		defer C.free(unsafe.Pointer(headers))
	}
	if err := check(C.outbound_options_add_webhook(o, url, headers)); err != nil {
		return err
	}
	at := C.size_t(i)
	if w.Disabled {
		if err := check(C.outbound_options_set_webhook_enabled(o, at, false)); err != nil {
			return err
		}
	}
	// Texts go to C NUL-terminated: one with a NUL would be cut short, so it is refused.
	var texts []*C.char
	defer func() {
		for _, t := range texts {
			C.free(unsafe.Pointer(t))
		}
	}()
	text := func(field, v string, keepEmpty bool) (*C.char, error) {
		if v == "" && !keepEmpty {
			return nil, nil
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, configError(fmt.Sprintf("webhooks[%d].%s", i, field), "must not hold a NUL byte")
		}
		t := C.CString(v)
		texts = append(texts, t)
		return t, nil
	}
	texts3 := func(fields [3]string, values [3]string, keepEmpty bool) ([3]*C.char, error) {
		var out [3]*C.char
		for j := range fields {
			t, err := text(fields[j], values[j], keepEmpty)
			if err != nil {
				return out, err
			}
			out[j] = t
		}
		return out, nil
	}
	auth, err := plainAuth(i, w.Auth)
	if err != nil {
		return err
	}
	switch a := auth.(type) {
	case nil:
	case BasicAuth:
		user, err := text("auth.user", a.User, true)
		if err != nil {
			return err
		}
		password, err := text("auth.password", a.Password, true)
		if err != nil {
			return err
		}
		if err := check(C.outbound_options_set_webhook_auth_basic(o, at, user, password)); err != nil {
			return err
		}
	case BearerAuth:
		token, err := text("auth.token", a.Token, true)
		if err != nil {
			return err
		}
		if err := check(C.outbound_options_set_webhook_auth_bearer(o, at, token)); err != nil {
			return err
		}
	case OAuth2:
		secret, secretField := a.ClientSecret, "auth.client_secret"
		if a.ClientAssertionKey != "" {
			if a.ClientSecret != "" {
				return configError(fmt.Sprintf("webhooks[%d].auth.client_secret", i),
					"give a client secret or a client assertion key, not both")
			}
			secret, secretField = a.ClientAssertionKey, "auth.client_assertion_key"
		}
		t, err := texts3([3]string{"auth.token_url", "auth.client_id", secretField},
			[3]string{a.TokenURL, a.ClientID, secret}, true)
		if err != nil {
			return err
		}
		scope, err := text("auth.scope", a.Scope, false)
		if err != nil {
			return err
		}
		audience, err := text("auth.audience", a.Audience, false)
		if err != nil {
			return err
		}
		var rc C.outbound_result
		if a.ClientAssertionKey != "" {
			rc = C.outbound_options_set_webhook_auth_oauth2_assertion(o, at, t[0], t[1], t[2], scope, audience)
		} else {
			rc = C.outbound_options_set_webhook_auth_oauth2(o, at, t[0], t[1], t[2], scope, audience)
		}
		if err := check(rc); err != nil {
			return err
		}
	}
	if w.TLS != (WebhookTLS{}) {
		t, err := texts3([3]string{"tls.client_cert", "tls.client_key", "tls.ca_certs"},
			[3]string{w.TLS.ClientCert, w.TLS.ClientKey, w.TLS.CACerts}, false)
		if err != nil {
			return err
		}
		if err := check(C.outbound_options_set_webhook_tls(o, at, t[0], t[1], t[2])); err != nil {
			return err
		}
	}
	if w.SignatureHeader != "" {
		t, err := text("signature_header", w.SignatureHeader, false)
		if err != nil {
			return err
		}
		if err := check(C.outbound_options_set_webhook_signature_header(o, at, t)); err != nil {
			return err
		}
	}
	if w.SignatureScheme != "" {
		t, err := text("signature_scheme", w.SignatureScheme, false)
		if err != nil {
			return err
		}
		if err := check(C.outbound_options_set_webhook_signature_scheme(o, at, t)); err != nil {
			return err
		}
	}
	if r := w.RateLimit; r != nil {
		burst := r.Burst
		if burst == 0 {
			burst = r.PerSecond
		}
		for _, f := range []named[int]{{"rate_limit.per_second", r.PerSecond}, {"rate_limit.burst", burst}} {
			if f.value < 0 || uint64(f.value) > math.MaxUint32 {
				return configError(fmt.Sprintf("webhooks[%d].%s", i, f.name),
					fmt.Sprintf("%d is not between 1 and %d", f.value, uint32(math.MaxUint32)))
			}
		}
		if err := check(C.outbound_options_set_webhook_rate_limit(o, at, C.uint32_t(r.PerSecond), C.uint32_t(burst))); err != nil {
			return err
		}
	}
	return nil
}

// addSubscription adds subscription i, JSON text that liboutbound reads and checks.
func addSubscription(o *C.outbound_options, i int, sub json.RawMessage, check func(C.outbound_result) error) error {
	// A C string ends at its first NUL: text holding one would be cut short.
	if bytes.IndexByte(sub, 0) >= 0 {
		return configError(fmt.Sprintf("subscriptions[%d]", i), "must not hold a NUL byte")
	}
	text := C.CString(string(sub))
	defer C.free(unsafe.Pointer(text))
	return check(C.outbound_options_add_subscription_json(o, text))
}

// subscriptionNames are the names of subs, for the counters kept after Close ("" for one
// that is not a JSON object with a string name: liboutbound refuses it).
func subscriptionNames(subs []json.RawMessage) []string {
	names := make([]string, len(subs))
	for i, sub := range subs {
		var s struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(sub, &s) == nil {
			names[i] = s.Name
		}
	}
	return names
}

// plainAuth is webhook i's auth as a value (a pointer followed); a nil pointer or a type of
// another package is refused naming webhooks[i].auth.
func plainAuth(i int, a WebhookAuth) (WebhookAuth, error) {
	var nilPointer bool
	switch p := a.(type) {
	case nil, BasicAuth, BearerAuth, OAuth2:
		return a, nil
	case *BasicAuth:
		if nilPointer = p == nil; !nilPointer {
			return *p, nil
		}
	case *BearerAuth:
		if nilPointer = p == nil; !nilPointer {
			return *p, nil
		}
	case *OAuth2:
		if nilPointer = p == nil; !nilPointer {
			return *p, nil
		}
	}
	setting := fmt.Sprintf("webhooks[%d].auth", i)
	if nilPointer {
		return nil, configError(setting, fmt.Sprintf("a nil %T", a))
	}
	return nil, configError(setting, fmt.Sprintf("%T is not a BasicAuth, BearerAuth or OAuth2", a))
}

type named[T comparable] struct {
	name  string
	value T
}

// synonym picks the one value given (non-zero) among names of the same setting; two that
// disagree are a configuration error.
func synonym[T comparable](names []string, values ...T) (named[T], error) {
	var zero T
	got := named[T]{name: names[0]}
	for i, v := range values {
		switch {
		case v == zero:
		case got.value == zero:
			got = named[T]{names[i], v}
		case got.value != v:
			return got, configError(got.name, fmt.Sprintf("%s and %s are the same setting and disagree (%v, %v)",
				got.name, names[i], got.value, v))
		}
	}
	return got, nil
}

func configError(setting, reason string) *Error {
	return &Error{Op: "NewWithConfig", Code: ErrConfig, Message: "invalid configuration " + setting + ": " + reason}
}

// millis rounds d up to whole milliseconds, so a positive duration never becomes 0.
func millis(d time.Duration) uint64 {
	ms := uint64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}
