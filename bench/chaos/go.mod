module outbound.invalid/bench/chaos

go 1.22
