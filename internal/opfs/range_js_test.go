package opfs

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot/fsroottest"
)

// rangePiece is the piece the browser range tests read: the download's chunk.
const rangePiece = 1 << 20

// TestBrowserRangeReadsAreSlicesOfOneSnapshot: in OPFS (through the pool of sync handles in a
// worker, a file the pool already holds open included) and in a chosen folder, a file of several
// pieces reads back whole, piece by piece; once it is replaced, the reader opened before says
// ErrChanged (the browser refuses the stale snapshot) rather than hand out the new bytes, and a
// reader opened after reads the new version.
func TestBrowserRangeReadsAreSlicesOfOneSnapshot(t *testing.T) {
	for _, c := range []struct {
		name string
		root func(t *testing.T) *Root
	}{
		{"OPFS", opfsRoot},
		{"Handle", func(t *testing.T) *Root { return FromHandle(freshDir(t)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			r := c.root(t)
			data := fsroottest.Pattern(3*rangePiece+17, 11)
			if err := r.WriteFile(ctx, "big.bin", data); err != nil {
				t.Fatal(err)
			}
			if _, err := r.ReadFile(ctx, "big.bin"); err != nil { // the pool now holds it open
				t.Fatal(err)
			}
			f, err := r.OpenRange(ctx, "big.bin")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var got []byte
			p := make([]byte, rangePiece)
			for off := int64(0); off < f.Size(); {
				n, err := f.ReadAt(ctx, p, off)
				if err != nil || n == 0 {
					t.Fatalf("ReadAt(%d) = %d, %v", off, n, err)
				}
				got = append(got, p[:n]...)
				off += int64(n)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("read %d bytes in pieces; want the %d written", len(got), len(data))
			}
			next := fsroottest.Pattern(rangePiece, 12)
			if err := r.WriteFile(ctx, "big.bin", next); err != nil {
				t.Fatal(err)
			}
			if n, err := f.ReadAt(ctx, p, rangePiece); !errors.Is(err, fsroot.ErrChanged) {
				t.Errorf("ReadAt after the replace = %d bytes, %v; want ErrChanged", n, err)
			}
			g, err := r.OpenRange(ctx, "big.bin")
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if n, err := g.ReadAt(ctx, p, 0); err != nil || g.Size() != int64(len(next)) || !bytes.Equal(p[:n], next) {
				t.Errorf("a reader opened after the replace: %d of %d bytes, %v; want the new %d", n, g.Size(), err, len(next))
			}
		})
	}
}
