// Package fsroottest is the conformance suite every fsroot.Root must pass: containment on every
// operation, round trips, listing shape, directories, removal, error shapes, atomic replacement
// and a short concurrent hammer. A root's exceptions are declared in Options, never hidden.
//
// # Wasm
//
// Nothing differs: the suite is portable Go and the page's roots run it in Chromium. Anything a
// backend needs beyond the Root interface (symbolic links, injected failures) comes through the
// hooks in Options, so the suite itself makes no OS calls.
package fsroottest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Options declares what a root under test can and cannot do. The zero value runs every case that
// needs no hook.
type Options struct {
	// NoModTime declares that the root does not know modification times: file entries then
	// have a zero ModTime. Without it, every file entry must carry a plausible ModTime.
	NoModTime bool

	// Sequential runs the cases one after another instead of in parallel, for a root whose
	// newRoot cannot hand out independent roots at the same time.
	Sequential bool

	// FailWrites makes the root's writes fail part way: after it is called, every write the
	// root starts (WriteFile, and each Create writer's Write or Commit) must fail once it has
	// taken in more than 1 KiB, the way a full disk would. It returns a function that makes
	// writes work again. Nil skips the atomicity case, which should be declared in the test.
	FailWrites func(t *testing.T, root fsroot.Root) (restore func())

	// Escapes is for roots over a file system with symbolic links (the OS root). It must create,
	// outside root, a directory holding one file "secret" with the content "outside", and
	// inside root three symbolic links: "to-file" (to that file, absolute), "to-dir" (to that
	// directory, absolute) and "rel-dir" (to that directory, as a relative path through "..").
	// It returns a function that reads the outside directory back as file name -> content, so
	// the suite can check that nothing there changed. Nil skips the symlink cases.
	Escapes func(t *testing.T, root fsroot.Root) (outside func(t *testing.T) map[string]string)
	// NoRename declares that the root is no fsroot.Renamer (it cannot move files and folders);
	// without it the root must be one, and the Rename case runs.
	NoRename bool
	// FilesOnlyRename declares that the root moves files but refuses to move a folder, with
	// errors.ErrUnsupported and nothing changed (the browser's directory handles have no move).
	FilesOnlyRename bool
}

// Run runs the suite against the roots newRoot returns. newRoot is called once per case and must
// return a fresh, empty root each time; it should release the root with t.Cleanup.
func Run(t *testing.T, newRoot func(t *testing.T) fsroot.Root, opts Options) {
	s := suite{newRoot: newRoot, opts: opts}
	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"Containment", s.containment},
		{"AcceptedNames", s.acceptedNames},
		{"LookalikeNames", s.lookalikeNames},
		{"RoundTrip", s.roundTrip},
		{"Large", s.large},
		{"Replace", s.replace},
		{"Listing", s.listing},
		{"Nested", s.nested},
		{"WrongKind", s.wrongKind},
		{"Remove", s.remove},
		{"CreateCommit", s.createCommit},
		{"CreateAbort", s.createAbort},
		{"PrefixRead", s.prefixRead},
		{"RangeRead", s.rangeRead},
		{"RangeReadAcrossReplace", s.rangeReadAcrossReplace},
		{"Metadata", s.metadata},
		{"Atomicity", s.atomicity},
		{"SymlinkEscapes", s.symlinkEscapes},
		{"ConcurrentReplace", s.concurrentReplace},
		{"Rename", s.rename},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !opts.Sequential {
				t.Parallel()
			}
			c.run(t)
		})
	}
}

type suite struct {
	newRoot func(t *testing.T) fsroot.Root
	opts    Options
}

func (s suite) root(t *testing.T) fsroot.Root {
	t.Helper()
	r := s.newRoot(t)
	if r == nil {
		t.Fatal("newRoot returned nil")
	}
	return r
}

// Pattern returns n deterministic pseudo-random bytes for seed, the content the suite writes.
func Pattern(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x766f696365626f78))
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n:n]
}

// refusedName is a name every root must refuse, with the rule it must name.
type refusedName struct {
	name string
	rule refusal.Rule
}

// RefusedNames are the names the containment case tries on every operation. The empty name is
// not among them because ReadDir takes it for the root; it is tried on the others.
var refusedNames = []refusedName{
	{"../../evil.sh", refusal.OutsideRoot},
	{"assets/../../evil.sh", refusal.OutsideRoot},
	{"..", refusal.OutsideRoot},
	{".", refusal.OutsideRoot},
	{"./a", refusal.OutsideRoot},
	{"a/./b", refusal.OutsideRoot},
	{"a/..", refusal.OutsideRoot},
	{"/etc/passwd", refusal.OutsideRoot},
	{"/", refusal.OutsideRoot},
	{"a\\b", refusal.OutsideRoot},
	{"..\\..\\evil.sh", refusal.OutsideRoot},
	{"a\x00b", refusal.OutsideRoot},
	{"a//b", refusal.OutsideRoot},
	{"a/", refusal.OutsideRoot},
	{"\xffname", refusal.OutsideRoot},
	{".host-token", refusal.DotfileRefused},
	{"notes/.secret", refusal.DotfileRefused},
	{".voicebox/audit.jsonl", refusal.DotfileRefused},
	{".git/config", refusal.DotfileRefused},
	{strings.Repeat("a", fsroot.MaxNameBytes+1), refusal.PathTooLong},
	{strings.Repeat("d/", fsroot.MaxPathDepth) + "f", refusal.PathTooLong},
	{strings.Repeat("abcdefg/", fsroot.MaxPathBytes/8) + "x", refusal.PathTooLong},
}

