package outbound

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// Sign returns the X-Signature of body with secret: the lowercase hex HMAC-SHA1 of the exact
// body bytes (40 characters).
func Sign(secret string, body []byte) string {
	var out [C.OUTBOUND_SIGNATURE_BUFFER_LEN]C.char
	rc := C.outbound_sign(bytesPtr([]byte(secret)), C.size_t(len(secret)),
		bytesPtr(body), C.size_t(len(body)), &out[0], C.size_t(len(out)), nil)
	if rc != 0 {
		// Only a bug can get here (the buffer has the documented size).
		panic(&Error{Op: "Sign", Code: Code(rc)})
	}
	return C.GoString(&out[0])
}

// Verify reports whether signature (an X-Signature header value) matches the raw request
// body and secret. It compares in constant time with respect to the digest; hex digits of
// either case are accepted.
func Verify(secret string, body []byte, signature string) bool {
	rc := C.outbound_verify(bytesPtr([]byte(secret)), C.size_t(len(secret)),
		bytesPtr(body), C.size_t(len(body)),
		(*C.char)(unsafe.Pointer(bytesPtr([]byte(signature)))), C.size_t(len(signature)))
	return rc == 0
}

// SignSHA256 returns the "hmac-sha256" scheme's signature of body with secret: "sha256=" and
// the lowercase hex HMAC-SHA256 of the exact body bytes (71 characters), the value of
// X-Signature-256 (or of the webhook's SignatureHeader); GitHub's X-Hub-Signature-256 form.
func SignSHA256(secret string, body []byte) string {
	var out [C.OUTBOUND_SIGNATURE_SHA256_BUFFER_LEN]C.char
	rc := C.outbound_sign_sha256(bytesPtr([]byte(secret)), C.size_t(len(secret)),
		bytesPtr(body), C.size_t(len(body)), &out[0], C.size_t(len(out)), nil)
	if rc != 0 {
		// Only a bug can get here (the buffer has the documented size).
		panic(&Error{Op: "SignSHA256", Code: Code(rc)})
	}
	return C.GoString(&out[0])
}

// VerifySHA256 reports whether signature (an "hmac-sha256" header value, "sha256=<hex>")
// matches the raw request body and secret. It compares in constant time with respect to the
// digest; hex digits of either case are accepted; anything else is a mismatch.
func VerifySHA256(secret string, body []byte, signature string) bool {
	rc := C.outbound_verify_sha256(bytesPtr([]byte(secret)), C.size_t(len(secret)),
		bytesPtr(body), C.size_t(len(body)),
		(*C.char)(unsafe.Pointer(bytesPtr([]byte(signature)))), C.size_t(len(signature)))
	return rc == 0
}

// MaxVerifiedBody is the largest request body VerifyMiddleware reads (1 MiB; one message is
// at most 32 KB). A larger one is answered 413.
const MaxVerifiedBody = 1 << 20

