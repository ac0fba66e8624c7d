package executor

import (
	"testing"

	"github.com/h2non/filetype"
	"github.com/h2non/filetype/matchers"
)

// filetypeSniff is read-media's old reading of a head, by h2non/filetype, with every image and
// audio type that fits it (its map's order is random, so more than one means no single answer).
func filetypeSniff(head []byte) (kind string, fits []string) {
	for _, m := range []struct {
		kind string
		all  matchers.Map
	}{{"image", matchers.Image}, {"audio", matchers.Audio}} {
		for t, is := range m.all {
			if is(head) {
				fits = append(fits, t.MIME.Value)
			}
		}
		if len(fits) > 0 {
			return m.kind, fits
		}
	}
	return "", nil
}

var sniffSeeds = [][]byte{
	[]byte("\xFF\xD8\xFF\xE0"), []byte("\x89PNG\r\n\x1a\n"), []byte("GIF89a"), []byte("RIFF\x00\x00\x00\x00WEBPVP8 "),
	[]byte("II*\x00\x08\x00\x00\x00CR\x02\x00"), []byte("MM\x00*\x00\x00\x00\x08\x00\x00\x00"), []byte("BM\x00"),
	[]byte("II\xBC\x01"), []byte("8BPS\x00\x01"), []byte("\x00\x00\x01\x00\x01\x00"), []byte("AC1015"),
	[]byte("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic"), []byte("\x00\x00\x00\x18ftypmif1\x00\x00\x00\x00mif1heic"),
	[]byte("\x00\x00\x00\x12ftypmif1\x00\x00\x00\x00mif1heic"), []byte("\x00\x00\x00\x0C\x6A\x50\x20\x20\x0D\x0A\x87\x0A\x00"),
	[]byte("MThd\x00\x00"), []byte("ID3\x04"), []byte("\xFF\xFB\x90"), []byte("\x00\x00\x00\x20ftypM4A \x00"), []byte("OggS\x00"),
	[]byte("fLaC\x00"), []byte("RIFF\x24\x00\x00\x00WAVEfmt "), []byte("#!AMR\n\x00\x00\x00\x00\x00\x00"), []byte("\xFF\xF1\x50"),
	[]byte("FORM\x00\x00\x00\x00AIFFCOMM"), []byte("plain text"), nil,
}

// TestSniffAgreesWithFiletype holds read-media's signatures to h2non/filetype's image and audio
// matchers, for each type's own head, every prefix of it, and each with a byte changed.
func TestSniffAgreesWithFiletype(t *testing.T) {
	seen := map[string]bool{}
	for _, seed := range sniffSeeds {
		for n := range len(seed) + 1 {
			checkSniff(t, seed[:n])
		}
		if kind, mime := sniffMedia(seed); kind != "" {
			seen[mime] = true
		}
		for i := range seed {
			b := append([]byte(nil), seed...)
			b[i] ^= 0x20
			checkSniff(t, b)
		}
	}
	for _, m := range []matchers.Map{matchers.Image, matchers.Audio} {
		for typ := range m {
			if !seen[typ.MIME.Value] {
				t.Errorf("no seed is read as %s: the test does not cover it", typ.MIME.Value)
			}
		}
	}
	if _, err := filetype.Image([]byte("plain")); err == nil || len(mediaKinds) != len(matchers.Image)+len(matchers.Audio) {
		t.Errorf("read-media knows %d types, filetype's image and audio matchers %d", len(mediaKinds), len(matchers.Image)+len(matchers.Audio))
	}
}

// FuzzSniffAgreesWithFiletype compares the two on any head that filetype reads one way.
func FuzzSniffAgreesWithFiletype(f *testing.F) {
	for _, s := range sniffSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, head []byte) { checkSniff(t, head) })
}

func checkSniff(t *testing.T, head []byte) {
	t.Helper()
	wantKind, fits := filetypeSniff(head)
	kind, mime := sniffMedia(head)
	switch {
	case len(fits) > 1: // filetype's answer depends on its map's order; ours is one of them
		if kind != wantKind || !contains(fits, mime) {
			t.Fatalf("sniffMedia(%q) = %s %s, filetype fits %s %v", head, kind, mime, wantKind, fits)
		}
	case len(fits) == 1 && (kind != wantKind || mime != fits[0]), len(fits) == 0 && kind != "":
		t.Fatalf("sniffMedia(%q) = %s %s, filetype says %s %v", head, kind, mime, wantKind, fits)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