// WantRefused fails t unless err is a refusal of name with rule, in the shape every root
// promises: a *fs.PathError for name wrapping fs.ErrInvalid and the refusal.
func WantRefused(t *testing.T, what string, err error, name string, rule refusal.Rule) {
	t.Helper()
	if err == nil {
		t.Errorf("%s(%q) succeeded; want refused with %s", what, name, rule)
		return
	}
	var pe *fs.PathError
	switch {
	case !errors.As(err, &pe):
		t.Errorf("%s(%q) = %v (%T); want a *fs.PathError", what, name, err, err)
	case pe.Path != name || pe.Op == "":
		t.Errorf("%s(%q): PathError{Op: %q, Path: %q}; want the name as Path and an Op", what, name, pe.Op, pe.Path)
	case !errors.Is(err, fs.ErrInvalid):
		t.Errorf("%s(%q) = %v; want it to wrap fs.ErrInvalid", what, name, err)
	case refusal.RuleOf(err) != rule:
		t.Errorf("%s(%q) = %v; want rule %s, got %q", what, name, err, rule, refusal.RuleOf(err))
	}
}

// WantErr fails t unless err is a *fs.PathError for name wrapping one of kinds.
func WantErr(t *testing.T, what string, err error, name string, kinds ...error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s(%q) succeeded; want an error wrapping %v", what, name, kinds)
		return
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Errorf("%s(%q) = %v (%T); want a *fs.PathError", what, name, err, err)
		return
	}
	if pe.Path != name || pe.Op == "" {
		t.Errorf("%s(%q): PathError{Op: %q, Path: %q}; want the name as Path and an Op", what, name, pe.Op, pe.Path)
	}
	for _, k := range kinds {
		if errors.Is(err, k) {
			return
		}
	}
	t.Errorf("%s(%q) = %v; want it to wrap one of %v", what, name, err, kinds)
}

func ok(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func write(t *testing.T, r fsroot.Root, name string, data []byte) {
	t.Helper()
	ok(t, fmt.Sprintf("WriteFile(%q)", name), r.WriteFile(context.Background(), name, data))
}

func mkdir(t *testing.T, r fsroot.Root, name string) {
	t.Helper()
	ok(t, fmt.Sprintf("MkdirAll(%q)", name), r.MkdirAll(context.Background(), name))
}

func wantContent(t *testing.T, r fsroot.Root, name string, want []byte) {
	t.Helper()
	got, err := r.ReadFile(context.Background(), name)
	if err != nil {
		t.Fatalf("ReadFile(%q): %v", name, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("ReadFile(%q) = %d bytes %s; want %d bytes %s", name, len(got), head(got), len(want), head(want))
	}
}

func head(b []byte) string {
	if len(b) > 16 {
		return fmt.Sprintf("%q...", b[:16])
	}
	return fmt.Sprintf("%q", b)
}

func names(entries []fsroot.Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Name
	}
	return out
}

func wantNames(t *testing.T, r fsroot.Root, dir string, want ...string) []fsroot.Entry {
	t.Helper()
	entries, err := r.ReadDir(context.Background(), dir)
	if err != nil {
		t.Fatalf("ReadDir(%q): %v", dir, err)
	}
	if got := names(entries); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("ReadDir(%q) names = %q; want %q", dir, got, want)
	}
	return entries
}

func (s suite) containment(t *testing.T) {
	r := s.root(t)
	ctx := context.Background()
	mkdir(t, r, "assets")
	write(t, r, "assets/keep.txt", []byte("keep"))
	ops := []struct {
		name string
		do   func(name string) error
	}{
		{"ReadFile", func(n string) error { _, err := r.ReadFile(ctx, n); return err }},
		{"WriteFile", func(n string) error { return r.WriteFile(ctx, n, []byte("#!/bin/sh\n")) }},
		{"Create", func(n string) error {
			w, err := r.Create(ctx, n)
			if err == nil {
				w.Abort()
			}
			return err
		}},
		{"ReadDir", func(n string) error { _, err := r.ReadDir(ctx, n); return err }},
		{"Stat", func(n string) error { _, err := r.Stat(ctx, n); return err }},
		{"MkdirAll", func(n string) error { return r.MkdirAll(ctx, n) }},
		{"Remove", func(n string) error { return r.Remove(ctx, n) }},
	}
	ops = append(ops, struct {
		name string
		do   func(name string) error
	}{"OpenRange", func(n string) error {
		f, err := fsroot.OpenRange(ctx, r, n)
		if err == nil {
			f.Close()
		}
		return err
	}})
	if pr, isPR := r.(fsroot.PrefixReader); isPR {
		ops = append(ops, struct {
			name string
			do   func(name string) error
		}{"ReadFilePrefix", func(n string) error { _, _, err := pr.ReadFilePrefix(ctx, n, 10); return err }})
	}
	for _, op := range ops {
		for _, c := range refusedNames {
			WantRefused(t, op.name, op.do(c.name), c.name, c.rule)
		}
		if op.name != "ReadDir" {
			WantRefused(t, op.name, op.do(""), "", refusal.OutsideRoot)
		}
	}
	// Nothing was created, anywhere the root can see.
	wantNames(t, r, "", "assets")
	wantNames(t, r, "assets", "keep.txt")
	wantContent(t, r, "assets/keep.txt", []byte("keep"))
}

func (s suite) acceptedNames(t *testing.T) {
	r := s.root(t)
	ctx := context.Background()
	accepted := []string{"a..b", "a.", "x.tar.gz", "with space.txt", "ünïcödé-ファイル.md", "-dash", "a~b", "#1"}
	for i, n := range accepted {
		data := []byte(fmt.Sprint("content ", i))
		write(t, r, n, data)
		wantContent(t, r, n, data)
		e, err := r.Stat(ctx, n)
		ok(t, fmt.Sprintf("Stat(%q)", n), err)
		if e.Name != n || e.Dir || e.Size != int64(len(data)) {
			t.Errorf("Stat(%q) = %+v; want a file of %d bytes named as asked", n, e, len(data))
		}
	}
	want := slices.Clone(accepted)
	slices.Sort(want)
	wantNames(t, r, "", want...)
	deep := strings.Repeat("d/", fsroot.MaxPathDepth-1)
	mkdir(t, r, strings.TrimSuffix(deep, "/"))
	write(t, r, deep+"f", []byte("deep"))
	wantContent(t, r, deep+"f", []byte("deep"))
	long := strings.Repeat("n", fsroot.MaxNameBytes)
	write(t, r, long, []byte("long"))
	wantContent(t, r, long, []byte("long"))
}

