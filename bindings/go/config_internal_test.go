package outbound

import (
	"math"
	"testing"
	"time"
)

func TestMillisRoundsUpAndNeverOverflows(t *testing.T) {
	for d, want := range map[time.Duration]uint64{
		0: 0, time.Nanosecond: 1, time.Millisecond: 1, 1500 * time.Microsecond: 2, 5 * time.Second: 5000,
		math.MaxInt64: math.MaxInt64/uint64(time.Millisecond) + 1,
	} {
		if got := millis(d); got != want {
			t.Errorf("millis(%v) = %d, want %d", d, got, want)
		}
	}
}
