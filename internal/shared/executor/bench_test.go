package executor_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// benchRoots lists the roots the benchmarks run on; bench_notjs_test.go adds the OS root.
var benchRoots = []struct {
	name string
	open func(b *testing.B) fsroot.Root
}{
	{"memory", func(b *testing.B) fsroot.Root { return fsroot.NewMemory() }},
}

var benchSizes = []struct {
	name string
	n    int
}{
	{"4KiB", 4 << 10},
	{"8MiB", 8 << 20},
}

// BenchmarkReadFile reads a file through Execute. An 8 MiB file returns its first MaxReadBytes,
// flagged truncated; SetBytes counts the file's size.
func BenchmarkReadFile(b *testing.B) {
	for _, r := range benchRoots {
		for _, s := range benchSizes {
			b.Run(r.name+"/"+s.name, func(b *testing.B) {
				root := r.open(b)
				ctx := context.Background()
				if err := root.WriteFile(ctx, "f.txt", []byte(strings.Repeat("v", s.n))); err != nil {
					b.Fatal(err)
				}
				e := executor.New(root, executor.Options{})
				c := call("read-file", `{"path":"f.txt"}`)
				b.SetBytes(int64(s.n))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.Execute(ctx, c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkWriteFile replaces a file through Execute, atomically. The 8 MiB case raises
// Options.MaxWriteBytes (as an in-page caller may; a model's write is bounded by MaxWriteBytes
// and the wire's frame) and includes decoding the JSON arguments.
func BenchmarkWriteFile(b *testing.B) {
	for _, r := range benchRoots {
		for _, s := range benchSizes {
			b.Run(r.name+"/"+s.name, func(b *testing.B) {
				root := r.open(b)
				ctx := context.Background()
				e := executor.New(root, executor.Options{MaxWriteBytes: s.n})
				args, _ := json.Marshal(map[string]string{"path": "f.txt", "content": strings.Repeat("w", s.n)})
				c := call("write-file", string(args))
				b.SetBytes(int64(s.n))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.Execute(ctx, c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkWriteFileWithHistory is BenchmarkWriteFile with an undo history, as every write from
// the page and the assistant now is: the earlier version is read and kept (a record and a
// copy) before the write. Beside BenchmarkWriteFile it prices the history.
func BenchmarkWriteFileWithHistory(b *testing.B) {
	for _, r := range benchRoots {
		for _, s := range benchSizes {
			b.Run(r.name+"/"+s.name, func(b *testing.B) {
				root := r.open(b)
				ctx := context.Background()
				h, err := executor.OpenHistory(ctx, root, executor.HistoryOptions{MaxEntries: 8})
				if err != nil {
					b.Fatal(err)
				}
				e := executor.New(root, executor.Options{MaxWriteBytes: s.n, History: h})
				args, _ := json.Marshal(map[string]string{"path": "f.txt", "content": strings.Repeat("w", s.n)})
				c := call("write-file", string(args))
				b.SetBytes(int64(s.n))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.Execute(ctx, c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkUndoRedo takes a write back and puts it again: one undo (the digest check, the
// earlier version restored, the later one kept) and one redo per iteration.
func BenchmarkUndoRedo(b *testing.B) {
	for _, r := range benchRoots {
		for _, s := range benchSizes {
			b.Run(r.name+"/"+s.name, func(b *testing.B) {
				root := r.open(b)
				ctx := context.Background()
				if err := root.WriteFile(ctx, "f.txt", []byte(strings.Repeat("v", s.n))); err != nil {
					b.Fatal(err)
				}
				h, err := executor.OpenHistory(ctx, root, executor.HistoryOptions{})
				if err != nil {
					b.Fatal(err)
				}
				e := executor.New(root, executor.Options{MaxWriteBytes: s.n, History: h})
				args, _ := json.Marshal(map[string]string{"path": "f.txt", "content": strings.Repeat("w", s.n)})
				if _, err := e.Execute(ctx, call("write-file", string(args))); err != nil {
					b.Fatal(err)
				}
				undo, redo := call("undo-last", `{}`), call("redo-last", `{}`)
				b.SetBytes(int64(s.n))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.Execute(ctx, undo); err != nil {
						b.Fatal(err)
					}
					if _, err := e.Execute(ctx, redo); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