// VerifyMiddleware returns a handler that checks each request's X-Signature against its raw
// body with secret before calling next: a missing or wrong signature is answered 401 and next
// is not called. next gets the body unread (it was buffered to be verified).
func VerifyMiddleware(secret string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxVerifiedBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			} else {
				http.Error(w, "cannot read the request body", http.StatusBadRequest)
			}
			return
		}
		sig := r.Header.Get("X-Signature")
		if sig == "" || !Verify(secret, body, sig) {
			http.Error(w, "invalid X-Signature", http.StatusUnauthorized)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// DefaultStandardTolerance is the replay tolerance most receivers should pass to
// VerifyStandard: 5 minutes, as the Standard Webhooks libraries use.
const DefaultStandardTolerance = C.OUTBOUND_STANDARD_TOLERANCE_SECONDS * time.Second

// SignStandard returns the Standard Webhooks webhook-signature value of a request: "v1,<base64
// HMAC-SHA256 of webhookID.timestamp.body>" for each whsec_ secret of secrets (space
// separated), space separated. The client does this itself with SignatureScheme
// "standard-webhooks"; this is for receivers' tests. A secret that is not a whsec_ secret is
// an error with Code ErrConfig.
func SignStandard(secrets, webhookID string, timestamp int64, body []byte) (string, error) {
	if err := noNUL("SignStandard", ErrConfig, secrets, webhookID); err != nil {
		return "", err
	}
	cs, cid := C.CString(secrets), C.CString(webhookID)
	defer C.free(unsafe.Pointer(cs))
	defer C.free(unsafe.Pointer(cid))
	// 48 bytes per signature ("v1,", 44 base64 characters, a space or the NUL).
	out := make([]C.char, 48*max(1, len(strings.Fields(secrets))))
	runtime.LockOSThread() // the error text is the calling thread's
	defer runtime.UnlockOSThread()
	rc := C.outbound_sign_standard(cs, cid, C.int64_t(timestamp), bytesPtr(body), C.size_t(len(body)),
		&out[0], C.size_t(len(out)), nil)
	if rc != 0 {
		return "", takeError("SignStandard", rc, C.gob_last_error())
	}
	return C.GoString(&out[0]), nil
}

// VerifyStandard checks a Standard Webhooks request: the raw body and the webhook-id,
// webhook-timestamp and webhook-signature header values as received, against the receiver's
// whsec_ secret(s) (space separated, during a rotation). It returns nil when some v1
// signature matches some secret (constant-time comparison) and the timestamp is within
// tolerance of the receiver's clock, before or after (pass DefaultStandardTolerance): an old
// request replayed is refused. Otherwise an *Error with Code ErrBadSignature (no match, a
// timestamp that is not a number or is outside the tolerance; the message says which), or
// ErrConfig when a secret is not a whsec_ secret.
func VerifyStandard(secrets string, body []byte, webhookID, webhookTimestamp, webhookSignature string,
	tolerance time.Duration) error {
	if err := noNUL("VerifyStandard", ErrBadSignature, secrets, webhookID, webhookTimestamp, webhookSignature); err != nil {
		return err
	}
	if tolerance < 0 {
		tolerance = 0
	}
	cs, cid, cts, csig := C.CString(secrets), C.CString(webhookID), C.CString(webhookTimestamp),
		C.CString(webhookSignature)
	defer C.free(unsafe.Pointer(cs))
	defer C.free(unsafe.Pointer(cid))
	defer C.free(unsafe.Pointer(cts))
	defer C.free(unsafe.Pointer(csig))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rc := C.outbound_verify_standard(cs, cid, cts, bytesPtr(body), C.size_t(len(body)), csig,
		C.uint64_t(tolerance/time.Second))
	if rc != 0 {
		return takeError("VerifyStandard", rc, C.gob_last_error())
	}
	return nil
}

// VerifyStandardMiddleware returns a handler that checks each request's Standard Webhooks
// headers against its raw body with secrets and DefaultStandardTolerance before calling next:
// a missing header, a wrong signature or a stale timestamp is answered 401 and next is not
// called. next gets the body unread (it was buffered to be verified).
func VerifyStandardMiddleware(secrets string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxVerifiedBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			} else {
				http.Error(w, "cannot read the request body", http.StatusBadRequest)
			}
			return
		}
		id, ts, sig := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature")
		if id == "" || ts == "" || sig == "" ||
			VerifyStandard(secrets, body, id, ts, sig, DefaultStandardTolerance) != nil {
			http.Error(w, "invalid webhook-signature", http.StatusUnauthorized)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// noNUL refuses texts C cannot carry whole (a NUL would cut them short).
func noNUL(op string, code Code, texts ...string) error {
	for i, s := range texts {
		if strings.IndexByte(s, 0) >= 0 {
			return &Error{Op: op, Code: code, Message: "argument " + strconv.Itoa(i+1) + " contains a NUL byte"}
		}
	}
	return nil
}

// bytesPtr points C at b's bytes for the duration of a call (NULL when empty, which the C
// functions accept with a zero length).
func bytesPtr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}
