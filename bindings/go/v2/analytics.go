// Package analytics is analytics-go v2's API (github.com/segmentio/analytics-go, tag 2.1.1:
// New, a Client struct configured through its fields, and Identify, Track, Page, Group,
// Alias and Close taking pointers to message structs) over liboutbound, the same engine as
// package outbound (bindings/go). A v2 program compiles against it with only its import
// path changed:
//
//	import "outbound.invalid/bindings/go/v2" // was "github.com/segmentio/analytics-go"
//
//	client := analytics.New("WRITE_KEY")
//	client.Size = 1 // or FlushAt: send each message at once
//	client.Track(&analytics.Track{Event: "Download", UserId: "123456",
//		Properties: map[string]interface{}{"platform": "osx"}})
//	client.Close()
//
// Added from the spec: FlushAt (Size's synonym) and FlushAfter (Interval's), a Screen call,
// and Context, Integrations, AnonymousId and Timestamp on every call (Alias included).
//
// Every rule is the core's: which fields a call needs, the timestamp and body formats, the
// 32 KB limit, batching, retries. This package converts v2's structs to the core's message
// and the core's errors to v2's sentences ("You must pass 'event'."), which also match
// errors.Is(err, ErrMissingField). What differs from v2 on purpose is listed in docs/go.md,
// "Moving from analytics-go v2".
//
// A Client is safe for concurrent use once configured; set its fields before the first call
// (as in v2, they are read when the first message is queued).
package analytics

import (
	"log"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	outbound "outbound.invalid/bindings/go"
	"outbound.invalid/bindings/go/internal/bridge"
)

// Endpoint is the default ingestion base URL; batches go to Endpoint + "/v1/batch".
const Endpoint = "https://api.segment.io"

// defaultEndpoint is what New sets: Endpoint, except in this package's tests, which run v2's
// programs unchanged against a receiver on 127.0.0.1 (export_test.go).
var defaultEndpoint = Endpoint

// The defaults New sets: the spec's (v2's code had a Size of 250), and a bounded wait for
// room where v2 blocked without bound.
const (
	DefaultSize          = 20
	DefaultInterval      = 5 * time.Second
	DefaultQueueFullWait = 5 * time.Second
)

// Message holds the fields common to every call, as in v2.
type Message struct {
	// Type is set by the call ("track", ...) once the message is queued; a value set before
	// is ignored.
	Type string `json:"type,omitempty"`
	// MessageId identifies the message; left empty, the call sets it to the UUIDv4 the core
	// made.
	MessageId string `json:"messageId,omitempty"`
	// Timestamp is when the message happened, an ISO 8601 / RFC 3339 text with an offset
	// ("2009-11-10T23:00:00+0000", v2's form, or "...Z", "...+02:00"); empty: the time of
	// the call. It is sent in UTC with milliseconds. Left empty by the call.
	Timestamp string `json:"timestamp,omitempty"`
	// SentAt is ignored: the core sets sentAt on each batch when it is sent.
	SentAt string `json:"sentAt,omitempty"`
}

// Identify says who a user is. A UserId or an AnonymousId is required.
type Identify struct {
	Context      map[string]interface{} `json:"context,omitempty"`
	Integrations map[string]interface{} `json:"integrations,omitempty"`
	Traits       map[string]interface{} `json:"traits,omitempty"`
	AnonymousId  string                 `json:"anonymousId,omitempty"`
	UserId       string                 `json:"userId,omitempty"`
	Message
}

// Group puts a user in a group. GroupId and a UserId or an AnonymousId are required.
type Group struct {
	Context      map[string]interface{} `json:"context,omitempty"`
	Integrations map[string]interface{} `json:"integrations,omitempty"`
	Traits       map[string]interface{} `json:"traits,omitempty"`
	AnonymousId  string                 `json:"anonymousId,omitempty"`
	UserId       string                 `json:"userId,omitempty"`
	GroupId      string                 `json:"groupId"`
	Message
}

