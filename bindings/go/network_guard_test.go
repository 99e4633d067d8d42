package outbound_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	outbound "outbound.invalid/bindings/go"
)

// BlockPrivateNetworks: a webhook at 127.0.0.1 (the only blocked target used) gets nothing
// and the message fails as blocked; with 127.0.0.0/8 allowed it is delivered.
func TestBlockPrivateNetworksRefuses127001UnlessAllowed(t *testing.T) {
	rx := newReceiver(t)
	var mu sync.Mutex
	var outcomes []outbound.Outcome
	c := newClient(t, "", outbound.Config{
		Webhooks:             []outbound.Webhook{{URL: rx.URL + "/hook"}},
		BlockPrivateNetworks: true,
		OnOutcome: func(o outbound.Outcome) {
			mu.Lock()
			outcomes = append(outcomes, o)
			mu.Unlock()
		},
	})
	mustEnqueue(t, c, outbound.Identify{UserId: "u"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Flush(ctx); !errors.Is(err, outbound.ErrIncomplete) {
		t.Fatalf("Flush: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(rx.all()); n != 0 {
		t.Errorf("the receiver got %d requests", n)
	}
	mu.Lock()
	if len(outcomes) != 1 || !strings.HasPrefix(outcomes[0].Detail, "webhooks: blocked: 127.0.0.1 is a loopback address") {
		t.Errorf("outcomes %+v", outcomes)
	}
	mu.Unlock()

	allowed := newClient(t, "", outbound.Config{
		Webhooks:             []outbound.Webhook{{URL: rx.URL + "/hook"}},
		BlockPrivateNetworks: true,
		AllowedNetworks:      []string{"127.0.0.0/8"},
	})
	mustEnqueue(t, allowed, outbound.Identify{UserId: "u"})
	flush(t, allowed)
	if n := len(rx.all()); n != 1 {
		t.Errorf("allowed: the receiver got %d requests", n)
	}
}

func TestAllowedNetworksMustBeNetworks(t *testing.T) {
	_, err := outbound.NewWithConfig("", outbound.Config{
		Webhooks:             []outbound.Webhook{{URL: "http://127.0.0.1:9/h"}},
		BlockPrivateNetworks: true,
		AllowedNetworks:      []string{"10.0.0.0/33"},
	})
	if !errors.Is(err, outbound.ErrConfig) || !strings.Contains(err.Error(), "allowed_networks") {
		t.Fatalf("NewWithConfig: %v", err)
	}
}
