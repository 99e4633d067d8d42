// A sample webhook receiver for the compose fleet (standard library only): it verifies each
// request's X-Signature (hex HMAC-SHA1 of the raw body with the source's shared secret, as
// the relay signs) and answers 401 when it does not match, 200 otherwise, and counts the
// distinct messageIds it accepted.
//
//	POST /hook   a webhook body
//	GET  /stats  {"accepted":N,"distinct":N,"bad_signatures":N}
//	GET  /ids    the distinct messageIds accepted, one a line
//
// Environment: LISTEN (default :8080), SHARED_SECRET_FILE (the secret, a trailing line break
// ignored) or SHARED_SECRET.
package main

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

type store struct {
	mu       sync.Mutex
	ids      map[string]struct{}
	order    []string
	accepted int
	bad      int
}

func main() {
	secret := os.Getenv("SHARED_SECRET")
	if f := os.Getenv("SHARED_SECRET_FILE"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			log.Fatalf("SHARED_SECRET_FILE: %v", err)
		}
		secret = strings.TrimRight(string(b), "\r\n")
	}
	if secret == "" {
		log.Fatal("set SHARED_SECRET_FILE or SHARED_SECRET")
	}
	listen := os.Getenv("LISTEN")
	if listen == "" {
		listen = ":8080"
	}
	st := &store{ids: map[string]struct{}{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read the body", http.StatusBadRequest)
			return
		}
		mac := hmac.New(sha1.New, []byte(secret))
		mac.Write(body)
		want := hex.EncodeToString(mac.Sum(nil))
		if !hmac.Equal([]byte(want), []byte(r.Header.Get("X-Signature"))) {
			st.mu.Lock()
			st.bad++
			st.mu.Unlock()
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var msg struct {
			MessageID string `json:"messageId"`
		}
		_ = json.Unmarshal(body, &msg)
		st.mu.Lock()
		st.accepted++
		if _, seen := st.ids[msg.MessageID]; !seen {
			st.ids[msg.MessageID] = struct{}{}
			st.order = append(st.order, msg.MessageID)
		}
		st.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		st.mu.Lock()
		defer st.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"accepted\":%d,\"distinct\":%d,\"bad_signatures\":%d}\n", st.accepted, len(st.ids), st.bad)
	})
	mux.HandleFunc("/ids", func(w http.ResponseWriter, r *http.Request) {
		st.mu.Lock()
		ids := strings.Join(st.order, "\n")
		st.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, ids)
	})
	srv := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("receiver on %s", listen)
	log.Fatal(srv.ListenAndServe())
}
