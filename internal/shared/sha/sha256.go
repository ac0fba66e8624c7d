package sha

import (
	"encoding/binary"
	"hash"
	"math/bits"
)

// sha256Init is H(0) of FIPS 180-4 section 5.3.3.
var sha256Init = [8]uint32{
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
}

// sha256K is the constant schedule K of FIPS 180-4 section 4.2.2.
var sha256K = [64]uint32{
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

// state is a running SHA-256: the chaining value, the bytes not yet a whole block, and the
// length so far.
type state struct {
	h   [8]uint32
	buf [BlockSize]byte
	n   int    // bytes held in buf
	len uint64 // bytes written in all
}

func newOwn() hash.Hash {
	d := &state{}
	d.Reset()
	return d
}

func (d *state) Reset() {
	d.h, d.n, d.len = sha256Init, 0, 0
}

func (d *state) Size() int      { return Size }
func (d *state) BlockSize() int { return BlockSize }

func (d *state) Write(p []byte) (int, error) {
	written := len(p)
	d.len += uint64(written)
	if d.n > 0 {
		c := copy(d.buf[d.n:], p)
		d.n += c
		p = p[c:]
		if d.n < BlockSize {
			return written, nil
		}
		d.blocks(d.buf[:])
		d.n = 0
	}
	if whole := len(p) &^ (BlockSize - 1); whole > 0 {
		d.blocks(p[:whole])
		p = p[whole:]
	}
	d.n = copy(d.buf[:], p)
	return written, nil
}

// Sum appends the digest of what was written so far to b; d is left as it was.
func (d *state) Sum(b []byte) []byte {
	c := *d
	sum := c.final()
	return append(b, sum[:]...)
}

// final pads the message (a 1 bit, zeros, the bit length as 64 bits big-endian: FIPS 180-4
// section 5.1.1) and returns the digest.
func (d *state) final() [Size]byte {
	bitLen := d.len << 3
	var pad [BlockSize + 8]byte
	pad[0] = 0x80
	padLen := 56 - d.n // the length must end the block: pad to 56 mod 64
	if d.n >= 56 {
		padLen += BlockSize
	}
	binary.BigEndian.PutUint64(pad[padLen:], bitLen)
	d.Write(pad[:padLen+8])
	var out [Size]byte
	for i, v := range d.h {
		binary.BigEndian.PutUint32(out[4*i:], v)
	}
	return out
}

// blocks runs the compression function (FIPS 180-4 section 6.2.2) over p, a whole number of
// blocks.
func (d *state) blocks(p []byte) {
	var w [64]uint32
	h0, h1, h2, h3, h4, h5, h6, h7 := d.h[0], d.h[1], d.h[2], d.h[3], d.h[4], d.h[5], d.h[6], d.h[7]
	for ; len(p) >= BlockSize; p = p[BlockSize:] {
		for t := range 16 {
			w[t] = binary.BigEndian.Uint32(p[4*t:])
		}
		for t := 16; t < 64; t++ {
			s0 := bits.RotateLeft32(w[t-15], -7) ^ bits.RotateLeft32(w[t-15], -18) ^ w[t-15]>>3
			s1 := bits.RotateLeft32(w[t-2], -17) ^ bits.RotateLeft32(w[t-2], -19) ^ w[t-2]>>10
			w[t] = w[t-16] + s0 + w[t-7] + s1
		}
		a, b, c, e, f, g, hh, dd := h0, h1, h2, h4, h5, h6, h7, h3
		for t := range 64 {
			S1 := bits.RotateLeft32(e, -6) ^ bits.RotateLeft32(e, -11) ^ bits.RotateLeft32(e, -25)
			ch := e&f ^ ^e&g
			t1 := hh + S1 + ch + sha256K[t] + w[t]
			S0 := bits.RotateLeft32(a, -2) ^ bits.RotateLeft32(a, -13) ^ bits.RotateLeft32(a, -22)
			maj := a&b ^ a&c ^ b&c
			t2 := S0 + maj
			hh, g, f, e, dd, c, b, a = g, f, e, dd+t1, c, b, a, t1+t2
		}
		h0 += a
		h1 += b
		h2 += c
		h3 += dd
		h4 += e
		h5 += f
		h6 += g
		h7 += hh
	}
	d.h = [8]uint32{h0, h1, h2, h3, h4, h5, h6, h7}
}

// sumOwn is Sum256 by this package's SHA-256.
func sumOwn(b []byte) [Size]byte {
	var d state
	d.Reset()
	d.Write(b)
	return d.final()
}
