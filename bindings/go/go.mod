module outbound.invalid/bindings/go

go 1.22