// Track records what a user did. Event and a UserId or an AnonymousId are required.
type Track struct {
	Context      map[string]interface{} `json:"context,omitempty"`
	Integrations map[string]interface{} `json:"integrations,omitempty"`
	Properties   map[string]interface{} `json:"properties,omitempty"`
	AnonymousId  string                 `json:"anonymousId,omitempty"`
	UserId       string                 `json:"userId,omitempty"`
	Event        string                 `json:"event"`
	Message
}

// Page records a page view; Traits are sent as the page's "properties" (as in v2), where
// url, title, referrer and path are recognised. A UserId or an AnonymousId is required.
type Page struct {
	Context      map[string]interface{} `json:"context,omitempty"`
	Integrations map[string]interface{} `json:"integrations,omitempty"`
	Traits       map[string]interface{} `json:"properties,omitempty"`
	AnonymousId  string                 `json:"anonymousId,omitempty"`
	UserId       string                 `json:"userId,omitempty"`
	Category     string                 `json:"category,omitempty"`
	Name         string                 `json:"name,omitempty"`
	Message
}

// Screen records a mobile screen view (the spec's call; v2 had none). A UserId or an
// AnonymousId is required.
type Screen struct {
	Context      map[string]interface{} `json:"context,omitempty"`
	Integrations map[string]interface{} `json:"integrations,omitempty"`
	Properties   map[string]interface{} `json:"properties,omitempty"`
	AnonymousId  string                 `json:"anonymousId,omitempty"`
	UserId       string                 `json:"userId,omitempty"`
	Category     string                 `json:"category,omitempty"`
	Name         string                 `json:"name,omitempty"`
	Message
}

// Alias says that PreviousId and UserId are one user; both are required. Context,
// Integrations and AnonymousId are the spec's additions.
type Alias struct {
	PreviousId   string                 `json:"previousId"`
	UserId       string                 `json:"userId"`
	Context      map[string]interface{} `json:"context,omitempty"`
	Integrations map[string]interface{} `json:"integrations,omitempty"`
	AnonymousId  string                 `json:"anonymousId,omitempty"`
	Message
}

// Client batches messages and sends them in the background. Make it with New and set its
// fields before the first call: they are read once, when the first message is queued.
type Client struct {
	// Endpoint is the ingestion base URL (default Endpoint, https://api.segment.io).
	Endpoint string
	// Interval: a batch leaves at the latest this long after its first message (default
	// 5 s). FlushAfter, when not zero, takes its place.
	Interval time.Duration
	// Size: a batch leaves at this many messages (default 20, the spec's; v2's code had
	// 250), and no request carries more (as in v2) unless MaxBatchMessages is set higher;
	// 1: each message goes in a request of its own. FlushAt, when not zero, takes its place.
	Size int
	// Logger receives the log lines when Verbose is true or the DEBUG environment variable
	// contains "analytics" (or "*"). New sets it to stderr with the prefix "segment ", as
	// v2 did; nil means stderr. The write key never appears in a line.
	Logger *log.Logger
	// Verbose turns logging on (otherwise DEBUG decides).
	Verbose bool
	// Client is kept so that v2 programs compile, and ignored: HTTP and TLS are the core's
	// (rustls with the web roots; proxies from HTTP(S)_PROXY), with a timeout of 5 s per
	// request.
	Client http.Client

	// FlushAt is the spec's name for Size; when not zero it is used instead of Size.
	FlushAt int
	// FlushAfter is the spec's name for Interval; when not zero it is used instead of
	// Interval.
	FlushAfter time.Duration
	// MaxBatchMessages is the most messages one request may carry when batches waiting
	// together are joined (0: Size, so nothing joins past it; below Size is an ErrConfig
	// naming max_batch_messages). Set higher: fewer, larger requests (within 500,000
	// bytes), but one bad answer fails every message in it. See Config.MaxBatchMessages
	// in package outbound. Not in v2.
	MaxBatchMessages int
	// MaxQueueSize bounds the messages held at once, retries included (0: 10,000). v2 had no
	// bound: its calls blocked while its loop was busy.
	MaxQueueSize int
	// QueueFullWait is how long a call that finds the queue full waits for room, as v2's
	// calls waited for its loop (New sets DefaultQueueFullWait, 5 s). Past it, the call
	// returns an error wrapping ErrQueueFull and the message is dropped; 0: at once.
	QueueFullWait time.Duration
	// Spool keeps every accepted message on disk (a directory), or in a Redis shared by a
	// fleet ("redis://host:port/db?prefix=NAME"), until its outcome; RedisAck says when a
	// Redis commit counts. See Config.Spool and Config.RedisAck in package outbound. Not in
	// v2.
	Spool    string
	RedisAck string
	// DeadLetters keeps, in the Spool, each message whose delivery to the webhooks failed
	// for good, to be listed and replayed; DeadLetterRetention (0: 14 days) and
	// DeadLetterMaxBytes (0: 256 MiB) bound them. Needs Spool. See Config.DeadLetters in
	// package outbound. Not in v2. A v2 client has no webhooks (it sends to Endpoint only),
	// so it keeps none: the setting is here, checked, as in every face.
	DeadLetters         bool
	DeadLetterRetention time.Duration
	DeadLetterMaxBytes  int64
	// MaxWebhookHeaders (0: 20) and MaxWebhookHeaderBytes (0: 8192 bytes of names and
	// values) bound the static headers of one webhook. See Config.MaxWebhookHeaders in
	// package outbound. Not in v2. A v2 client has no webhooks, so they bound nothing: the
	// settings are here, checked, as in every face.
	MaxWebhookHeaders     int
	MaxWebhookHeaderBytes int

	key    string
	once   sync.Once
	core   outbound.Client // set by once; nil if it could not be built or Close came first
	err    error           // why core is nil
	closed atomic.Bool
}

