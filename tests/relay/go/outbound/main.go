// Sends a plan of Segment calls to the relay with outbound's own Go package (bindings/go),
// the relay as its ingestion endpoint and no webhooks of its own.
//
//	outbound ENDPOINT PLAN.json
//
// Prints one {"label","messageId"} line per call (the id EnqueueID gave), then "done". Exits
// non-zero when a call is refused or a message did not end delivered.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	outbound "outbound.invalid/bindings/go"
)

type step struct {
	Label string         `json:"label"`
	Key   string         `json:"key"`
	Msg   map[string]any `json:"msg"`
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
	clients := map[string]outbound.Client{}
	for _, s := range plan {
		if clients[s.Key] == nil {
			c, err := outbound.NewWithConfig(s.Key, outbound.Config{
				Endpoint: os.Args[1], BatchSize: 5, Interval: 200 * time.Millisecond,
			})
			if err != nil {
				panic(err)
			}
			clients[s.Key] = c
		}
	}
	for _, s := range plan {
		m := s.Msg
		integ := outbound.Integrations(obj(m, "integrations"))
		var msg outbound.Message
		switch str(m, "type") {
		case "identify":
			msg = outbound.Identify{UserId: str(m, "userId"), Traits: obj(m, "traits"), Integrations: integ}
		case "track":
			msg = outbound.Track{UserId: str(m, "userId"), Event: str(m, "event"), Properties: obj(m, "properties"), Integrations: integ}
		case "page":
			msg = outbound.Page{UserId: str(m, "userId"), Name: str(m, "name"), Properties: obj(m, "properties"), Integrations: integ}
		case "screen":
			msg = outbound.Screen{UserId: str(m, "userId"), Name: str(m, "name"), Properties: obj(m, "properties"), Integrations: integ}
		case "group":
			msg = outbound.Group{UserId: str(m, "userId"), GroupId: str(m, "groupId"), Traits: obj(m, "traits"), Integrations: integ}
		case "alias":
			msg = outbound.Alias{UserId: str(m, "userId"), PreviousId: str(m, "previousId"), Integrations: integ}
		default:
			panic("unknown type " + str(m, "type"))
		}
		id, err := clients[s.Key].EnqueueID(msg)
		if err != nil {
			panic(err)
		}
		out, _ := json.Marshal(map[string]string{"label": s.Label, "messageId": id})
		fmt.Println(string(out))
	}
	bad := 0
	for _, c := range clients {
		if err := c.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
			bad++
		}
	}
	if bad > 0 {
		os.Exit(1)
	}
	fmt.Println("done")
}
