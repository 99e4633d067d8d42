package analytics_test

// analytics-go v2's programs, unchanged except for the import path: the calls of Segment's
// v2 documentation and the repository's examples/track.go (tag 2.1.1). They compile against
// this package, and TestV2Programs runs each against a receiver on 127.0.0.1 and checks that
// its messages arrive as v2 sent them.

import (
	"time"

	"outbound.invalid/bindings/go/v2" // was "github.com/segmentio/analytics-go"
)

func ExampleClient_Identify() {
	client := analytics.New("h97jamjwbh")
	client.Identify(&analytics.Identify{
		UserId: "019mr8mf4r",
		Traits: map[string]interface{}{
			"name":    "Michael Bolton",
			"email":   "mbolton@example.com",
			"plan":    "Enterprise",
			"friends": 42,
		},
	})
	client.Close()
}

func ExampleClient_Track() {
	client := analytics.New("h97jamjwbh")
	client.Track(&analytics.Track{
		Event:  "Signed Up",
		UserId: "f4ca124298",
		Properties: map[string]interface{}{
			"plan": "Enterprise",
		},
	})
	client.Close()
}

func ExampleClient_Page() {
	client := analytics.New("h97jamjwbh")
	client.Page(&analytics.Page{
		UserId:   "f4ca124298",
		Category: "Docs",
		Name:     "Go library",
		Traits: map[string]interface{}{
			"url": "https://segment.com/libraries/go/",
		},
	})
	client.Close()
}

func ExampleClient_Group() {
	client := analytics.New("h97jamjwbh")
	client.Group(&analytics.Group{
		UserId:  "019mr8mf4r",
		GroupId: "56",
		Traits: map[string]interface{}{
			"name":        "Initech",
			"description": "Accounting Software",
		},
	})
	client.Close()
}

func ExampleClient_Alias() {
	client := analytics.New("h97jamjwbh")
	client.Alias(&analytics.Alias{
		PreviousId: "anonymousUser",
		UserId:     "019mr8mf4r",
	})
	client.Close()
}

// examples/track.go of analytics-go 2.1.1 (its main function).
func ExampleNew() {
	client := analytics.New("h97jamjwbh")
	client.Interval = 30 * time.Second
	client.Size = 100
	client.Verbose = true

	done := time.After(3 * time.Second)
	tick := time.Tick(50 * time.Millisecond)

out:
	for {
		select {
		case <-done:
			println("exiting")
			break out
		case <-tick:
			client.Track(&analytics.Track{
				Event:  "Download",
				UserId: "123456",
				Properties: map[string]interface{}{
					"application": "Segment Desktop",
					"version":     "1.1.0",
					"platform":    "osx",
				},
			})
		}
	}

	println("flushing")
	client.Close()
}
