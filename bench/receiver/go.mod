module outbound.invalid/bench/receiver

go 1.22
