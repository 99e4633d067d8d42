package outbound_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	outbound "outbound.invalid/bindings/go"
)

// A receiver on 127.0.0.1 that holds every request for `hold` and records the most it had
// at once.
type concurrency struct {
	now, peak atomic.Int64
	done      atomic.Int64
}

func holdingServer(t *testing.T, hold time.Duration) (string, *concurrency) {
	t.Helper()
	c := &concurrency{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := c.now.Add(1)
		for {
			p := c.peak.Load()
			if n <= p || c.peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(hold)
		c.now.Add(-1)
		c.done.Add(1)
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String(), c
}

func TestMaxInFlightBoundsTheRequestsToADestination(t *testing.T) {
	for _, tc := range []struct{ maxInFlight, wantPeak int64 }{{2, 2}, {8, 8}} {
		url, seen := holdingServer(t, 300*time.Millisecond)
		c := newClient(t, "wk", outbound.Config{Endpoint: url, Size: 1, MaxInFlight: int(tc.maxInFlight)})
		// 24 messages, one request each (Size 1: a request carries at most one).
		for i := 0; i < 24; i++ {
			mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "E"})
		}
		flush(t, c)
		// The lane grows to the cap under this demand (requests held 300 ms), never past it.
		if got := seen.peak.Load(); got != tc.wantPeak {
			t.Errorf("MaxInFlight %d: at most %d requests at once, want %d", tc.maxInFlight, got, tc.wantPeak)
		}
	}
}

func TestTheSpoolKeepsWhatCloseLeftForTheNextClient(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "spool")
	down := newReceiver(t)
	down.setStatus(http.StatusServiceUnavailable)
	a, err := outbound.NewWithConfig("wk", outbound.Config{Endpoint: down.URL, Spool: spool,
		SpoolCommitInterval: 5 * time.Millisecond, CloseTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !a.(outbound.SpoolChecker).SpoolOK() {
		t.Error("Redis is up, but SpoolOK is false")
	}
	ids := map[string]bool{}
	for i := 0; i < 50; i++ {
		ids[mustEnqueue(t, a, outbound.Track{UserId: "u", Event: "Spooled"})] = true
	}
	if err := a.Close(); !errors.Is(err, outbound.ErrIncomplete) {
		t.Fatalf("Close with a receiver down = %v, want ErrIncomplete", err)
	}
	if s := a.Stats(); s.Spooled != 50 || s.Dropped != 0 {
		t.Fatalf("after Close: %+v, want 50 spooled and none dropped", s)
	}

	up := newReceiver(t)
	// A batch interval far past the wait below: resumed messages must not wait for it.
	b := newClient(t, "wk", outbound.Config{Endpoint: up.URL, Spool: spool, FlushAfter: time.Minute})
	deadline := time.Now().Add(20 * time.Second)
	for b.Stats().Delivered < 50 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if s := b.Stats(); s.Resumed != 50 || s.Delivered != 50 {
		t.Fatalf("the next client: %+v, want 50 resumed and delivered", s)
	}
	for _, m := range up.messages(t) {
		delete(ids, m["messageId"].(string))
	}
	if len(ids) != 0 {
		t.Errorf("%d spooled ids never reached the receiver", len(ids))
	}
}

func TestASecondClientOnOneSpoolIsErrSpoolNamingThePath(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "only-one")
	newClient(t, "wk", outbound.Config{Endpoint: "http://127.0.0.1:9", Spool: spool, DryRun: true})
	c, err := outbound.NewWithConfig("wk", outbound.Config{Endpoint: "http://127.0.0.1:9", Spool: spool, DryRun: true})
	if c != nil || !errors.Is(err, outbound.ErrSpool) {
		t.Fatalf("NewWithConfig = %v, %v; want ErrSpool", c, err)
	}
	if !strings.Contains(err.Error(), "only-one") {
		t.Errorf("%q does not name the spool", err)
	}
}

