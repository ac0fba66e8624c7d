//go:build unix

package wasmtool

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// TestReadModuleOfAFIFOAnswers: a FIFO in the module's place (a plain open would wait for a
// writer forever) is refused as not a regular file, and the call gets its answer.
func TestReadModuleOfAFIFOAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "m.wasm"), 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := ReadModule(dir, "m.wasm", 64)
		got <- err
	}()
	select {
	case err := <-got:
		if refusal.RuleOf(err) != refusal.WasmUnreadable {
			t.Fatalf("ReadModule of a FIFO = %v, want wasm-unreadable (not a regular file)", err)
		}
	case <-time.After(20 * time.Second): // a hang guard, not a measurement
		t.Fatal("ReadModule of a FIFO never answered")
	}
}
