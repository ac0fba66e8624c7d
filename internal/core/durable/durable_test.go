package durable

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// logBuffer collects what the package logs while a test runs. Tests that use it do not run in
// parallel: the logger is the package's.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func captureLog(t *testing.T) *logBuffer {
	t.Helper()
	b := &logBuffer{}
	SetLog(slog.New(slog.NewTextHandler(b, nil)))
	t.Cleanup(func() { logger.Store(nil) })
	return b
}

const (
	admitLine  = `{"action":"admit","id":"notes","hash":"h1"}`
	revokeLine = `{"action":"revoke","id":"notes"}`
)

// TestAppendCutsATornTail: a record whose last line lost its end (a write cut off part way by a
// full disk or a crash) is cut back to its last whole line before the next line goes in, so the
// new line is never glued onto the torn one, and the cut is logged with the file and the bytes.
func TestAppendCutsATornTail(t *testing.T) {
	cases := []struct {
		name, torn string
	}{
		{"no newline", `{"action":"rev`},
		{"a line that does not parse", "{\"action\":\"rev\x00\x00\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logs := captureLog(t)
			p := filepath.Join(t.TempDir(), ".ledger.jsonl")
			if err := os.WriteFile(p, []byte(admitLine+"\n"+c.torn), 0o600); err != nil {
				t.Fatal(err)
			}
			l := NewLog(p, "the ledger", nil)
			if err := l.Append([]byte(revokeLine), true); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if want := admitLine + "\n" + revokeLine + "\n"; string(b) != want {
				t.Fatalf("the record is %q, want %q", b, want)
			}
			if got := logs.String(); !strings.Contains(got, "file="+p) || !strings.Contains(got, "bytes="+strconv.Itoa(len(c.torn))) {
				t.Fatalf("the cut of %d bytes of %s is not in the log: %q", len(c.torn), p, got)
			}
			if r, err := l.Read(); err != nil || string(r) != string(b) {
				t.Fatalf("Read: %q, %v", r, err)
			}
		})
	}
}

// TestReadCutsATornTail: loading a record leaves out a torn last line and cuts it from the file
// (once, logged), so what a later append writes starts on a line of its own.
func TestReadCutsATornTail(t *testing.T) {
	logs := captureLog(t)
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	torn := `{"act":"revo`
	if err := os.WriteFile(p, []byte(admitLine+"\n"+torn), 0o600); err != nil {
		t.Fatal(err)
	}
	l := NewLog(p, "the audit log", nil)
	b, err := l.Read()
	if err != nil || string(b) != admitLine+"\n" {
		t.Fatalf("Read: %q, %v", b, err)
	}
	if on, _ := os.ReadFile(p); string(on) != admitLine+"\n" {
		t.Fatalf("the file still holds %q", on)
	}
	if got := logs.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "bytes="+strconv.Itoa(len(torn))) {
		t.Fatalf("the log: %q", got)
	}
	if n, err := l.Repair(); n != 0 || err != nil {
		t.Fatalf("a second repair cut %d (%v)", n, err)
	}
}

// TestWholeRecordsAreLeftAlone: a record of whole lines, an empty one and a missing one are not
// cut, and nothing is logged.
func TestWholeRecordsAreLeftAlone(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	for name, content := range map[string]string{"whole": admitLine + "\n" + revokeLine + "\n", "empty": ""} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		if b, err := NewLog(p, name, nil).Read(); err != nil || string(b) != content {
			t.Fatalf("%s: %q, %v", name, b, err)
		}
	}
	if b, err := NewLog(filepath.Join(dir, "missing"), "missing", nil).Read(); b != nil || err != nil {
		t.Fatalf("missing: %q, %v", b, err)
	}
	if err := NewLog(filepath.Join(dir, "new"), "new", nil).Append([]byte(admitLine), true); err != nil {
		t.Fatal(err)
	}
	if NewLog(filepath.Join(dir, "x"), "x", nil).Append([]byte("a\nb"), false) != ErrLineBreak {
		t.Fatal("a line with a newline was taken")
	}
	if got := logs.String(); got != "" {
		t.Fatalf("logged %q", got)
	}
}

// smallDisk mounts a tmpfs of size bytes on a new folder and unmounts it when the test ends. It
// needs root (CI runs as root); elsewhere the test is skipped, saying so.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("a full disk is a real tmpfs here, and mounting one needs root: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes a file in dir until the disk refuses with ENOSPC, and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	for i := 0; ; i++ {
		if i > 1<<16 {
			t.Fatal("the small disk never filled")
		}
		if _, err := f.Write(page); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return p
		}
	}
}