// lookalikeNames: no root creates, writes or moves a file to a name holding a character that
// hides or reorders text (internal/shared/names), in any element, and each refusal names the character.
func (s suite) lookalikeNames(t *testing.T) {
	r := s.root(t)
	ctx := context.Background()
	write(t, r, "keep.txt", []byte("keep"))
	for _, c := range []struct{ name, char string }{
		{"\u200b.voicebox/x", "U+200B"},
		{"\u202egnp.exe", "U+202E"},
		{"docs/a\u2066b.md", "U+2066"},
		{"a\rb", "U+000D"},
		{"a\x1b[2Jb", "U+001B"},
		{"cafe\u0301.md", "normal form C"},
	} {
		for _, op := range []struct {
			name string
			do   func() error
		}{
			{"WriteFile", func() error { return r.WriteFile(ctx, c.name, []byte("x")) }},
			{"Create", func() error {
				w, err := r.Create(ctx, c.name)
				if err == nil {
					w.Abort()
				}
				return err
			}},
			{"MkdirAll", func() error { return r.MkdirAll(ctx, c.name) }},
			{"Rename", func() error {
				rn, ok := r.(fsroot.Renamer)
				if !ok {
					return fsroot.CheckCreate(c.name)
				}
				return rn.Rename(ctx, "keep.txt", c.name)
			}},
		} {
			err := op.do()
			WantRefused(t, op.name, err, c.name, refusal.InvalidName)
			if err != nil && !strings.Contains(err.Error(), c.char) {
				t.Errorf("%s(%+q) = %v; want the refusal to name %s", op.name, c.name, err, c.char)
			}
		}
	}
	wantNames(t, r, "", "keep.txt")
	wantContent(t, r, "keep.txt", []byte("keep"))
}

func (s suite) roundTrip(t *testing.T) {
	r := s.root(t)
	ctx := context.Background()
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	cases := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one-byte", []byte{0}},
		{"binary", all},
		{"binary-twice-reversed", append(slices.Clone(all), reversed(all)...)},
		{"text.md", []byte("# Notes\n\nline two\r\nline three\n")},
		{"invalid-utf8", []byte{0xff, 0xfe, 0x80, 'a'}},
	}
	for _, c := range cases {
		write(t, r, c.name, c.data)
	}
	for _, c := range cases {
		wantContent(t, r, c.name, c.data)
		e, err := r.Stat(ctx, c.name)
		ok(t, "Stat", err)
		if e.Name != c.name || e.Dir || e.Size != int64(len(c.data)) {
			t.Errorf("Stat(%q) = %+v; want a file of %d bytes", c.name, e, len(c.data))
		}
		s.wantModTime(t, c.name, e)
	}
	got, err := r.ReadFile(ctx, "empty")
	ok(t, "ReadFile(empty)", err)
	if len(got) != 0 {
		t.Errorf("ReadFile(empty) = %d bytes", len(got))
	}
	// The caller owns what it reads: changing it changes nothing stored.
	got, _ = r.ReadFile(ctx, "binary")
	got[0] = 'X'
	wantContent(t, r, "binary", all)
	// And what it wrote: changing the slice after the write changes nothing stored.
	data := []byte("original")
	write(t, r, "owned", data)
	data[0] = 'X'
	wantContent(t, r, "owned", []byte("original"))
}

func reversed(b []byte) []byte {
	out := slices.Clone(b)
	slices.Reverse(out)
	return out
}

func (s suite) wantModTime(t *testing.T, name string, e fsroot.Entry) {
	t.Helper()
	if s.opts.NoModTime {
		if !e.ModTime.IsZero() {
			t.Errorf("%q: ModTime %v from a root declared NoModTime", name, e.ModTime)
		}
		return
	}
	// Plausibility only: clocks and file system timestamps are coarse.
	if now := time.Now(); e.ModTime.Before(now.Add(-24*time.Hour)) || e.ModTime.After(now.Add(24*time.Hour)) {
		t.Errorf("%q: ModTime %v is not a plausible time for a file just written", name, e.ModTime)
	}
}

func (s suite) large(t *testing.T) {
	r := s.root(t)
	ctx := context.Background()
	const size = 8 << 20
	big := Pattern(size, 1)
	write(t, r, "big.bin", big)
	wantContent(t, r, "big.bin", big)
	entries := wantNames(t, r, "", "big.bin")
	if entries[0].Size != size {
		t.Errorf("ReadDir size = %d; want %d", entries[0].Size, size)
	}
	// The same size again, streamed through Create in uneven pieces.
	other := Pattern(size, 2)
	w, err := r.Create(ctx, "big.bin")
	ok(t, "Create", err)
	for off, step := 0, 1<<20-7; off < size; off += step {
		n, err := w.Write(other[off:min(off+step, size)])
		ok(t, "Write", err)
		if n != min(step, size-off) {
			t.Fatalf("Write returned %d; want %d", n, min(step, size-off))
		}
	}
	ok(t, "Commit", w.Commit())
	wantContent(t, r, "big.bin", other)
}

func (s suite) replace(t *testing.T) {
	r := s.root(t)
	long := bytes.Repeat([]byte("long content "), 1000)
	write(t, r, "f.txt", long)
	write(t, r, "f.txt", []byte("short"))
	wantContent(t, r, "f.txt", []byte("short"))
	write(t, r, "f.txt", long)
	wantContent(t, r, "f.txt", long)
	write(t, r, "f.txt", nil)
	wantContent(t, r, "f.txt", nil)
	e, err := r.Stat(context.Background(), "f.txt")
	ok(t, "Stat", err)
	if e.Size != 0 {
		t.Errorf("Stat after emptying = %+v", e)
	}
	wantNames(t, r, "", "f.txt")
}

