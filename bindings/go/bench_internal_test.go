package outbound

// Micro-benchmarks of the call path: go test -run XXX -bench . (link a release liboutbound:
// CGO_LDFLAGS=-L../../target/release).

import (
	"bytes"
	"testing"
)

func benchMsg() Track {
	return Track{Event: "Order Completed", UserId: "user-12345", Properties: NewProperties().
		Set("order_id", "ord-0001").Set("revenue", 49.99).Set("items", 3).Set("express", true).
		Set("tags", []string{"books", "gift"})}
}

func BenchmarkEncode(b *testing.B) {
	var buf bytes.Buffer
	m := benchMsg()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		if _, _, err := encodeMessage(&buf, m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEnqueueDryRun(b *testing.B) {
	c, err := NewWithConfig("wk", Config{DryRun: true, MaxQueueSize: 10_000_000})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	m := benchMsg()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Enqueue(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodePointer is BenchmarkEncode with the message given as a pointer (read where
// it points: no copy of it is boxed).
func BenchmarkEncodePointer(b *testing.B) {
	var buf bytes.Buffer
	m := benchMsg()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		if _, _, err := encodeMessage(&buf, &m); err != nil {
			b.Fatal(err)
		}
	}
}
