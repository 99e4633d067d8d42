package outbound_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	outbound "outbound.invalid/bindings/go"
)

// Per-webhook endpoint settings (Webhook.Auth, TLS, SignatureHeader, SignatureScheme,
// RateLimit) against real receivers on 127.0.0.1, the SignSHA256 / VerifySHA256 helpers, and
// bad settings refused naming the field.

func TestWebhookBearerAuthAndHmacSha256InItsOwnHeaderArrive(t *testing.T) {
	hook := newReceiver(t)
	c := newClient(t, "", outbound.Config{
		Webhooks: []outbound.Webhook{{
			URL:             hook.URL + "/in",
			Auth:            outbound.BearerAuth{Token: "t0k3n.abc"},
			SignatureHeader: "X-Hub-Signature-256",
			SignatureScheme: "hmac-sha256",
		}},
		SharedSecret: "s3cret",
	})
	mustEnqueue(t, c, outbound.Track{UserId: "u1", Event: "Paid"})
	flush(t, c)
	r := hook.waitRequests(t, 1)[0]
	if got := r.Header.Get("Authorization"); got != "Bearer t0k3n.abc" {
		t.Errorf("Authorization %q", got)
	}
	sig := r.Header.Get("X-Hub-Signature-256")
	// The scheme's rule written with the standard library alone.
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write(r.Body)
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); sig != want {
		t.Errorf("X-Hub-Signature-256 %q, want %q", sig, want)
	}
	if !outbound.VerifySHA256("s3cret", r.Body, sig) || outbound.VerifySHA256("other", r.Body, sig) {
		t.Errorf("VerifySHA256 of %q", sig)
	}
	if outbound.SignSHA256("s3cret", r.Body) != sig {
		t.Errorf("SignSHA256 differs from the header")
	}
	for _, h := range []string{"X-Signature", "X-Signature-256"} {
		if r.Header.Get(h) != "" {
			t.Errorf("%s sent too: %q", h, r.Header.Get(h))
		}
	}
}

func TestWebhookBasicAuthArrivesAsAuthorization(t *testing.T) {
	hook := newReceiver(t)
	c := newClient(t, "", outbound.Config{
		Webhooks: []outbound.Webhook{{
			URL:  hook.URL + "/in",
			Auth: &outbound.BasicAuth{User: "Aladdin", Password: "open sesame"}, // a pointer works too
		}},
	})
	mustEnqueue(t, c, outbound.Track{UserId: "u1", Event: "Paid"})
	flush(t, c)
	r := hook.waitRequests(t, 1)[0]
	// RFC 7617's own example pair.
	if got := r.Header.Get("Authorization"); got != "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==" {
		t.Errorf("Authorization %q", got)
	}
}

// An OAuth2 token endpoint on 127.0.0.1: answers every client-credentials request with one
// token and records what it was asked.
type tokenServer struct {
	*httptest.Server
	mu    sync.Mutex
	asked []*http.Request
	forms []url.Values
}

