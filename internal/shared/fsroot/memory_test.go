package fsroot_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot/fsroottest"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	fsroottest.Run(t, func(t *testing.T) fsroot.Root { return fsroot.NewMemory() }, fsroottest.Options{
		FailWrites: func(t *testing.T, root fsroot.Root) func() {
			m := root.(*fsroot.MemRoot)
			m.FailWrites(func(name string, written int64) error {
				if written > 1<<10 {
					return errors.New("injected: no space left")
				}
				return nil
			})
			return func() { m.FailWrites(nil) }
		},
	})
}

// plainRoot hides every optional interface of the root it wraps.
type plainRoot struct{ fsroot.Root }

func TestOpenRangeFallsBackToReadFile(t *testing.T) {
	ctx := context.Background()
	m := fsroot.NewMemory()
	data := fsroottest.Pattern(100, 1)
	if err := m.WriteFile(ctx, "f", data); err != nil {
		t.Fatal(err)
	}
	f, err := fsroot.OpenRange(ctx, plainRoot{m}, "f")
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 30)
	if n, err := f.ReadAt(ctx, p, 80); err != nil || n != 20 || !bytes.Equal(p[:n], data[80:]) || f.Size() != 100 {
		t.Errorf("ReadAt(30 bytes at 80) of the fallback = %d, %v (size %d); want the last 20 bytes", n, err, f.Size())
	}
	if _, err := fsroot.OpenRange(ctx, plainRoot{m}, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenRange(missing) through the fallback = %v; want fs.ErrNotExist", err)
	}
}

// TestAppendRewritesWithoutAnAppender: on a root with no in-place append, Append creates a
// missing file and adds to an existing one by an atomic rewrite.
func TestAppendRewritesWithoutAnAppender(t *testing.T) {
	ctx := context.Background()
	m := fsroot.NewMemory()
	for _, part := range []string{"one\n", "two\n"} {
		if err := fsroot.Append(ctx, plainRoot{m}, "log", []byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := m.ReadFile(ctx, "log"); err != nil || string(got) != "one\ntwo\n" {
		t.Fatalf("the file reads %q, %v", got, err)
	}
	if err := fsroot.Append(ctx, plainRoot{m}, "no-such-dir/log", []byte("x")); err == nil {
		t.Fatal("Append into a missing folder succeeded")
	}
}
