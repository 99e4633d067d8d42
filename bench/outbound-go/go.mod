module outbound.invalid/bench/outbound-go

go 1.22

require outbound.invalid/bindings/go v0.0.0

replace outbound.invalid/bindings/go => ../../bindings/go
