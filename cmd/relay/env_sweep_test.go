package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// TestEnvSweepsTempFilesOfKilledWrites: `relay env` starting on a workspace where an earlier
// environment was killed mid-write removes those writes' temporary files (only the old ones, so
// a write still streaming is never touched) and says in its log how many and how many bytes.
func TestEnvSweepsTempFilesOfKilledWrites(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	os.Mkdir(filepath.Join(ws, "notes"), 0o755)
	killed := fsroot.StaleTempAge + time.Minute
	old := []string{abandoned(t, ws, "big.bin", 1000, killed), abandoned(t, ws, "notes/a.md", 500, killed)}
	fresh := abandoned(t, ws, "notes/live.md", 10, 0)

	bearerFile := pairBearerFile(t, filepath.Join(t.TempDir(), "state"), "box")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the sweep is at the start; nothing after it matters here
	var envErr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- envUntil(ctx, []string{"--relay", "http://127.0.0.1:9", "--bearer-file", bearerFile, "--root", ws}, &bytes.Buffer{}, &envErr, nil)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("relay env did not stop")
	}
	log := envErr.String()
	if !strings.Contains(log, "removed temporary files of writes that never finished") || !strings.Contains(log, "files=2") || !strings.Contains(log, "bytes=1500") {
		t.Fatalf("the log does not say 2 files, 1500 bytes were removed:\n%s", log)
	}
	for _, p := range old {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	if _, err := os.Lstat(fresh); err != nil {
		t.Errorf("a live write's temporary file was removed: %v", err)
	}
}

// abandoned leaves a write of name in the workspace ws as a killed environment would (n bytes in
// its temporary file, never committed), last changed ago, and returns the temporary file's path.
func abandoned(t *testing.T, ws, name string, n int, ago time.Duration) string {
	t.Helper()
	r, err := fsroot.OpenOS(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir := filepath.Join(ws, filepath.Dir(name))
	before, _ := os.ReadDir(dir)
	w, err := r.Create(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadDir(dir)
	if len(after) != len(before)+1 {
		t.Fatalf("the write of %s made %d files", name, len(after)-len(before))
	}
	for i, e := range after {
		if i >= len(before) || before[i].Name() != e.Name() {
			p := filepath.Join(dir, e.Name())
			at := time.Now().Add(-ago)
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	return ""
}