func TestSpoolSettingsAreCheckedByTheCore(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		cfg  outbound.Config
		text string
	}{
		{"commit interval over 1 s", outbound.Config{Spool: dir, SpoolCommitInterval: 2 * time.Second}, "spool_commit_interval"},
		{"negative max bytes", outbound.Config{Spool: dir, SpoolMaxBytes: -1}, "SpoolMaxBytes"},
		{"negative max in flight", outbound.Config{MaxInFlight: -1}, "MaxInFlight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := outbound.NewWithConfig("wk", tc.cfg)
			if c != nil || !errors.Is(err, outbound.ErrConfig) {
				t.Fatalf("NewWithConfig = %v, %v; want ErrConfig", c, err)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("%q does not name %q", err, tc.text)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused configuration left files in the spool: %v", entries)
	}
}

func TestAFullSpoolRefusesCallsAsQueueFull(t *testing.T) {
	c := newClient(t, "wk", outbound.Config{Endpoint: stallServer(t), Spool: t.TempDir(), SpoolMaxBytes: 4096,
		Timeout: 500 * time.Millisecond, CloseTimeout: 100 * time.Millisecond})
	var full error
	for i := 0; i < 1000 && full == nil; i++ {
		full = c.Enqueue(outbound.Track{UserId: "u", Event: strings.Repeat("e", 200)})
	}
	if !errors.Is(full, outbound.ErrQueueFull) {
		t.Fatalf("1000 messages of 200+ bytes in a 4096-byte spool: %v, want ErrQueueFull", full)
	}
	if s := c.Stats(); s.QueueFull == 0 {
		t.Errorf("stats %+v: the refusal is not counted", s)
	}
}

// The Redis spool: Spool is a redis:// URL (OUTBOUND_TEST_REDIS, a server scripts/test-go.sh
// starts); what Close left is delivered by the next client on the same server and prefix.
func TestARedisSpoolKeepsWhatCloseLeftForTheNextClient(t *testing.T) {
	url := os.Getenv("OUTBOUND_TEST_REDIS")
	if url == "" {
		t.Skip("OUTBOUND_TEST_REDIS unset (scripts/test-go.sh starts a redis-server)")
	}
	spool := fmt.Sprintf("%s?prefix=go-%d", url, os.Getpid())
	down := newReceiver(t)
	down.setStatus(http.StatusServiceUnavailable)
	a, err := outbound.NewWithConfig("wk", outbound.Config{Endpoint: down.URL, Spool: spool,
		SpoolCommitInterval: 5 * time.Millisecond, CloseTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for i := 0; i < 50; i++ {
		ids[mustEnqueue(t, a, outbound.Track{UserId: "u", Event: "Spooled"})] = true
	}
	if err := a.Close(); !errors.Is(err, outbound.ErrIncomplete) {
		t.Fatalf("Close with a receiver down = %v, want ErrIncomplete", err)
	}
	if s := a.Stats(); s.Spooled != 50 || s.Dropped != 0 {
		t.Fatalf("after Close: %+v, want 50 spooled and none dropped", s)
	}
	up := newReceiver(t)
	b := newClient(t, "wk", outbound.Config{Endpoint: up.URL, Spool: spool, FlushAfter: time.Minute})
	deadline := time.Now().Add(20 * time.Second)
	for b.Stats().Delivered < 50 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if s := b.Stats(); s.Resumed != 50 || s.Delivered != 50 {
		t.Fatalf("the next client: %+v, want 50 resumed and delivered", s)
	}
	for _, m := range up.messages(t) {
		delete(ids, m["messageId"].(string))
	}
	if len(ids) != 0 {
		t.Errorf("%d spooled ids never reached the receiver", len(ids))
	}
}

// RedisAck "fsync" needs WAITAOF (Redis 7.2+): on an older server NewWithConfig says so;
// "memory" delivers as usual.
func TestRedisAckFsyncNeedsWaitaofAndMemoryWorks(t *testing.T) {
	url := os.Getenv("OUTBOUND_TEST_REDIS")
	if url == "" {
		t.Skip("OUTBOUND_TEST_REDIS unset (scripts/test-go.sh starts a redis-server)")
	}
	spool := fmt.Sprintf("%s?prefix=go-ack-%d", url, os.Getpid())
	rx := newReceiver(t)
	c, err := outbound.NewWithConfig("wk", outbound.Config{Endpoint: rx.URL, Spool: spool, RedisAck: "fsync"})
	switch {
	case err == nil:
		c.Close() // a Redis 7.2 or newer
	// Redis before 7.2 has no WAITAOF; a newer one without its AOF cannot fsync it.
	case errors.Is(err, outbound.ErrSpool) && (strings.Contains(err.Error(), "WAITAOF") ||
		strings.Contains(err.Error(), "appendonly")):
	default:
		t.Fatalf("RedisAck fsync: %v", err)
	}
	c = newClient(t, "wk", outbound.Config{Endpoint: rx.URL, Spool: spool, RedisAck: "memory"})
	mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "Acked"})
	flush(t, c)
	if n := len(rx.messages(t)); n != 1 {
		t.Fatalf("%d messages delivered, want 1", n)
	}
}

func TestAnUnreachableRedisSpoolIsErrSpoolWithoutThePassword(t *testing.T) {
	_, err := outbound.NewWithConfig("wk", outbound.Config{Spool: "redis://:s3cret@127.0.0.1:1/0"})
	if !errors.Is(err, outbound.ErrSpool) {
		t.Fatalf("err = %v, want ErrSpool", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("the password shows: %v", err)
	}
}

// SpoolOK follows the spool: false once a commit fails (its own redis-server killed), true
// again once one succeeds (restarted on the same port).
func TestSpoolOKIsFalseWhileRedisIsDownAndTrueOnceItIsBack(t *testing.T) {
	if os.Getenv("OUTBOUND_TEST_REDIS") == "" {
		t.Skip("OUTBOUND_TEST_REDIS unset (scripts/test-go.sh installs redis-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	var server *exec.Cmd
	start := func() {
		server = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", fmt.Sprint(port),
			"--dir", dir, "--appendonly", "yes", "--save", "")
		if err := server.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			// A PING answered PONG: this server is up (not merely a port that accepts).
			if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				buf := make([]byte, 7)
				c.SetDeadline(time.Now().Add(time.Second))
				_, werr := c.Write([]byte("PING\r\n"))
				n, _ := c.Read(buf)
				c.Close()
				if werr == nil && string(buf[:n]) == "+PONG\r\n" {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatal("redis-server did not start")
			}
		}
	}
	stop := func() { server.Process.Kill(); server.Wait() }
	start()
	defer func() { stop() }()
	c, err := outbound.NewWithConfig("wk", outbound.Config{Endpoint: newReceiver(t).URL,
		Spool: fmt.Sprintf("redis://127.0.0.1:%d/0?prefix=gook", port), CloseTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ok := c.(outbound.SpoolChecker).SpoolOK
	if !ok() {
		t.Fatal("Redis is up, but SpoolOK is false")
	}
	waitFor := func(want bool) bool {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if ok() == want {
				return true
			}
		}
		return false
	}
	stop()
	mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "While Down"})
	if !waitFor(false) {
		t.Fatal("Redis is down and a commit failed, but SpoolOK stays true")
	}
	start()
	mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "Back"})
	if !waitFor(true) {
		t.Fatal("Redis is back, but SpoolOK stays false")
	}
}

