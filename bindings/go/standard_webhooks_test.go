package outbound_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	outbound "outbound.invalid/bindings/go"
)

// The Standard Webhooks reference vector (github.com/standard-webhooks/standard-webhooks:
// libraries/python/tests/test_webhooks.py test_sign_function, and the JavaScript library's
// "sign function works").
const (
	swSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swOld    = "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"
	swID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	swTS     = 1614265330
	swBody   = `{"test": 2432232314}`
	swSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

// goSignature is the spec's rule written with Go's standard library only.
func goSignature(t *testing.T, secret, id, ts string, body []byte) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func TestSignStandardGivesThePublishedVector(t *testing.T) {
	got, err := outbound.SignStandard(swSecret, swID, swTS, []byte(swBody))
	if err != nil || got != swSig {
		t.Fatalf("SignStandard = %q, %v; want %s", got, err, swSig)
	}
	two, err := outbound.SignStandard(swSecret+" "+swOld, swID, swTS, []byte(swBody))
	if err != nil || two != swSig+" "+goSignature(t, swOld, swID, strconv.Itoa(swTS), []byte(swBody)) {
		t.Fatalf("two secrets: %q, %v", two, err)
	}
	if _, err := outbound.SignStandard("whsec_!!!", swID, swTS, nil); !errors.Is(err, outbound.ErrConfig) {
		t.Errorf("a bad secret: %v", err)
	}
}

func TestVerifyStandardChecksSignatureAndTolerance(t *testing.T) {
	body := []byte(swBody)
	// The vector is from 2021: outside today's tolerance, inside one reaching back to it.
	err := outbound.VerifyStandard(swSecret, body, swID, strconv.Itoa(swTS), swSig, outbound.DefaultStandardTolerance)
	if !errors.Is(err, outbound.ErrBadSignature) || !strings.Contains(err.Error(), "outside the tolerance") {
		t.Errorf("the 2021 vector today: %v", err)
	}
	reach := time.Since(time.Unix(swTS, 0)) + time.Minute
	if err := outbound.VerifyStandard(swSecret, body, swID, strconv.Itoa(swTS), swSig, reach); err != nil {
		t.Errorf("the vector within reach: %v", err)
	}
	if outbound.DefaultStandardTolerance != 5*time.Minute {
		t.Errorf("DefaultStandardTolerance = %s", outbound.DefaultStandardTolerance)
	}
	now := time.Now().Unix()
	for _, c := range []struct {
		offset int64
		ok     bool
	}{{-290, true}, {290, true}, {-310, false}, {310, false}} {
		ts := strconv.FormatInt(now+c.offset, 10)
		sig := goSignature(t, swSecret, "msg_1", ts, body)
		err := outbound.VerifyStandard(swSecret, body, "msg_1", ts, sig, outbound.DefaultStandardTolerance)
		if (err == nil) != c.ok {
			t.Errorf("timestamp %+d s: %v", c.offset, err)
		}
	}
	ts := strconv.FormatInt(now, 10)
	sig := goSignature(t, swSecret, "msg_1", ts, body)
	for name, err := range map[string]error{
		"another body":   outbound.VerifyStandard(swSecret, []byte(`{}`), "msg_1", ts, sig, time.Minute),
		"another id":     outbound.VerifyStandard(swSecret, body, "msg_2", ts, sig, time.Minute),
		"another secret": outbound.VerifyStandard(swOld, body, "msg_1", ts, sig, time.Minute),
		"not a number":   outbound.VerifyStandard(swSecret, body, "msg_1", "soon", sig, time.Minute),
		"a NUL":          outbound.VerifyStandard(swSecret, body, "msg_1\x00", ts, sig, time.Minute),
	} {
		if !errors.Is(err, outbound.ErrBadSignature) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := outbound.VerifyStandard(swOld+" "+swSecret, body, "msg_1", ts, sig, time.Minute); err != nil {
		t.Errorf("a receiver holding both secrets: %v", err)
	}
	if err := outbound.VerifyStandard("whsec_!!!", body, "msg_1", ts, sig, time.Minute); !errors.Is(err, outbound.ErrConfig) {
		t.Errorf("the receiver's bad secret: %v", err)
	}
}

// The client's own requests, checked by Go's hmac and by the middleware in front of a handler.
func TestStandardWebhooksRequestsFromTheClientVerify(t *testing.T) {
	var mu sync.Mutex
	var got []request
	var passed int
	verified := outbound.VerifyStandardMiddleware(swOld, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		passed++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, request{r.URL.Path, r.Header.Clone(), body, time.Now()})
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		verified.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := newClient(t, "", outbound.Config{
		Webhooks:        []outbound.Webhook{{URL: srv.URL}},
		SharedSecret:    swSecret + " " + swOld,
		SignatureScheme: "standard-webhooks",
	})
	id := mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "Paid", Properties: outbound.Properties{"total": 19.99}})
	flush(t, c)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || passed != 1 {
		t.Fatalf("%d requests, %d passed the middleware", len(got), passed)
	}
	h := got[0].Header
	ts := h.Get("webhook-timestamp")
	want := goSignature(t, swSecret, id, ts, got[0].Body) + " " + goSignature(t, swOld, id, ts, got[0].Body)
	if h.Get("webhook-id") != id || h.Get("webhook-signature") != want || h.Get("X-Signature") != "" {
		t.Errorf("headers %v, want webhook-id %s and webhook-signature %s", h, id, want)
	}
}

func TestUnknownSignatureSchemeIsAConfigError(t *testing.T) {
	_, err := outbound.NewWithConfig("", outbound.Config{
		Webhooks:        []outbound.Webhook{{URL: "http://127.0.0.1:9/h"}},
		SignatureScheme: "svix",
	})
	if !errors.Is(err, outbound.ErrConfig) || !strings.Contains(err.Error(), "signature_scheme") {
		t.Fatalf("NewWithConfig: %v", err)
	}
}