func (s suite) listing(t *testing.T) {
	r := s.root(t)
	ctx := context.Background()
	wantNames(t, r, "")
	write(t, r, "b.txt", []byte("bbb"))
	write(t, r, "a.txt", []byte("a"))
	mkdir(t, r, "c")
	write(t, r, "c/d.txt", []byte("dddd"))
	mkdir(t, r, "B")
	write(t, r, "a-b", nil)
	entries, err := r.ReadDir(ctx, "")
	ok(t, "ReadDir", err)
	want := []fsroot.Entry{
		{Name: "B", Dir: true},
		{Name: "a-b"},
		{Name: "a.txt", Size: 1},
		{Name: "b.txt", Size: 3},
		{Name: "c", Dir: true},
	}
	if len(entries) != len(want) {
		t.Fatalf("ReadDir(\"\") = %+v; want %+v", entries, want)
	}
	for i, e := range entries {
		w := want[i]
		if e.Name != w.Name || e.Dir != w.Dir || e.Size != w.Size {
			t.Errorf("entry %d = {%q dir=%v size=%d}; want {%q dir=%v size=%d}", i, e.Name, e.Dir, e.Size, w.Name, w.Dir, w.Size)
		}
		if !e.Dir {
			s.wantModTime(t, e.Name, e)
		}
	}
	sub := wantNames(t, r, "c", "d.txt")
	if sub[0].Size != 4 || sub[0].Dir {
		t.Errorf("ReadDir(c) = %+v", sub)
	}
	mkdir(t, r, "empty")
	wantNames(t, r, "empty")
	got, err := r.ReadDir(ctx, "empty")
	ok(t, "ReadDir(empty)", err)
	if got == nil {
		// Callers marshal listings to JSON: an empty directory is [], not null.
		t.Errorf("ReadDir of an empty directory returned nil; want an empty slice")
	}
	_, err = r.ReadDir(ctx, "missing")
	WantErr(t, "ReadDir", err, "missing", fs.ErrNotExist)
	_, err = r.ReadDir(ctx, "a.txt")
	WantErr(t, "ReadDir", err, "a.txt", fsroot.ErrNotDir)
	e, err := r.Stat(ctx, "c")
	ok(t, "Stat(c)", err)
	if e.Name != "c" || !e.Dir || e.Size != 0 {
		t.Errorf("Stat(c) = %+v; want a directory", e)
	}
	e, err = r.Stat(ctx, "c/d.txt")
	ok(t, "Stat(c/d.txt)", err)
	if e.Name != "d.txt" || e.Dir || e.Size != 4 {
		t.Errorf("Stat(c/d.txt) = %+v; want Name d.txt, a file of 4 bytes", e)
	}
	_, err = r.Stat(ctx, "nope.txt")
	WantErr(t, "Stat", err, "nope.txt", fs.ErrNotExist)
}

func (s suite) nested(t *testing.T) {
	r := s.root(t)
	ctx := context.Background()
	mkdir(t, r, "a/b/c")
	mkdir(t, r, "a/b/c")
	mkdir(t, r, "a/b")
	mkdir(t, r, "a")
	write(t, r, "a/b/c/f.txt", []byte("deep"))
	mkdir(t, r, "a/b/c")
	wantContent(t, r, "a/b/c/f.txt", []byte("deep"))
	wantNames(t, r, "", "a")
	wantNames(t, r, "a", "b")
	wantNames(t, r, "a/b", "c")
	wantNames(t, r, "a/b/c", "f.txt")
	mkdir(t, r, "a/x/y")
	wantNames(t, r, "a", "b", "x")
	err := r.WriteFile(ctx, "missing/f.txt", []byte("x"))
	WantErr(t, "WriteFile", err, "missing/f.txt", fs.ErrNotExist)
	_, err = r.Stat(ctx, "missing")
	WantErr(t, "Stat", err, "missing", fs.ErrNotExist)
	err = r.MkdirAll(ctx, "a/b/c/f.txt")
	WantErr(t, "MkdirAll", err, "a/b/c/f.txt", fsroot.ErrNotDir, fs.ErrExist)
	err = r.MkdirAll(ctx, "a/b/c/f.txt/g")
	WantErr(t, "MkdirAll", err, "a/b/c/f.txt/g", fsroot.ErrNotDir)
	wantContent(t, r, "a/b/c/f.txt", []byte("deep"))
}

func (s suite) wrongKind(t *testing.T) {
	r := s.root(t)
	ctx := context.Background()
	mkdir(t, r, "dir")
	write(t, r, "file", []byte("f"))
	_, err := r.ReadFile(ctx, "dir")
	WantErr(t, "ReadFile", err, "dir", fsroot.ErrIsDir)
	err = r.WriteFile(ctx, "dir", []byte("x"))
	WantErr(t, "WriteFile", err, "dir", fsroot.ErrIsDir)
	if w, err := r.Create(ctx, "dir"); err == nil {
		w.Write([]byte("x"))
		err = w.Commit()
		WantErr(t, "Create+Commit", err, "dir", fsroot.ErrIsDir)
	} else {
		WantErr(t, "Create", err, "dir", fsroot.ErrIsDir)
	}
	_, err = r.ReadFile(ctx, "missing")
	WantErr(t, "ReadFile", err, "missing", fs.ErrNotExist)
	// A path through a file: some stores say "not a directory", some "does not exist".
	_, err = r.ReadFile(ctx, "file/x")
	WantErr(t, "ReadFile", err, "file/x", fsroot.ErrNotDir, fs.ErrNotExist)
	err = r.WriteFile(ctx, "file/x", []byte("x"))
	WantErr(t, "WriteFile", err, "file/x", fsroot.ErrNotDir, fs.ErrNotExist)
	_, err = r.Stat(ctx, "file/x")
	WantErr(t, "Stat", err, "file/x", fsroot.ErrNotDir, fs.ErrNotExist)
	wantNames(t, r, "", "dir", "file")
	wantNames(t, r, "dir")
	wantContent(t, r, "file", []byte("f"))
}

