package relay

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// TestNewSweepsTheStateDirectory: a relay starting on a state directory where an earlier one was
// killed mid-write (temporary files of its durable writes, in the directory and a folder of it)
// removes the old ones, keeps a fresh one (a write that may still be going on) and logs how many
// and how many bytes.
func TestNewSweepsTheStateDirectory(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "state")
	os.MkdirAll(filepath.Join(state, "proposals"), 0o700)
	plant := func(dir string, size int, age time.Duration) string {
		p := filepath.Join(state, dir, fsroot.TempName())
		if err := os.WriteFile(p, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		os.Chtimes(p, at, at)
		return p
	}
	killed := fsroot.StaleTempAge + time.Minute
	old := []string{plant("", 300, killed), plant("proposals", 45, killed)}
	fresh := plant("", 7, 0)
	logs := &lockedBuffer{}
	startRelay(t, Config{Config: core.Config{StateDir: state, Log: slog.New(slog.NewTextHandler(logs, nil))}})
	for _, p := range old {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	if _, err := os.Lstat(fresh); err != nil {
		t.Errorf("a fresh temporary file was removed: %v", err)
	}
	line := ""
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, "removed temporary files of writes that never finished") {
			line = l
		}
	}
	if !strings.Contains(line, `where="the state directory"`) || !strings.Contains(line, "files=2") || !strings.Contains(line, "bytes=345") {
		t.Fatalf("the log does not say 2 files, 345 bytes were swept from the state directory: %q", logs.String())
	}
}
