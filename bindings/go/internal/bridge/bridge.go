// Package bridge joins package outbound (bindings/go) and package analytics
// (bindings/go/v2, analytics-go v2's API) without widening outbound's public API: v2 hands
// its calls to the same client and the same encoder, through the function outbound sets
// here at init.
package bridge

// Wire is the Segment-style JSON object liboutbound's outbound_enqueue_json takes. Empty
// strings and nil maps are left out, which the core reads as "not given"; the core decides
// what each call needs, parses Timestamp and writes every byte that is sent.
type Wire struct {
	Type         string  `json:"type"`
	MessageId    string  `json:"messageId,omitempty"`
	AnonymousId  string  `json:"anonymousId,omitempty"`
	UserId       string  `json:"userId,omitempty"`
	PreviousId   string  `json:"previousId,omitempty"`
	GroupId      string  `json:"groupId,omitempty"`
	Event        string  `json:"event,omitempty"`
	Name         string  `json:"name,omitempty"`
	Category     string  `json:"category,omitempty"`
	Timestamp    *string `json:"timestamp,omitempty"`
	Context      any     `json:"context,omitempty"`
	Integrations any     `json:"integrations,omitempty"`
	Properties   any     `json:"properties,omitempty"`
	Traits       any     `json:"traits,omitempty"`
}

// Enqueue queues w on client (an outbound.Client made by outbound.NewWithConfig) as Enqueue
// does, and returns the message's id when wantID is true. Set by package outbound's init.
var Enqueue func(client any, w Wire, wantID bool) (string, error)
