//go:build outbound_dynamic

package outbound

// With -tags outbound_dynamic the package links liboutbound.so (found through
// CGO_LDFLAGS=-L$PREFIX/lib at build time, and LD_LIBRARY_PATH or an rpath at run time).

/*
#cgo LDFLAGS: -L${SRCDIR}/../../target/release -loutbound
*/
import "C"
