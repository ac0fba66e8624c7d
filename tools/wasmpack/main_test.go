package main

import (
	"bytes"
	"encoding/binary"
	"maps"
	"slices"
	"testing"
)

// module builds a wasm module with a type section stand-in and a data section of segs.
func module(segs []segment) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(b, 1, 1, 0) // an empty type section, copied as it is
	body := writeData(segs)
	b = append(b, 11)
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
}

// image is the memory a module's data segments lay out: its nonzero bytes by address.
func image(t *testing.T, mod []byte) map[uint32]byte {
	t.Helper()
	r := mod[8:]
	for len(r) > 0 {
		size, n := binary.Uvarint(r[1:])
		body := r[1+n : 1+n+int(size)]
		if r[0] == 11 {
			segs, err := readData(body)
			if err != nil {
				t.Fatal(err)
			}
			img := map[uint32]byte{}
			for _, s := range segs {
				for i, c := range s.data {
					if c != 0 {
						img[s.offset+uint32(i)] = c
					}
				}
			}
			return img
		}
		r = r[1+n+int(size):]
	}
	t.Fatal("no data section")
	return nil
}

// TestPackKeepsTheImage: joining segments leaves the memory image as it was and every other
// section as it was, joins exactly the gaps up to MaxGap, and keeps offsets past 2^31 (which
// Go's i32.const writes as negative numbers) where they were.
func TestPackKeepsTheImage(t *testing.T) {
	segs := []segment{
		{offset: 1<<31 + 5, data: []byte("high")}, // Go's linker writes sections, not addresses, in order
		{offset: 4096, data: []byte("abc")},
		{offset: 4096 + 3 + MaxGap, data: []byte("def")},         // a gap of MaxGap: joined
		{offset: 4096 + 6 + 2*MaxGap + 1, data: []byte("ghi")},   // one byte more: apart
		{offset: 4096 + 9 + 2*MaxGap + 1, data: []byte{0, 1, 0}}, // adjacent: joined
	}
	mod := module(segs)
	packed, err := pack(mod)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(packed[:11], mod[:11]) {
		t.Error("the sections before the data section changed")
	}
	got, err := readData(packed[13:]) // the section's id and a one-byte size, then the body
	if err != nil {
		t.Fatal(err)
	}
	var offsets []uint32
	for _, s := range got {
		offsets = append(offsets, s.offset)
	}
	if want := []uint32{4096, 4096 + 6 + 2*MaxGap + 1, 1<<31 + 5}; !slices.Equal(offsets, want) {
		t.Errorf("segments at %v, want %v", offsets, want)
	}
	if !maps.Equal(image(t, packed), image(t, mod)) {
		t.Error("the memory image changed")
	}
}

// TestPackRefusesWhatItDoesNotKnow: a segment that is not an active i32.const one, or segments
// out of order, leave the module unwritten.
func TestPackRefusesWhatItDoesNotKnow(t *testing.T) {
	overlapping := module([]segment{{offset: 100, data: []byte("ab")}, {offset: 101, data: []byte("c")}})
	if _, err := pack(overlapping); err == nil {
		t.Error("overlapping segments were packed")
	}
	passive := module([]segment{{offset: 100, data: []byte("ab")}})
	passive[len(passive)-8] = 1 // the segment's flag (before i32.const, 2 bytes of offset, end, length, "ab"): passive
	if _, err := pack(passive); err == nil {
		t.Error("a passive segment was packed")
	}
	if _, err := pack([]byte("not wasm")); err == nil {
		t.Error("a file that is not wasm was packed")
	}
}
