package sha

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestOwnSHA256MatchesCryptoSHA256 holds the page's SHA-256 to FIPS 180-4's examples and to
// crypto/sha256 at every length around the padding's edges, written whole and in pieces.
func TestOwnSHA256MatchesCryptoSHA256(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
	} {
		got := sumOwn([]byte(c.in))
		if hex.EncodeToString(got[:]) != c.want {
			t.Errorf("sha256(%q) = %x, want %s", c.in, got, c.want)
		}
	}
	data := make([]byte, 300)
	for i := range data {
		data[i] = byte(i*7 + 3)
	}
	for n := range len(data) + 1 {
		want := sha256.Sum256(data[:n])
		if got := sumOwn(data[:n]); got != want {
			t.Fatalf("length %d: own %x, crypto/sha256 %x", n, got, want)
		}
		for _, step := range []int{1, 3, 63, 64, 65} {
			h := newOwn()
			for p := data[:n]; len(p) > 0; {
				k := min(step, len(p))
				h.Write(p[:k])
				p = p[k:]
			}
			if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
				t.Fatalf("length %d in pieces of %d: own %x, crypto/sha256 %x", n, step, got, want)
			}
			if again := h.Sum(nil); !bytes.Equal(again, want[:]) {
				t.Fatalf("length %d: a second Sum gave %x", n, again)
			}
		}
	}
	h := newOwn()
	h.Write([]byte("something"))
	h.Reset()
	if got, want := h.Sum(nil), sha256.Sum256(nil); !bytes.Equal(got, want[:]) {
		t.Errorf("after Reset: %x, want %x", got, want)
	}
	if got, want := Sum256(data), sha256.Sum256(data); got != want {
		t.Errorf("Sum256 = %x, want %x", got, want)
	}
}

// FuzzOwnSHA256 compares the page's SHA-256 with crypto/sha256 on any input, split anywhere.
func FuzzOwnSHA256(f *testing.F) {
	f.Add([]byte("abc"), uint8(1))
	f.Add(make([]byte, 119), uint8(56))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		want := sha256.Sum256(data)
		h := newOwn()
		k := min(int(cut), len(data))
		h.Write(data[:k])
		h.Write(data[k:])
		if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
			t.Fatalf("own %x, crypto/sha256 %x", got, want)
		}
	})
}

func BenchmarkOwnSHA256(b *testing.B) {
	data := make([]byte, 4096)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		sumOwn(data)
	}
}