// New returns a client for the source with write key key and v2's fields set to their
// defaults. Nothing starts until the first message.
func New(key string) *Client {
	return &Client{
		Endpoint:      defaultEndpoint,
		Interval:      DefaultInterval,
		Size:          DefaultSize,
		QueueFullWait: DefaultQueueFullWait,
		Logger:        log.New(os.Stderr, "segment ", log.LstdFlags),
		Client:        *http.DefaultClient,
		key:           key,
	}
}

// start builds the core client from the fields, once.
func (c *Client) start() (outbound.Client, error) {
	c.once.Do(func() {
		c.core, c.err = outbound.NewWithConfig(c.key, c.config())
	})
	return c.core, c.err
}

// config is the fields as package outbound's settings.
func (c *Client) config() outbound.Config {
	config := outbound.Config{Endpoint: c.Endpoint, Verbose: c.Verbose,
		BatchSize: c.Size, Interval: c.Interval, MaxQueueSize: c.MaxQueueSize,
		QueueFullWait: c.QueueFullWait, MaxBatchMessages: c.MaxBatchMessages,
		Spool: c.Spool, RedisAck: c.RedisAck, DeadLetters: c.DeadLetters,
		DeadLetterRetention: c.DeadLetterRetention, DeadLetterMaxBytes: c.DeadLetterMaxBytes,
		MaxWebhookHeaders: c.MaxWebhookHeaders, MaxWebhookHeaderBytes: c.MaxWebhookHeaderBytes}
	if c.FlushAt != 0 {
		config.BatchSize = c.FlushAt
	}
	if c.FlushAfter != 0 {
		config.Interval = c.FlushAfter
	}
	if c.Logger != nil {
		config.Logger = outbound.StdLogger(c.Logger)
	}
	return config
}

// Identify queues an "identify" message.
func (c *Client) Identify(msg *Identify) error {
	if msg == nil {
		return nilMessage("Identify")
	}
	w := bridge.Wire{Type: "identify", AnonymousId: msg.AnonymousId, UserId: msg.UserId}
	w.Traits = object(msg.Traits)
	return c.queue(&w, &msg.Message, msg.Context, msg.Integrations)
}