func TestQueueFullWaitWaitsForRoom(t *testing.T) {
	url, seen := holdingServer(t, 300*time.Millisecond)
	c := newClient(t, "wk", outbound.Config{Endpoint: url, Size: 1, MaxQueueSize: 1,
		QueueFullWait: 10 * time.Second})
	if err := c.Enqueue(outbound.Track{UserId: "u", Event: "First"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Enqueue(outbound.Track{UserId: "u", Event: "Second"}); err != nil {
		t.Fatalf("the second call should wait for room: %v", err)
	}
	if w := time.Since(start); w < 200*time.Millisecond || w > 8*time.Second {
		t.Fatalf("waited %v for a request of 300 ms", w)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := seen.done.Load(); n != 2 {
		t.Fatalf("%d requests answered", n)
	}

	// Without it, a full queue refuses at once.
	c = newClient(t, "wk", outbound.Config{Endpoint: url, Size: 1, MaxQueueSize: 1})
	if err := c.Enqueue(outbound.Track{UserId: "u", Event: "First"}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := c.Enqueue(outbound.Track{UserId: "u", Event: "Second"}); !errors.Is(err, outbound.ErrQueueFull) {
		t.Fatalf("got %v", err)
	}
	if w := time.Since(start); w > time.Second {
		t.Fatalf("refused after %v", w)
	}
	if _, err := outbound.NewWithConfig("wk", outbound.Config{Endpoint: url, QueueFullWait: 2 * time.Hour}); !errors.Is(err, outbound.ErrConfig) || !strings.Contains(err.Error(), "queue_full_wait") {
		t.Fatalf("2 hours: %v", err)
	}
}

// Dead letters live in the spool: they need one, their limits are the core's
// checks, and a message a webhook refuses for good stays there (its file outlives Close).
func TestDeadLettersAreKeptInTheSpoolWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  outbound.Config
		text string
	}{
		{"no spool", outbound.Config{DeadLetters: true}, "dead_letters"},
		{"negative max bytes", outbound.Config{DeadLetterMaxBytes: -1}, "DeadLetterMaxBytes"},
		{"negative retention", outbound.Config{DeadLetterRetention: -time.Second}, "DeadLetterRetention"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Webhooks = []outbound.Webhook{{URL: "http://127.0.0.1:9/hook"}}
			c, err := outbound.NewWithConfig("", tc.cfg)
			if c != nil || !errors.Is(err, outbound.ErrConfig) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("NewWithConfig = %v, %v; want ErrConfig naming %q", c, err, tc.text)
			}
		})
	}
	refusing := newReceiver(t)
	refusing.setStatus(http.StatusBadRequest)
	filesLeft := func(keep bool) int {
		spool := filepath.Join(t.TempDir(), "spool")
		c, err := outbound.NewWithConfig("", outbound.Config{
			Webhooks: []outbound.Webhook{{URL: refusing.URL + "/hook"}}, Spool: spool,
			DeadLetters: keep, DeadLetterRetention: time.Hour, DeadLetterMaxBytes: 1 << 20,
			IgnoreProxyEnv: true})
		if err != nil {
			t.Fatal(err)
		}
		mustEnqueue(t, c, outbound.Track{UserId: "u", Event: "Refused"})
		if err := c.Close(); !errors.Is(err, outbound.ErrIncomplete) {
			t.Fatalf("Close = %v, want ErrIncomplete (the message failed)", err)
		}
		dbs, _ := filepath.Glob(filepath.Join(spool, "*.db"))
		return len(dbs)
	}
	if n := filesLeft(false); n != 0 {
		t.Errorf("without dead letters %d spool files were left", n)
	}
	if n := filesLeft(true); n != 1 {
		t.Errorf("with dead letters %d spool files were left, want 1 (its dead letter)", n)
	}
}
