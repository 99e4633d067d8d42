package outbound_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// examples/go (the README's quickstart) built as a user builds it, once statically (the
// default) and once with -tags outbound_dynamic, then run against a local receiver.
func TestQuickstartExampleLinksStaticallyAndDelivers(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "examples", "go")
	for _, tc := range []struct {
		name    string
		tags    []string
		dynamic bool
	}{{"static", nil, false}, {"dynamic", []string{"-tags", "outbound_dynamic"}, true}} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "quickstart")
			args := append([]string{"build", "-o", bin}, tc.tags...)
			build := exec.Command("go", append(args, ".")...)
			build.Dir = dir
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			needed, err := f.ImportedLibraries()
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			links := strings.Contains(strings.Join(needed, " "), "liboutbound")
			if links != tc.dynamic {
				t.Fatalf("needs %v; liboutbound.so wanted: %v", needed, tc.dynamic)
			}

			rx := newReceiver(t)
			run := exec.Command(bin)
			run.Env = append(os.Environ(), "OUTBOUND_WRITE_KEY=example-key", "OUTBOUND_ENDPOINT="+rx.URL)
			if tc.dynamic {
				run.Env = append(run.Env, "LD_LIBRARY_PATH="+libDirs(t))
			}
			out, err := run.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "delivered 2, failed 0, dropped 0") ||
				!strings.Contains(string(out), "refused as expected") {
				t.Fatalf("quickstart: %v\n%s", err, out)
			}
			m := byType(rx.messages(t))
			if m["track"]["event"] != "Order Completed" || m["identify"] == nil {
				t.Errorf("receiver got %v", m)
			}
		})
	}
}

// libDirs is where the linker was told to find liboutbound (CGO_LDFLAGS -L...), for a
// binary linked with the shared library.
func libDirs(t *testing.T) string {
	dirs := []string{filepath.Join(repoRoot(t), "target", "release")} // the package's default -L
	for _, f := range strings.Fields(os.Getenv("CGO_LDFLAGS")) {
		if strings.HasPrefix(f, "-L") {
			dirs = append(dirs, strings.TrimPrefix(f, "-L"))
		}
	}
	return strings.Join(append(dirs[1:], dirs[0]), ":")
}
