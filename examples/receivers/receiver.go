// A webhook receiver that checks X-Signature (Go standard library only).
//
//	OUTBOUND_SECRET=s3cret PORT=8080 go run receiver.go
//
// Answers 204 to a correctly signed POST and 401 to anything else.
package main

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
)

// signatureMatches reports whether header is the lowercase hex HMAC-SHA1 of the raw body.
// An empty header (none was sent) is not a match.
func signatureMatches(secret, rawBody []byte, header string) bool {
	given, err := hex.DecodeString(strings.TrimSpace(header))
	if err != nil || len(given) != sha1.Size {
		return false
	}
	mac := hmac.New(sha1.New, secret)
	mac.Write(rawBody)
	return hmac.Equal(mac.Sum(nil), given) // constant time
}

func main() {
	secret := []byte(os.Getenv("OUTBOUND_SECRET"))
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil || !signatureMatches(secret, raw, r.Header.Get("X-Signature")) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var message map[string]any
		if err := json.Unmarshal(raw, &message); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		// Answer fast and deduplicate: see "Delivery guarantees" in docs/receivers.md.
		fmt.Println(message["type"], message["messageId"])
		w.WriteHeader(http.StatusNoContent)
	})
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, nil))
}
