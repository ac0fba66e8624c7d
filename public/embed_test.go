package public

import (
	"io/fs"
	"os"
	"path"
	"strings"
	"testing"
	"testing/fstest"
)

func TestHasEngine(t *testing.T) {
	t.Parallel()
	file := &fstest.MapFile{Data: []byte("x")}
	tests := []struct {
		name string
		fsys fstest.MapFS
		want bool
	}{
		{"both", fstest.MapFS{Engine: file, "wasm_exec.js": file}, true},
		{"no engine", fstest.MapFS{"wasm_exec.js": file}, false},
		{"no loader", fstest.MapFS{Engine: file}, false},
		{"the engine a directory", fstest.MapFS{Engine + "/x": file, "wasm_exec.js": file}, false},
	}
	for _, tt := range tests {
		if got := HasEngine(tt.fsys); got != tt.want {
			t.Errorf("%s: HasEngine = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestFilesAreThisDirectory: the embedded page is the committed files of this directory, byte
// for byte (the build output joins them when it exists at compile time).
func TestFilesAreThisDirectory(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"index.html", "main.js", "worker.js", "mini-app-bridge.html", "styles.css"} {
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fs.ReadFile(Files(), name)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: embedded %d bytes (%v), on disk %d", name, len(got), err, len(want))
		}
	}
	if _, err := os.Stat(Engine); err == nil && !HasEngine(Files()) {
		t.Errorf("%s is here but was not embedded", Engine)
	}
}

// TestNoTestIsShipped: the page's module tests (tools/web/test) stay out of the embedded page;
// a test file put here would be served by every relay.
func TestNoTestIsShipped(t *testing.T) {
	t.Parallel()
	err := fs.WalkDir(Files(), ".", func(name string, _ fs.DirEntry, err error) error {
		if err == nil && strings.Contains(path.Base(name), ".test.") {
			t.Errorf("%s is embedded in the page: tests of its modules belong in tools/web/test", name)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