// TestAFullDiskIsStateDiskFull: on a full disk (a real tmpfs, so it needs root and is skipped
// elsewhere; TestAFullDiskIsStateDiskFullByFaultInjection checks the same on every machine with
// an injected ENOSPC), a whole-file write and an append
// that is cut off part way are refused state-disk-full (wrapping ENOSPC), leave no temporary file
// and no torn line, and the old content stands; once there is space again the same append lands
// on a line of its own.
func TestAFullDiskIsStateDiskFull(t *testing.T) {
	logs := captureLog(t)
	dir := smallDisk(t, "64k")
	keys := filepath.Join(dir, ".vendor-keys.json")
	if err := WriteFile(keys, []byte(`{"a":"old"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The ledger ends 20 bytes short of a page, so the next line crosses into a page the full
	// disk cannot give: the first 20 bytes land and the rest is refused, as on the report.
	ledger := filepath.Join(dir, ".ledger.jsonl")
	pad := `{"pad":"` + strings.Repeat("x", 4096-20-len(`{"pad":""}`)-1) + `"}` + "\n"
	if err := os.WriteFile(ledger, []byte(pad), 0o600); err != nil {
		t.Fatal(err)
	}
	filler := fill(t, dir)

	err := WriteFile(keys, bytes.Repeat([]byte("k"), 8192), 0o600)
	if refusal.RuleOf(err) != refusal.StateDiskFull || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a whole-file write on a full disk: %v", err)
	}
	l := NewLog(ledger, "the extension ledger", nil)
	err = l.Append([]byte(revokeLine), true)
	if refusal.RuleOf(err) != refusal.StateDiskFull {
		t.Fatalf("an append on a full disk: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Fatalf("a temporary file was left: %s", e.Name())
		}
	}
	if b, _ := os.ReadFile(keys); string(b) != `{"a":"old"}` {
		t.Fatalf("the old file is now %q", b)
	}
	if b, _ := os.ReadFile(ledger); string(b) != pad {
		t.Fatalf("the ledger after the failed append ends %q", b[max(len(b)-40, 0):])
	}
	if got := logs.String(); !strings.Contains(got, "file="+ledger) || !strings.Contains(got, "bytes=20") {
		t.Fatalf("the cut of the failed append is not in the log: %q", got)
	}

	os.Remove(filler)
	if err := l.Append([]byte(revokeLine), true); err != nil {
		t.Fatal(err)
	}
	if b, _ := l.Read(); string(b) != pad+revokeLine+"\n" {
		t.Fatalf("the ledger ends %q", b[max(len(b)-60, 0):])
	}
	if err := WriteFile(keys, []byte(`{"a":"new"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(keys); string(b) != `{"a":"new"}` {
		t.Fatalf("the file is %q", b)
	}
}

// fullDisk puts a disk with room bytes left in place of the package's writes until the test
// ends: a write takes what fits and then fails ENOSPC, as a full file system does.
func fullDisk(t *testing.T, room int) {
	t.Helper()
	left := room
	take := func(n int) (int, error) {
		if n <= left {
			left -= n
			return n, nil
		}
		k := left
		left = 0
		return k, &os.PathError{Op: "write", Path: "disk", Err: syscall.ENOSPC}
	}
	writeAt = func(f *os.File, b []byte, off int64) (int, error) {
		k, err := take(len(b))
		f.WriteAt(b[:k], off)
		return k, err
	}
	write = func(f *os.File, b []byte) (int, error) {
		k, err := take(len(b))
		f.Write(b[:k])
		return k, err
	}
	t.Cleanup(func() { writeAt, write = (*os.File).WriteAt, (*os.File).Write })
}

// TestAFullDiskIsStateDiskFullByFaultInjection is TestAFullDiskIsStateDiskFull where no tmpfs
// can be mounted: the package's own writes are given a disk with 20 bytes left (fullDisk), so the
// same refusals, the cut-back of the torn append and its log line are checked on every machine.
func TestAFullDiskIsStateDiskFullByFaultInjection(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	keys := filepath.Join(dir, ".vendor-keys.json")
	if err := WriteFile(keys, []byte(`{"a":"old"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ledger := filepath.Join(dir, ".ledger.jsonl")
	os.WriteFile(ledger, []byte(admitLine+"\n"), 0o600)
	fullDisk(t, 20)
	l := NewLog(ledger, "the extension ledger", nil)
	if err := l.Append([]byte(revokeLine), true); refusal.RuleOf(err) != refusal.StateDiskFull || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("an append on a full disk: %v", err)
	}
	if b, _ := os.ReadFile(ledger); string(b) != admitLine+"\n" {
		t.Fatalf("the ledger after the failed append is %q", b)
	}
	if got := logs.String(); !strings.Contains(got, "file="+ledger) || !strings.Contains(got, "bytes=20") {
		t.Fatalf("the cut of the failed append is not in the log: %q", got)
	}
	if err := WriteFile(keys, []byte(`{"a":"new, longer than the room"}`), 0o600); refusal.RuleOf(err) != refusal.StateDiskFull {
		t.Fatalf("a whole-file write on a full disk: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("the folder holds %d entries; a temporary file was left", len(entries))
	}
	if b, _ := os.ReadFile(keys); string(b) != `{"a":"old"}` {
		t.Fatalf("the old file is now %q", b)
	}
	writeAt, write = (*os.File).WriteAt, (*os.File).Write // space again
	if err := l.Append([]byte(revokeLine), true); err != nil {
		t.Fatal(err)
	}
	if b, _ := l.Read(); string(b) != admitLine+"\n"+revokeLine+"\n" {
		t.Fatalf("the ledger is %q", b)
	}
}