func (s suite) remove(t *testing.T) {
	r := s.root(t)
	ctx := context.Background()
	write(t, r, "f", []byte("x"))
	mkdir(t, r, "empty")
	mkdir(t, r, "full/sub")
	write(t, r, "full/g", []byte("y"))
	ok(t, "Remove(f)", r.Remove(ctx, "f"))
	_, err := r.Stat(ctx, "f")
	WantErr(t, "Stat", err, "f", fs.ErrNotExist)
	ok(t, "Remove(empty)", r.Remove(ctx, "empty"))
	_, err = r.Stat(ctx, "empty")
	WantErr(t, "Stat", err, "empty", fs.ErrNotExist)
	err = r.Remove(ctx, "full")
	WantErr(t, "Remove", err, "full", fsroot.ErrNotEmpty)
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("Remove of a non-empty directory = %v; want it to wrap fs.ErrExist too", err)
	}
	wantNames(t, r, "full", "g", "sub")
	err = r.Remove(ctx, "missing")
	WantErr(t, "Remove", err, "missing", fs.ErrNotExist)
	err = r.Remove(ctx, "f")
	WantErr(t, "Remove", err, "f", fs.ErrNotExist)
	ok(t, "Remove(full/sub)", r.Remove(ctx, "full/sub"))
	ok(t, "Remove(full/g)", r.Remove(ctx, "full/g"))
	ok(t, "Remove(full)", r.Remove(ctx, "full"))
	wantNames(t, r, "")
}

func (s suite) createCommit(t *testing.T) {
	r := s.root(t)
	ctx := context.Background()
	w, err := r.Create(ctx, "new.txt")
	ok(t, "Create", err)
	for _, p := range []string{"one ", "", "two ", "three"} {
		n, err := w.Write([]byte(p))
		ok(t, "Write", err)
		if n != len(p) {
			t.Fatalf("Write(%q) = %d", p, n)
		}
	}
	// Nothing is visible under the name before Commit.
	_, err = r.Stat(ctx, "new.txt")
	WantErr(t, "Stat before Commit", err, "new.txt", fs.ErrNotExist)
	_, err = r.ReadFile(ctx, "new.txt")
	WantErr(t, "ReadFile before Commit", err, "new.txt", fs.ErrNotExist)
	wantNames(t, r, "")
	ok(t, "Commit", w.Commit())
	wantContent(t, r, "new.txt", []byte("one two three"))
	ok(t, "Abort after Commit", w.Abort())
	wantContent(t, r, "new.txt", []byte("one two three"))
	if _, err := w.Write([]byte("more")); err == nil {
		t.Errorf("Write after Commit succeeded")
	}
	wantNames(t, r, "", "new.txt")

	// Replacing through Create: the old content stays until Commit.
	w, err = r.Create(ctx, "new.txt")
	ok(t, "Create", err)
	_, err = w.Write([]byte("replaced"))
	ok(t, "Write", err)
	wantContent(t, r, "new.txt", []byte("one two three"))
	ok(t, "Commit", w.Commit())
	wantContent(t, r, "new.txt", []byte("replaced"))

	// An empty Commit makes an empty file.
	w, err = r.Create(ctx, "empty")
	ok(t, "Create", err)
	ok(t, "Commit", w.Commit())
	wantContent(t, r, "empty", nil)

	// A missing parent fails at Create or at the latest at Commit, and creates nothing.
	if w, err := r.Create(ctx, "missing/f"); err == nil {
		w.Write([]byte("x"))
		WantErr(t, "Create+Commit", w.Commit(), "missing/f", fs.ErrNotExist)
	} else {
		WantErr(t, "Create", err, "missing/f", fs.ErrNotExist)
	}
	wantNames(t, r, "", "empty", "new.txt")
}

func (s suite) createAbort(t *testing.T) {
	r := s.root(t)
	ctx := context.Background()
	write(t, r, "keep.txt", []byte("old"))
	w, err := r.Create(ctx, "keep.txt")
	ok(t, "Create", err)
	_, err = w.Write(Pattern(100<<10, 3))
	ok(t, "Write", err)
	ok(t, "Abort", w.Abort())
	ok(t, "Abort again", w.Abort())
	wantContent(t, r, "keep.txt", []byte("old"))
	if err := w.Commit(); err == nil {
		t.Errorf("Commit after Abort succeeded")
	}
	wantContent(t, r, "keep.txt", []byte("old"))

	w, err = r.Create(ctx, "never.txt")
	ok(t, "Create", err)
	_, err = w.Write([]byte("x"))
	ok(t, "Write", err)
	ok(t, "Abort", w.Abort())
	_, err = r.Stat(ctx, "never.txt")
	WantErr(t, "Stat after Abort", err, "never.txt", fs.ErrNotExist)
	wantNames(t, r, "", "keep.txt")
}

func (s suite) prefixRead(t *testing.T) {
	r := s.root(t)
	ctx := context.Background()
	data := Pattern(1000, 4)
	write(t, r, "f", data)
	mkdir(t, r, "d")
	cases := []struct {
		name string
		n    int
		want []byte
	}{
		{"zero", 0, nil},
		{"some", 10, data[:10]},
		{"all-but-one", 999, data[:999]},
		{"exactly", 1000, data},
		{"more", 5000, data},
	}
	for _, c := range cases {
		got, size, err := fsroot.ReadPrefix(ctx, r, "f", c.n)
		ok(t, c.name, err)
		if !bytes.Equal(got, c.want) || size != 1000 {
			t.Errorf("%s: ReadPrefix(f, %d) = %d bytes, size %d; want %d bytes, size 1000", c.name, c.n, len(got), size, len(c.want))
		}
	}
	_, _, err := fsroot.ReadPrefix(ctx, r, "missing", 10)
	WantErr(t, "ReadPrefix", err, "missing", fs.ErrNotExist)
	_, _, err = fsroot.ReadPrefix(ctx, r, "d", 10)
	WantErr(t, "ReadPrefix", err, "d", fsroot.ErrIsDir)
}

