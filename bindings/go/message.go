package outbound

import (
	"time"

	"outbound.invalid/bindings/go/internal/bridge"
)

// Message is one of the seven calls: Identify, Track, Page, Screen, Group, Alias, Delete
// (values or pointers). Enqueue validates it in liboutbound, which names the field at fault.
type Message interface {
	// kind is unexported: the set of calls is the core's.
	kind() string
}

// Identify records who a user is, with traits of the user. A UserId or an AnonymousId is
// required.
type Identify struct {
	MessageId    string
	AnonymousId  string
	UserId       string
	Timestamp    time.Time // zero: the time of the call
	Context      *Context
	Traits       Traits
	Integrations Integrations
}

// Track records something a user did. Event and a UserId or an AnonymousId are required.
type Track struct {
	MessageId    string
	AnonymousId  string
	UserId       string
	Event        string
	Timestamp    time.Time
	Context      *Context
	Properties   Properties
	Integrations Integrations
}

// Page records a web page view. The properties url, title, referrer and path are
// recognised. A UserId or an AnonymousId is required.
type Page struct {
	MessageId    string
	AnonymousId  string
	UserId       string
	Name         string
	Category     string
	Timestamp    time.Time
	Context      *Context
	Properties   Properties
	Integrations Integrations
}

// Screen records a mobile screen view. A UserId or an AnonymousId is required.
type Screen struct {
	MessageId    string
	AnonymousId  string
	UserId       string
	Name         string
	Category     string
	Timestamp    time.Time
	Context      *Context
	Properties   Properties
	Integrations Integrations
}

// Group records a user's membership of a group, with traits of the group. GroupId and a
// UserId or an AnonymousId are required.
type Group struct {
	MessageId    string
	AnonymousId  string
	UserId       string
	GroupId      string
	Timestamp    time.Time
	Context      *Context
	Traits       Traits
	Integrations Integrations
}

// Alias says that PreviousId and UserId are the same user. Both are required.
type Alias struct {
	MessageId    string
	PreviousId   string
	UserId       string
	Timestamp    time.Time
	Context      *Context
	Integrations Integrations
}

// Delete asks the webhooks to delete what they hold about UserId (required). It goes to
// webhooks only: a client without webhooks refuses it.
type Delete struct {
	MessageId string
	UserId    string
	Timestamp time.Time
}

func (Identify) kind() string { return "identify" }
func (Track) kind() string    { return "track" }
func (Page) kind() string     { return "page" }
func (Screen) kind() string   { return "screen" }
func (Group) kind() string    { return "group" }
func (Alias) kind() string    { return "alias" }
func (Delete) kind() string   { return "delete" }

// wire is the Segment-style JSON object outbound_enqueue_json takes (shared with
// bindings/go/v2 through internal/bridge). Empty strings and nil maps are left out, which the
// core reads as "not given"; it decides what each call needs.
type wire = bridge.Wire

// toWire copies a message's fields into the wire shape. ok is false for a nil pointer. A
// pointer is read where it points (no copy of the message boxed on the heap).
func toWire(msg Message) (w wire, ok bool) {
	switch m := msg.(type) {
	case Identify:
		return identifyWire(&m), true
	case Track:
		return trackWire(&m), true
	case Page:
		return pageWire(&m), true
	case Screen:
		return screenWire(&m), true
	case Group:
		return groupWire(&m), true
	case Alias:
		return aliasWire(&m), true
	case Delete:
		return deleteWire(&m), true
	case *Identify:
		if m != nil {
			return identifyWire(m), true
		}
	case *Track:
		if m != nil {
			return trackWire(m), true
		}
	case *Page:
		if m != nil {
			return pageWire(m), true
		}
	case *Screen:
		if m != nil {
			return screenWire(m), true
		}
	case *Group:
		if m != nil {
			return groupWire(m), true
		}
	case *Alias:
		if m != nil {
			return aliasWire(m), true
		}
	case *Delete:
		if m != nil {
			return deleteWire(m), true
		}
	}
	return w, false
}

func identifyWire(m *Identify) wire {
	w := wire{Type: m.kind(), MessageId: m.MessageId, AnonymousId: m.AnonymousId, UserId: m.UserId}
	if len(m.Traits) > 0 {
		w.Traits = m.Traits
	}
	return withCommon(w, m.Timestamp, m.Context, m.Integrations)
}

func trackWire(m *Track) wire {
	w := wire{Type: m.kind(), MessageId: m.MessageId, AnonymousId: m.AnonymousId, UserId: m.UserId, Event: m.Event}
	if len(m.Properties) > 0 {
		w.Properties = m.Properties
	}
	return withCommon(w, m.Timestamp, m.Context, m.Integrations)
}

func pageWire(m *Page) wire {
	w := wire{Type: m.kind(), MessageId: m.MessageId, AnonymousId: m.AnonymousId, UserId: m.UserId,
		Name: m.Name, Category: m.Category}
	if len(m.Properties) > 0 {
		w.Properties = m.Properties
	}
	return withCommon(w, m.Timestamp, m.Context, m.Integrations)
}

func screenWire(m *Screen) wire {
	w := wire{Type: m.kind(), MessageId: m.MessageId, AnonymousId: m.AnonymousId, UserId: m.UserId,
		Name: m.Name, Category: m.Category}
	if len(m.Properties) > 0 {
		w.Properties = m.Properties
	}
	return withCommon(w, m.Timestamp, m.Context, m.Integrations)
}

func groupWire(m *Group) wire {
	w := wire{Type: m.kind(), MessageId: m.MessageId, AnonymousId: m.AnonymousId, UserId: m.UserId, GroupId: m.GroupId}
	if len(m.Traits) > 0 {
		w.Traits = m.Traits
	}
	return withCommon(w, m.Timestamp, m.Context, m.Integrations)
}

func aliasWire(m *Alias) wire {
	w := wire{Type: m.kind(), MessageId: m.MessageId, PreviousId: m.PreviousId, UserId: m.UserId}
	return withCommon(w, m.Timestamp, m.Context, m.Integrations)
}

func deleteWire(m *Delete) wire {
	w := wire{Type: m.kind(), MessageId: m.MessageId, UserId: m.UserId}
	return withCommon(w, m.Timestamp, nil, nil)
}

// withCommon sets the fields every call has on w.
func withCommon(w wire, ts time.Time, ctx *Context, ints Integrations) wire {
	if !ts.IsZero() {
		// Full precision and the time's own offset: the core parses it and writes the wire
		// form (UTC, milliseconds).
		s := ts.Format(time.RFC3339Nano)
		w.Timestamp = &s
	}
	if ctx != nil {
		w.Context = ctx
	}
	if len(ints) > 0 {
		w.Integrations = ints
	}
	return w
}

// withID returns msg (as a value) with its MessageId set, for the Callback, which receives
// the message as it was sent.
func withID(msg Message, id string) Message {
	switch m := msg.(type) {
	case *Identify:
		return withID(*m, id)
	case *Track:
		return withID(*m, id)
	case *Page:
		return withID(*m, id)
	case *Screen:
		return withID(*m, id)
	case *Group:
		return withID(*m, id)
	case *Alias:
		return withID(*m, id)
	case *Delete:
		return withID(*m, id)
	case Identify:
		m.MessageId = id
		return m
	case Track:
		m.MessageId = id
		return m
	case Page:
		m.MessageId = id
		return m
	case Screen:
		m.MessageId = id
		return m
	case Group:
		m.MessageId = id
		return m
	case Alias:
		m.MessageId = id
		return m
	case Delete:
		m.MessageId = id
		return m
	}
	return msg
}
