//go:build !outbound_dynamic

package outbound

// Linked statically by default, so a Go binary has no run-time dependency on liboutbound.so.
// "-l:" picks the archive even where the .so sits beside it. The system libraries are the
// ones a Rust static library needs (as in scripts/install-c.sh). The -L default is this
// checkout's release build; point the linker at an install with CGO_LDFLAGS=-L$PREFIX/lib
// (flags from the environment come first). Build with -tags outbound_dynamic to link
// liboutbound.so instead.

/*
#cgo LDFLAGS: -L${SRCDIR}/../../target/release -l:liboutbound.a -lgcc_s -lutil -lrt -lpthread -lm -ldl
*/
import "C"