// rangeRead reads a file in pieces through the root's RangeReader (every root has one: the
// workspace's download reads large files with it): pieces at the start, inside, across and past
// the end, an empty file, and the errors of a missing file, a folder, a bad offset and a closed
// reader.
func (s suite) rangeRead(t *testing.T) {
	r := s.root(t)
	if _, isRR := r.(fsroot.RangeReader); !isRR {
		t.Fatalf("%T is no fsroot.RangeReader: a download of a large file would hold all of it", r)
	}
	ctx := context.Background()
	data := Pattern(1000, 6)
	write(t, r, "f", data)
	write(t, r, "empty", nil)
	mkdir(t, r, "d")
	f, err := fsroot.OpenRange(ctx, r, "f")
	ok(t, "OpenRange(f)", err)
	if f.Size() != 1000 {
		t.Errorf("OpenRange(f).Size() = %d; want 1000", f.Size())
	}
	cases := []struct {
		name string
		off  int64
		len  int
		want []byte
	}{
		{"start", 0, 10, data[:10]},
		{"nothing", 0, 0, nil},
		{"inside", 500, 100, data[500:600]},
		{"whole", 0, 1000, data},
		{"across the end", 990, 100, data[990:]},
		{"at the end", 1000, 10, nil},
		{"past the end", 5000, 10, nil},
		{"inside again", 3, 4, data[3:7]},
	}
	for _, c := range cases {
		p := bytes.Repeat([]byte{0xee}, c.len)
		n, err := f.ReadAt(ctx, p, c.off)
		ok(t, "ReadAt "+c.name, err)
		if n != len(c.want) || !bytes.Equal(p[:n], c.want) {
			t.Errorf("ReadAt %s (%d bytes at %d) = %d bytes %s; want %d bytes %s", c.name, c.len, c.off, n, head(p[:n]), len(c.want), head(c.want))
		}
	}
	_, err = f.ReadAt(ctx, make([]byte, 4), -1)
	WantErr(t, "ReadAt at -1", err, "f", fs.ErrInvalid)
	ok(t, "Close", f.Close())
	ok(t, "Close again", f.Close())
	_, err = f.ReadAt(ctx, make([]byte, 4), 0)
	WantErr(t, "ReadAt after Close", err, "f", fs.ErrClosed)

	e, err := fsroot.OpenRange(ctx, r, "empty")
	ok(t, "OpenRange(empty)", err)
	if n, err := e.ReadAt(ctx, make([]byte, 4), 0); err != nil || n != 0 || e.Size() != 0 {
		t.Errorf("the empty file: Size %d, ReadAt = %d, %v; want 0, 0, nil", e.Size(), n, err)
	}
	e.Close()

	_, err = fsroot.OpenRange(ctx, r, "missing")
	WantErr(t, "OpenRange", err, "missing", fs.ErrNotExist)
	_, err = fsroot.OpenRange(ctx, r, "d")
	WantErr(t, "OpenRange", err, "d", fsroot.ErrIsDir)
	_, err = fsroot.OpenRange(ctx, r, "d/missing")
	WantErr(t, "OpenRange", err, "d/missing", fs.ErrNotExist)
}

// rangeReadAcrossReplace replaces (and then removes) a file between two pieces of one reader:
// the second piece is the opened version's or ErrChanged, never the new content; a reader
// opened after the replace reads the new version.
func (s suite) rangeReadAcrossReplace(t *testing.T) {
	r := s.root(t)
	ctx := context.Background()
	old, shorter, longer := Pattern(3000, 7), Pattern(1000, 8), Pattern(5000, 9)
	for _, c := range []struct {
		name string
		next []byte // nil: removed
	}{
		{"shorter", shorter},
		{"longer", longer},
		{"same length", Pattern(3000, 10)},
		{"removed", nil},
	} {
		write(t, r, "f", old)
		f, err := fsroot.OpenRange(ctx, r, "f")
		ok(t, c.name+": OpenRange", err)
		p := make([]byte, 1000)
		n, err := f.ReadAt(ctx, p, 0)
		ok(t, c.name+": ReadAt before", err)
		if n != 1000 || !bytes.Equal(p, old[:1000]) {
			t.Errorf("%s: the first piece = %d bytes %s; want the first 1000 of the old", c.name, n, head(p[:n]))
		}
		if c.next == nil {
			ok(t, c.name+": Remove", r.Remove(ctx, "f"))
		} else {
			write(t, r, "f", c.next)
		}
		clear(p)
		n, err = f.ReadAt(ctx, p, 1500)
		switch {
		case errors.Is(err, fsroot.ErrChanged):
			WantErr(t, c.name+": ReadAt after", err, "f", fsroot.ErrChanged)
		case err != nil:
			t.Errorf("%s: ReadAt after the change = %v; want the old version's bytes or ErrChanged", c.name, err)
		case n != 1000 || !bytes.Equal(p, old[1500:2500]) || f.Size() != 3000:
			t.Errorf("%s: ReadAt after the change = %d bytes %s of a version of %d; want the old version's 1000 at 1500 or ErrChanged", c.name, n, head(p[:n]), f.Size())
		}
		ok(t, c.name+": Close", f.Close())
		if c.next == nil {
			continue
		}
		g, err := fsroot.OpenRange(ctx, r, "f")
		ok(t, c.name+": OpenRange after", err)
		got := make([]byte, len(c.next)+10)
		n, err = g.ReadAt(ctx, got, 0)
		ok(t, c.name+": ReadAt of the new version", err)
		if g.Size() != int64(len(c.next)) || !bytes.Equal(got[:n], c.next) {
			t.Errorf("%s: a reader opened after the replace read %d bytes %s of %d; want the new %d", c.name, n, head(got[:n]), g.Size(), len(c.next))
		}
		ok(t, c.name+": Close", g.Close())
	}
}

