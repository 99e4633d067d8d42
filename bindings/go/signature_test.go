package outbound_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	outbound "outbound.invalid/bindings/go"
)

func TestSignGivesTheKnownHMACSHA1(t *testing.T) {
	// RFC 2202-style vector: HMAC-SHA1("key", "The quick brown fox jumps over the lazy dog").
	got := outbound.Sign("key", []byte("The quick brown fox jumps over the lazy dog"))
	if got != "de7c9b85b8b78aa6bc8a7a36f70a90701c9db4d9" {
		t.Fatalf("Sign = %s", got)
	}
	if !outbound.Verify("key", []byte("The quick brown fox jumps over the lazy dog"), strings.ToUpper(got)) {
		t.Error("Verify refuses upper-case hex")
	}
	if outbound.Verify("key", []byte("the quick brown fox jumps over the lazy dog"), got) {
		t.Error("Verify accepts another body")
	}
	if outbound.Verify("key", nil, "") || outbound.Verify("", nil, "xyz") {
		t.Error("Verify accepts an empty or malformed signature")
	}
	if outbound.Sign("", nil) != outbound.Sign("", []byte{}) {
		t.Error("nil and empty bodies sign differently")
	}
}

// The middleware in front of a handler, fed by the client's own webhook requests.
func TestVerifyMiddlewarePassesSignedBodiesAndAnswers401Otherwise(t *testing.T) {
	var mu sync.Mutex
	var passed [][]byte
	handler := outbound.VerifyMiddleware("s3cret", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		passed = append(passed, body)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	good := httptest.NewServer(handler) // httptest listens on 127.0.0.1
	defer good.Close()
	c := newClient(t, "", outbound.Config{Webhooks: []outbound.Webhook{{URL: good.URL}}, SharedSecret: "s3cret"})
	for _, m := range []outbound.Message{
		outbound.Track{UserId: "u", Event: "Signed Up", Properties: outbound.Properties{"plan": "pro"}},
		outbound.Identify{UserId: "u", Traits: outbound.Traits{"name": "Ada ☃"}},
		outbound.Delete{UserId: "u"},
	} {
		mustEnqueue(t, c, m)
	}
	flush(t, c)
	mu.Lock()
	if len(passed) != 3 {
		t.Fatalf("%d signed bodies reached the handler, want 3", len(passed))
	}
	body := passed[0]
	mu.Unlock()

	// The same body, signed with another secret, unsigned, or changed by a byte: 401.
	post := func(body []byte, sig string) int {
		req, _ := http.NewRequest(http.MethodPost, good.URL, bytes.NewReader(body))
		if sig != "" {
			req.Header.Set("X-Signature", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(body, outbound.Sign("s3cret", body)); code != http.StatusNoContent {
		t.Errorf("a good signature: %d", code)
	}
	if code := post(body, outbound.Sign("other", body)); code != http.StatusUnauthorized {
		t.Errorf("another secret: %d", code)
	}
	if code := post(body, ""); code != http.StatusUnauthorized {
		t.Errorf("no signature: %d", code)
	}
	changed := bytes.Replace(body, []byte(`"userId":"u"`), []byte(`"userId":"v"`), 1)
	if code := post(changed, outbound.Sign("s3cret", body)); code != http.StatusUnauthorized {
		t.Errorf("a changed body: %d", code)
	}
	big := bytes.Repeat([]byte("x"), outbound.MaxVerifiedBody+1)
	if code := post(big, outbound.Sign("s3cret", big)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the limit: %d", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(passed) != 4 {
		t.Errorf("the handler ran %d times, want 4", len(passed))
	}
}

// Node's receiver (crates/outbound/tests/node/receiver.js) checks X-Signature the spec's way:
// HMAC-SHA1 of JSON.stringify(JSON.parse(body)).
func TestNodeVerifiesTheSignaturesOfBodiesSentFromGo(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is required for the signature interop check")
	}
	script := filepath.Join(repoRoot(t), "crates", "outbound", "tests", "node", "receiver.js")
	cmd := exec.Command(node, script, "shared s3cret ☃", "7")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "port ") {
		t.Fatalf("node receiver did not start: %q", lines.Text())
	}
	url := "http://127.0.0.1:" + strings.TrimPrefix(lines.Text(), "port ")

	c := newClient(t, "", outbound.Config{Webhooks: []outbound.Webhook{{URL: url}}, SharedSecret: "shared s3cret ☃"})
	props, _ := valuesCase()
	for _, m := range []outbound.Message{
		outbound.Identify{UserId: "u", Traits: outbound.Traits{"1": "index first", "b": 2}},
		outbound.Track{UserId: "u", Event: "Values", Properties: props},
		outbound.Page{UserId: "u", Properties: outbound.Properties{"path": "/ü"}},
		outbound.Screen{UserId: "u", Name: "S"},
		outbound.Group{UserId: "u", GroupId: "g", Traits: outbound.Traits{"big": 1e300}},
		outbound.Alias{PreviousId: "p", UserId: "u"},
		outbound.Delete{UserId: "u"},
	} {
		mustEnqueue(t, c, m)
	}
	flush(t, c)
	// Read the rest of its output to the end (it exits after the 7th), then reap it.
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		rest := ""
		for lines.Scan() {
			rest += lines.Text() + "\n"
		}
		done <- result{rest, cmd.Wait()}
	}()
	select {
	case r := <-done:
		if r.err != nil || !strings.HasPrefix(r.out, "verified 7") {
			t.Fatalf("node receiver: %v\n%s", r.err, r.out)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("node receiver did not verify 7 bodies")
	}
}

func TestCodesAreTheHeadersCodes(t *testing.T) {
	names := map[outbound.Code]string{
		outbound.ErrNullArgument: "OUTBOUND_RESULT_NULL_ARGUMENT", outbound.ErrInvalidUTF8: "OUTBOUND_RESULT_INVALID_UTF8",
		outbound.ErrInvalidJSON: "OUTBOUND_RESULT_INVALID_JSON", outbound.ErrWrongType: "OUTBOUND_RESULT_WRONG_TYPE",
		outbound.ErrMissingField: "OUTBOUND_RESULT_MISSING_FIELD", outbound.ErrInvalidField: "OUTBOUND_RESULT_INVALID_FIELD",
		outbound.ErrMessageTooLarge: "OUTBOUND_RESULT_MESSAGE_TOO_LARGE", outbound.ErrQueueFull: "OUTBOUND_RESULT_QUEUE_FULL",
		outbound.ErrClosed: "OUTBOUND_RESULT_CLOSED", outbound.ErrConfig: "OUTBOUND_RESULT_CONFIG",
		outbound.ErrInsufficientSize: "OUTBOUND_RESULT_INSUFFICIENT_SIZE", outbound.ErrIncomplete: "OUTBOUND_RESULT_INCOMPLETE",
		outbound.ErrBadSignature: "OUTBOUND_RESULT_BAD_SIGNATURE", outbound.ErrPanic: "OUTBOUND_RESULT_PANIC",
		outbound.ErrOther: "OUTBOUND_RESULT_OTHER", outbound.ErrSpool: "OUTBOUND_RESULT_SPOOL",
		outbound.ErrNotRecording: "OUTBOUND_RESULT_NOT_RECORDING",
	}
	for code, name := range names {
		if code.String() != name {
			t.Errorf("Code(%d) is %s in liboutbound, want %s", uint32(code), code.String(), name)
		}
	}
}