func newTokenServer(t *testing.T, token string) *tokenServer {
	t.Helper()
	s := &tokenServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		s.mu.Lock()
		s.asked = append(s.asked, r.Clone(r.Context()))
		s.forms = append(s.forms, r.PostForm)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"` + token + `","token_type":"Bearer","expires_in":3600}`))
	}))
	s.Server.Listener.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Server.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func TestWebhookOAuth2TokenIsAskedOnceAndSentAsBearer(t *testing.T) {
	tokens := newTokenServer(t, "tok-from-server")
	hook := newReceiver(t)
	c := newClient(t, "", outbound.Config{
		Webhooks: []outbound.Webhook{{URL: hook.URL + "/in", Auth: outbound.OAuth2{
			TokenURL: tokens.URL + "/token", ClientID: "my-client", ClientSecret: "my-secret", Audience: "https://api.example.com",
		}}},
	})
	for range 3 {
		mustEnqueue(t, c, outbound.Track{UserId: "u1", Event: "Paid"})
	}
	flush(t, c)
	for _, r := range hook.waitRequests(t, 3) {
		if got := r.Header.Get("Authorization"); got != "Bearer tok-from-server" {
			t.Errorf("Authorization %q", got)
		}
	}
	tokens.mu.Lock()
	defer tokens.mu.Unlock()
	if len(tokens.asked) != 1 {
		t.Fatalf("the token was asked %d times", len(tokens.asked))
	}
	if user, pass, ok := tokens.asked[0].BasicAuth(); !ok || user != "my-client" || pass != "my-secret" {
		t.Errorf("token request's Basic auth %q %q %v", user, pass, ok)
	}
	want := url.Values{"grant_type": {"client_credentials"}, "audience": {"https://api.example.com"}}
	if got := tokens.forms[0]; got.Encode() != want.Encode() {
		t.Errorf("token request's form %v, want %v", got, want)
	}
}

func TestWebhookOAuth2ClientProvesItselfWithASignedJWT(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	tokens := newTokenServer(t, "tok-for-jwt")
	hook := newReceiver(t)
	c := newClient(t, "", outbound.Config{
		Webhooks: []outbound.Webhook{{URL: hook.URL + "/in", Auth: outbound.OAuth2{
			TokenURL: tokens.URL + "/token", ClientID: "my-client", ClientAssertionKey: keyPEM, Scope: "events:write",
		}}},
	})
	mustEnqueue(t, c, outbound.Track{UserId: "u1", Event: "Paid"})
	flush(t, c)
	if got := hook.waitRequests(t, 1)[0].Header.Get("Authorization"); got != "Bearer tok-for-jwt" {
		t.Errorf("the webhook's Authorization %q", got)
	}
	tokens.mu.Lock()
	defer tokens.mu.Unlock()
	if len(tokens.asked) != 1 {
		t.Fatalf("the token was asked %d times", len(tokens.asked))
	}
	if got := tokens.asked[0].Header.Get("Authorization"); got != "" {
		t.Errorf("the token request has Authorization %q", got)
	}
	form := tokens.forms[0]
	for field, want := range map[string]string{
		"grant_type":            "client_credentials",
		"scope":                 "events:write",
		"client_id":             "my-client",
		"client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
	} {
		if got := form.Get(field); got != want {
			t.Errorf("form %s = %q, want %q", field, got, want)
		}
	}
	parts := strings.Split(form.Get("client_assertion"), ".")
	if len(parts) != 3 {
		t.Fatalf("client_assertion %q is not a JWT", form.Get("client_assertion"))
	}
	var header struct{ Alg, Typ string }
	var claims struct {
		Iss, Sub, Aud, Jti string
		Iat, Exp           int64
	}
	for i, into := range []any{&header, &claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, into); err != nil {
			t.Fatal(err)
		}
	}
	if header.Alg != "ES256" {
		t.Errorf("alg %q", header.Alg)
	}
	if claims.Iss != "my-client" || claims.Sub != "my-client" || claims.Aud != tokens.URL+"/token" || claims.Jti == "" {
		t.Errorf("claims %+v", claims)
	}
	if now := time.Now().Unix(); claims.Iat < now-60 || claims.Iat > now+5 || claims.Exp != claims.Iat+300 {
		t.Errorf("iat %d, exp %d, now %d", claims.Iat, claims.Exp, now)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		t.Fatalf("signature of %d bytes: %v", len(sig), err)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(&key.PublicKey, digest[:], r, s) {
		t.Error("the ES256 signature does not verify with the key's public half")
	}
}

func TestSignSHA256MatchesGitHubsPublishedVector(t *testing.T) {
	// docs.github.com, "Validating webhook deliveries".
	const vector = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	secret, body := "It's a Secret to Everybody", []byte("Hello, World!")
	if got := outbound.SignSHA256(secret, body); got != vector {
		t.Errorf("SignSHA256 = %q", got)
	}
	if !outbound.VerifySHA256(secret, body, vector) || !outbound.VerifySHA256(secret, body, "sha256="+strings.ToUpper(vector[7:])) {
		t.Error("the vector does not verify")
	}
	for _, bad := range []string{vector[7:], "", vector[:70], "sha256=" + strings.Repeat("0", 64)} {
		if outbound.VerifySHA256(secret, body, bad) {
			t.Errorf("%q verifies", bad)
		}
	}
}

func TestWebhookRateLimitSpacesRequestsAndHealthCountsTheWaits(t *testing.T) {
	hook := newReceiver(t)
	c := newClient(t, "", outbound.Config{
		Webhooks: []outbound.Webhook{{URL: hook.URL + "/in", RateLimit: &outbound.RateLimit{PerSecond: 5, Burst: 1}}},
	})
	start := time.Now()
	for range 4 {
		mustEnqueue(t, c, outbound.Track{UserId: "u1", Event: "E"})
	}
	flush(t, c)
	if took := time.Since(start); took < 550*time.Millisecond {
		t.Errorf("4 requests at 5 a second took %s", took)
	}
	hook.waitRequests(t, 4)
	health, err := c.(outbound.DeliveryRecords).WebhookHealth()
	if err != nil || len(health) != 1 {
		t.Fatalf("WebhookHealth = %v, %v", health, err)
	}
	if health[0].Throttled < 3 {
		t.Errorf("Throttled %d", health[0].Throttled)
	}
	if s := health[0].State; s != outbound.HealthHealthy && s != outbound.HealthThrottled {
		t.Errorf("State %q", s)
	}
}

func TestBadEndpointSettingsAreRefusedNamingTheField(t *testing.T) {
	const url = "http://127.0.0.1:9/in"
	var nilBearer *outbound.BearerAuth
	cases := []struct {
		name string
		hook outbound.Webhook
		text string
	}{
		{"no requests a second", outbound.Webhook{URL: url, RateLimit: &outbound.RateLimit{PerSecond: 0}},
			"webhooks[0].rate_limit.per_second: must be at least 1"},
		{"a negative rate", outbound.Webhook{URL: url, RateLimit: &outbound.RateLimit{PerSecond: -5}},
			"webhooks[0].rate_limit.per_second"},
		{"a negative burst", outbound.Webhook{URL: url, RateLimit: &outbound.RateLimit{PerSecond: 5, Burst: -1}},
			"webhooks[0].rate_limit.burst"},
		{"a user with a colon", outbound.Webhook{URL: url, Auth: outbound.BasicAuth{User: "a:b"}},
			"webhooks[0].auth.user"},
		{"an empty token", outbound.Webhook{URL: url, Auth: outbound.BearerAuth{}}, "webhooks[0].auth.token"},
		{"a NUL in a token", outbound.Webhook{URL: url, Auth: outbound.BearerAuth{Token: "a\x00b"}},
			"webhooks[0].auth.token"},
		{"a nil auth pointer", outbound.Webhook{URL: url, Auth: nilBearer}, "webhooks[0].auth"},
		{"an ftp token URL", outbound.Webhook{URL: url, Auth: outbound.OAuth2{TokenURL: "ftp://x", ClientID: "i", ClientSecret: "s"}},
			"webhooks[0].auth.token_url"},
		{"a secret and an assertion key", outbound.Webhook{URL: url, Auth: outbound.OAuth2{TokenURL: url, ClientID: "i",
			ClientSecret: "s", ClientAssertionKey: "-----BEGIN PRIVATE KEY-----"}}, "webhooks[0].auth.client_secret"},
		{"an assertion key that is not a key", outbound.Webhook{URL: url, Auth: outbound.OAuth2{TokenURL: url, ClientID: "i",
			ClientAssertionKey: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}},
			"webhooks[0].auth.client_assertion_key"},
		{"a certificate without its key", outbound.Webhook{URL: url, TLS: outbound.WebhookTLS{ClientCert: "-----BEGIN CERTIFICATE-----"}},
			"webhooks[0].tls.client_key"},
		{"a reserved signature header", outbound.Webhook{URL: url, SignatureHeader: "Content-Type"},
			"webhooks[0].signature_header"},
		{"an unknown scheme", outbound.Webhook{URL: url, SignatureScheme: "svix"}, "webhooks[0].signature_scheme"},
		{"auth and an Authorization header", outbound.Webhook{URL: url, Headers: map[string]string{"Authorization": "x"},
			Auth: outbound.BearerAuth{Token: "t"}}, "webhooks[0].auth"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := outbound.NewWithConfig("", outbound.Config{Webhooks: []outbound.Webhook{tc.hook}, SharedSecret: "s"})
			if c != nil || !errors.Is(err, outbound.ErrConfig) {
				t.Fatalf("NewWithConfig = %v, %v; want ErrConfig", c, err)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("%q does not name %q", err, tc.text)
			}
		})
	}
	// The second webhook's error names its index.
	_, err := outbound.NewWithConfig("", outbound.Config{Webhooks: []outbound.Webhook{
		{URL: url}, {URL: url, RateLimit: &outbound.RateLimit{PerSecond: 0}}}})
	if !errors.Is(err, outbound.ErrConfig) || !strings.Contains(err.Error(), "webhooks[1].rate_limit.per_second") {
		t.Errorf("second webhook: %v", err)
	}
}