func (s suite) metadata(t *testing.T) {
	r := s.root(t)
	md, isMD := r.(fsroot.Metadata)
	if !isMD {
		t.Skip("the root keeps no metadata area (it does not implement fsroot.Metadata)")
	}
	ctx := context.Background()
	meta, err := md.Meta(ctx)
	ok(t, "Meta", err)
	write(t, meta, "audit.jsonl", []byte("{}\n"))
	wantContent(t, meta, "audit.jsonl", []byte("{}\n"))
	again, err := md.Meta(ctx)
	ok(t, "Meta again", err)
	wantContent(t, again, "audit.jsonl", []byte("{}\n"))
	// The workspace neither lists nor reaches it.
	wantNames(t, r, "")
	_, err = r.ReadFile(ctx, fsroot.MetaDir+"/audit.jsonl")
	WantRefused(t, "ReadFile", err, fsroot.MetaDir+"/audit.jsonl", refusal.DotfileRefused)
	write(t, r, "audit.jsonl", []byte("workspace"))
	wantContent(t, meta, "audit.jsonl", []byte("{}\n"))
}

func (s suite) atomicity(t *testing.T) {
	if s.opts.FailWrites == nil {
		t.Skip("the root declares no FailWrites hook")
	}
	r := s.root(t)
	ctx := context.Background()
	old := []byte("the old content")
	write(t, r, "f.txt", old)
	restore := s.opts.FailWrites(t, r)
	restored := false
	defer func() {
		if !restored {
			restore()
		}
	}()
	big := Pattern(256<<10, 5)

	if err := r.WriteFile(ctx, "f.txt", big); err == nil {
		t.Fatalf("WriteFile succeeded although writes were made to fail")
	}
	wantContent(t, r, "f.txt", old)
	wantNames(t, r, "", "f.txt")

	if err := r.WriteFile(ctx, "new.txt", big); err == nil {
		t.Fatalf("WriteFile of a new file succeeded although writes were made to fail")
	}
	_, err := r.Stat(ctx, "new.txt")
	WantErr(t, "Stat after a failed write", err, "new.txt", fs.ErrNotExist)
	wantNames(t, r, "", "f.txt")

	w, err := r.Create(ctx, "f.txt")
	if err == nil {
		failed := false
		for off := 0; off < len(big); off += 64 << 10 {
			if _, err := w.Write(big[off : off+64<<10]); err != nil {
				failed = true
				break
			}
		}
		if err := w.Commit(); err == nil {
			t.Fatalf("Create+Commit succeeded although writes were made to fail (a Write failed: %v)", failed)
		}
		w.Abort()
	}
	wantContent(t, r, "f.txt", old)
	wantNames(t, r, "", "f.txt")

	restore()
	restored = true
	write(t, r, "f.txt", big)
	wantContent(t, r, "f.txt", big)
	wantNames(t, r, "", "f.txt")
}

func (s suite) symlinkEscapes(t *testing.T) {
	if s.opts.Escapes == nil {
		t.Skip("the root declares no symbolic links (no Escapes hook)")
	}
	r := s.root(t)
	ctx := context.Background()
	outside := s.opts.Escapes(t, r)
	before := outside(t)
	if before["secret"] != "outside" {
		t.Fatalf("the Escapes hook left outside = %v; want secret: outside", before)
	}
	out := refusal.OutsideRoot
	_, err := r.ReadFile(ctx, "to-file")
	WantRefused(t, "ReadFile", err, "to-file", out)
	for _, dir := range []string{"to-dir", "rel-dir"} {
		name := dir + "/secret"
		_, err = r.ReadFile(ctx, name)
		WantRefused(t, "ReadFile", err, name, out)
		_, _, err = fsroot.ReadPrefix(ctx, r, name, 3)
		WantRefused(t, "ReadPrefix", err, name, out)
		_, err = r.Stat(ctx, name)
		WantRefused(t, "Stat", err, name, out)
		WantRefused(t, "WriteFile", r.WriteFile(ctx, name, []byte("pwned")), name, out)
		WantRefused(t, "WriteFile", r.WriteFile(ctx, dir+"/new.sh", []byte("pwned")), dir+"/new.sh", out)
		if w, err := r.Create(ctx, dir+"/made.sh"); err == nil {
			w.Write([]byte("pwned"))
			WantRefused(t, "Create+Commit", w.Commit(), dir+"/made.sh", out)
		} else {
			WantRefused(t, "Create", err, dir+"/made.sh", out)
		}
		_, err = r.ReadDir(ctx, dir)
		WantRefused(t, "ReadDir", err, dir, out)
		WantRefused(t, "MkdirAll", r.MkdirAll(ctx, dir+"/x/y"), dir+"/x/y", out)
		WantRefused(t, "Remove", r.Remove(ctx, name), name, out)
	}
	_, err = r.Stat(ctx, "to-file")
	WantRefused(t, "Stat", err, "to-file", out)
	WantRefused(t, "WriteFile", r.WriteFile(ctx, "to-file", []byte("pwned")), "to-file", out)
	// A listing never shows a link that leads out as if it were the thing outside.
	entries, err := r.ReadDir(ctx, "")
	ok(t, "ReadDir", err)
	for _, e := range entries {
		if e.Name == "to-file" || e.Name == "to-dir" || e.Name == "rel-dir" {
			t.Errorf("ReadDir lists the escaping link %+v", e)
		}
	}
	if after := outside(t); len(after) != 1 || after["secret"] != "outside" {
		t.Errorf("the outside directory changed: %v", after)
	}
}

