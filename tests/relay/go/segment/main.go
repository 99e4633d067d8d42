// Sends a plan of Segment calls to the relay with analytics-go v3 (Segment's own Go SDK).
//
//	segment ENDPOINT PLAN.json
//
// PLAN is a JSON array of {"label", "key", "msg"} (msg: a Segment call as JSON). Prints one
// {"label","messageId"} line per call the SDK reported sent (its Success callback, with the
// messageId the SDK made), then "done". Exits non-zero when any call failed or went
// unreported.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	analytics "github.com/segmentio/analytics-go/v3"
)

type step struct {
	Label string         `json:"label"`
	Key   string         `json:"key"`
	Msg   map[string]any `json:"msg"`
}

type callback struct {
	mu     sync.Mutex
	labels map[string]string // "type:event" (unique in the plan) -> label
	ids    map[string]string // label -> messageId the SDK made
	failed int
}

func (c *callback) Success(m analytics.Message) {
	var k, id string
	switch v := m.(type) {
	case analytics.Identify:
		k, id = "identify:", v.MessageId
	case analytics.Track:
		k, id = "track:"+v.Event, v.MessageId
	case analytics.Page:
		k, id = "page:", v.MessageId
	case analytics.Screen:
		k, id = "screen:", v.MessageId
	case analytics.Group:
		k, id = "group:", v.MessageId
	case analytics.Alias:
		k, id = "alias:", v.MessageId
	}
	c.mu.Lock()
	c.ids[c.labels[k]] = id
	c.mu.Unlock()
}

func (c *callback) Failure(m analytics.Message, err error) {
	c.mu.Lock()
	c.failed++
	c.mu.Unlock()
	fmt.Fprintln(os.Stderr, "failure:", err)
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }
func obj(m map[string]any, k string) map[string]any {
	o, _ := m[k].(map[string]any)
	return o
}

func main() {
	raw, err := os.ReadFile(os.Args[2])
	if err != nil {
		panic(err)
	}
	var plan []step
	if err := json.Unmarshal(raw, &plan); err != nil {
		panic(err)
	}
	cb := &callback{labels: map[string]string{}, ids: map[string]string{}}
	for _, s := range plan {
		cb.labels[str(s.Msg, "type")+":"+str(s.Msg, "event")] = s.Label
	}
	clients := map[string]analytics.Client{}
	for _, s := range plan {
		if clients[s.Key] == nil {
			c, err := analytics.NewWithConfig(s.Key, analytics.Config{
				Endpoint: os.Args[1], BatchSize: 5, Interval: 200 * time.Millisecond, Callback: cb,
			})
			if err != nil {
				panic(err)
			}
			clients[s.Key] = c
		}
	}
	for _, s := range plan {
		m := s.Msg
		id := "" // the SDK makes it
		integ := analytics.Integrations(obj(m, "integrations"))
		var msg analytics.Message
		switch str(m, "type") {
		case "identify":
			msg = analytics.Identify{MessageId: id, UserId: str(m, "userId"), Traits: obj(m, "traits"), Integrations: integ}
		case "track":
			msg = analytics.Track{MessageId: id, UserId: str(m, "userId"), Event: str(m, "event"), Properties: obj(m, "properties"), Integrations: integ}
		case "page":
			msg = analytics.Page{MessageId: id, UserId: str(m, "userId"), Name: str(m, "name"), Properties: obj(m, "properties"), Integrations: integ}
		case "screen":
			msg = analytics.Screen{MessageId: id, UserId: str(m, "userId"), Name: str(m, "name"), Properties: obj(m, "properties"), Integrations: integ}
		case "group":
			msg = analytics.Group{MessageId: id, UserId: str(m, "userId"), GroupId: str(m, "groupId"), Traits: obj(m, "traits"), Integrations: integ}
		case "alias":
			msg = analytics.Alias{MessageId: id, UserId: str(m, "userId"), PreviousId: str(m, "previousId"), Integrations: integ}
		default:
			panic("unknown type " + str(m, "type"))
		}
		if err := clients[s.Key].Enqueue(msg); err != nil {
			panic(err)
		}
	}
	for _, c := range clients {
		_ = c.Close()
	}
	for _, s := range plan {
		id, ok := cb.ids[s.Label]
		if !ok {
			fmt.Fprintf(os.Stderr, "no Success callback for %s\n", s.Label)
			cb.failed++
		}
		out, _ := json.Marshal(map[string]string{"label": s.Label, "messageId": id})
		fmt.Println(string(out))
	}
	if cb.failed > 0 {
		fmt.Fprintf(os.Stderr, "%d calls failed\n", cb.failed)
		os.Exit(1)
	}
	fmt.Println("done")
}
