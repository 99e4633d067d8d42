package outbound

/*
#include "outbound.h"
*/
import "C"

import (
	"bytes"
	"errors"
	"io"
	"net/http"
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

// bytesPtr points C at b's bytes for the duration of a call (NULL when empty, which the C
// functions accept with a zero length).
func bytesPtr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}
