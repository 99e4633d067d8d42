module outbound.invalid/bench/go-v2

go 1.22

require github.com/segmentio/analytics-go v2.0.0+incompatible

require (
	github.com/jehiah/go-strftime v0.0.0-20171201141054-1d33003b3869 // indirect
	github.com/xtgo/uuid v0.0.0-20140804021211-a0b114877d4c // indirect
)