func (s suite) concurrentReplace(t *testing.T) {
	r := s.root(t)
	ctx := context.Background()
	a := bytes.Repeat([]byte{'a'}, 32<<10)
	b := bytes.Repeat([]byte{'b'}, 48<<10)
	write(t, r, "h", a)
	const writes, readers, reads = 30, 4, 30
	var wg sync.WaitGroup
	errs := make(chan error, readers+2)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range writes {
			data := a
			if i%2 == 0 {
				data = b
			}
			if i%3 == 0 {
				w, err := r.Create(ctx, "h")
				if err == nil {
					_, err = w.Write(data[:len(data)/2])
				}
				if err == nil {
					runtime.Gosched()
					_, err = w.Write(data[len(data)/2:])
				}
				if err == nil {
					err = w.Commit()
				}
				if err != nil {
					errs <- fmt.Errorf("Create+Commit: %w", err)
					return
				}
			} else if err := r.WriteFile(ctx, "h", data); err != nil {
				errs <- fmt.Errorf("WriteFile: %w", err)
				return
			}
			runtime.Gosched()
		}
	}()
	whole := func(got []byte) bool { return bytes.Equal(got, a) || bytes.Equal(got, b) }
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range reads {
				got, err := r.ReadFile(ctx, "h")
				if err != nil {
					errs <- fmt.Errorf("ReadFile during replaces: %w", err)
					return
				}
				if !whole(got) {
					errs <- fmt.Errorf("ReadFile during replaces saw %d bytes %s, neither old nor new", len(got), head(got))
					return
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range reads {
			entries, err := r.ReadDir(ctx, "")
			if err != nil {
				errs <- fmt.Errorf("ReadDir during replaces: %w", err)
				return
			}
			if len(entries) != 1 || entries[0].Name != "h" || (entries[0].Size != int64(len(a)) && entries[0].Size != int64(len(b))) {
				errs <- fmt.Errorf("ReadDir during replaces = %+v; want only h, %d or %d bytes", entries, len(a), len(b))
				return
			}
			got, size, err := fsroot.ReadPrefix(ctx, r, "h", 8)
			if err != nil {
				errs <- fmt.Errorf("ReadPrefix during replaces: %w", err)
				return
			}
			if !(bytes.Equal(got, a[:8]) && size == int64(len(a))) && !(bytes.Equal(got, b[:8]) && size == int64(len(b))) {
				errs <- fmt.Errorf("ReadPrefix during replaces = %q of %d bytes, mixing two versions", got, size)
				return
			}
			runtime.Gosched()
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := r.ReadFile(ctx, "h")
	ok(t, "ReadFile", err)
	if !whole(got) {
		t.Errorf("after the replaces h holds %d bytes", len(got))
	}
	wantNames(t, r, "", "h")
}

// rename moves a file and a folder with its content, and refuses what a move must not do:
// replace, move a missing name, move a folder into itself, reach outside or a dot name.
func (s suite) rename(t *testing.T) {
	r := s.root(t)
	mv, can := r.(fsroot.Renamer)
	if !can {
		if !s.opts.NoRename {
			t.Fatal("the root is no fsroot.Renamer; declare NoRename if it cannot move")
		}
		t.Skip("declared: the root cannot move")
	}
	if s.opts.NoRename {
		t.Fatal("the root is a Renamer but declares NoRename")
	}
	ctx := context.Background()
	write(t, r, "a.txt", []byte("alpha"))
	mkdir(t, r, "dir/sub")
	write(t, r, "dir/sub/b.txt", []byte("beta"))
	write(t, r, "dir/c.txt", []byte("gamma"))
	mkdir(t, r, "other")
	ok(t, "Rename(a.txt, other/a2.txt)", mv.Rename(ctx, "a.txt", "other/a2.txt"))
	wantContent(t, r, "other/a2.txt", []byte("alpha"))
	_, err := r.Stat(ctx, "a.txt")
	WantErr(t, "Stat after the move", err, "a.txt", fs.ErrNotExist)
	if s.opts.FilesOnlyRename {
		if err := mv.Rename(ctx, "dir", "other/moved"); !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("moving a folder, declared unsupported: %v", err)
		}
		wantContent(t, r, "dir/sub/b.txt", []byte("beta"))
		mkdir(t, r, "other/moved")
		ok(t, "Rename(dir/c.txt, other/moved/c.txt)", mv.Rename(ctx, "dir/c.txt", "other/moved/c.txt"))
		ok(t, "Remove(dir/sub/b.txt)", r.Remove(ctx, "dir/sub/b.txt"))
		ok(t, "Remove(dir/sub)", r.Remove(ctx, "dir/sub"))
		ok(t, "Remove(dir)", r.Remove(ctx, "dir"))
	} else {
		ok(t, "Rename(dir, other/moved)", mv.Rename(ctx, "dir", "other/moved"))
		wantContent(t, r, "other/moved/sub/b.txt", []byte("beta"))
	}
	wantContent(t, r, "other/moved/c.txt", []byte("gamma"))
	wantNames(t, r, "", "other")
	write(t, r, "x.txt", []byte("x"))
	err = mv.Rename(ctx, "x.txt", "other/a2.txt")
	WantErr(t, "Rename onto a file", err, "other/a2.txt", fs.ErrExist)
	wantContent(t, r, "other/a2.txt", []byte("alpha"))
	err = mv.Rename(ctx, "missing.txt", "y.txt")
	WantErr(t, "Rename of a missing file", err, "missing.txt", fs.ErrNotExist)
	err = mv.Rename(ctx, "other", "other/moved/inside")
	WantErr(t, "Rename of a folder into itself", err, "other/moved/inside", fs.ErrInvalid)
	WantRefused(t, "Rename to outside", mv.Rename(ctx, "x.txt", "../x.txt"), "../x.txt", refusal.OutsideRoot)
	WantRefused(t, "Rename to a dot name", mv.Rename(ctx, "x.txt", ".env"), ".env", refusal.DotfileRefused)
	WantRefused(t, "Rename from a dot name", mv.Rename(ctx, ".env", "y.txt"), ".env", refusal.DotfileRefused)
	wantContent(t, r, "x.txt", []byte("x"))
}
