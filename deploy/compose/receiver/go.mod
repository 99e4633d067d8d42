module outbound.invalid/deploy/compose/receiver

go 1.22