// Track queues a "track" message.
func (c *Client) Track(msg *Track) error {
	if msg == nil {
		return nilMessage("Track")
	}
	w := bridge.Wire{Type: "track", AnonymousId: msg.AnonymousId, UserId: msg.UserId, Event: msg.Event}
	w.Properties = object(msg.Properties)
	return c.queue(&w, &msg.Message, msg.Context, msg.Integrations)
}

// Page queues a "page" message.
func (c *Client) Page(msg *Page) error {
	if msg == nil {
		return nilMessage("Page")
	}
	w := bridge.Wire{Type: "page", AnonymousId: msg.AnonymousId, UserId: msg.UserId,
		Name: msg.Name, Category: msg.Category}
	w.Properties = object(msg.Traits)
	return c.queue(&w, &msg.Message, msg.Context, msg.Integrations)
}

// Screen queues a "screen" message.
func (c *Client) Screen(msg *Screen) error {
	if msg == nil {
		return nilMessage("Screen")
	}
	w := bridge.Wire{Type: "screen", AnonymousId: msg.AnonymousId, UserId: msg.UserId,
		Name: msg.Name, Category: msg.Category}
	w.Properties = object(msg.Properties)
	return c.queue(&w, &msg.Message, msg.Context, msg.Integrations)
}

// Group queues a "group" message.
func (c *Client) Group(msg *Group) error {
	if msg == nil {
		return nilMessage("Group")
	}
	w := bridge.Wire{Type: "group", AnonymousId: msg.AnonymousId, UserId: msg.UserId, GroupId: msg.GroupId}
	w.Traits = object(msg.Traits)
	return c.queue(&w, &msg.Message, msg.Context, msg.Integrations)
}

// Alias queues an "alias" message.
func (c *Client) Alias(msg *Alias) error {
	if msg == nil {
		return nilMessage("Alias")
	}
	w := bridge.Wire{Type: "alias", AnonymousId: msg.AnonymousId, UserId: msg.UserId, PreviousId: msg.PreviousId}
	return c.queue(&w, &msg.Message, msg.Context, msg.Integrations)
}

// queue hands w to the core, which validates it, stamps it and queues it (a full queue is waited on for QueueFullWait).
// On success msg gets its Type and, when it had none, its MessageId, as v2 set them.
func (c *Client) queue(w *bridge.Wire, msg *Message, context, integrations map[string]interface{}) error {
	if c.closed.Load() {
		return closedError("Enqueue")
	}
	core, err := c.start()
	if err != nil {
		return err
	}
	w.MessageId = msg.MessageId
	if msg.Timestamp != "" {
		// A copy: a pointer into msg would make every caller's message escape to the heap
		// (bridge.Enqueue is a func value, so what w points to is taken to escape).
		ts := msg.Timestamp
		w.Timestamp = &ts
	}
	w.Context = object(context)
	w.Integrations = object(integrations)
	id, err := bridge.Enqueue(core, *w, msg.MessageId == "")
	if err != nil {
		return v2Error(err)
	}
	msg.Type = w.Type
	if msg.MessageId == "" {
		msg.MessageId = id
	}
	return nil
}

// Close sends what is queued and waits for it (at most 30 s), then stops the client. It
// returns nil when everything was delivered; otherwise an error wrapping ErrIncomplete
// (v2 logged failures and returned nil). A second Close, and any call after Close, returns
// an error wrapping ErrClosed (v2 blocked or panicked).
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return closedError("Close")
	}
	c.once.Do(func() { c.err = closedError("Enqueue") }) // closed before the first message
	if c.core == nil {
		return nil
	}
	return c.core.Close()
}

// object gives m to the encoder, or nil (not given) when it is empty.
func object(m map[string]interface{}) any {
	if len(m) == 0 {
		return nil
	}
	return m
}

func nilMessage(op string) error {
	return &outbound.Error{Op: op, Code: outbound.ErrWrongType, Message: "the message is a nil pointer"}
}

func closedError(op string) error {
	return &outbound.Error{Op: op, Code: outbound.ErrClosed, Message: "the client is closed"}
}
