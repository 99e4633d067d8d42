module outbound/bench/relay/loadgen

go 1.22
