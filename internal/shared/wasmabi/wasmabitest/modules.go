package wasmabitest

import "encoding/binary"

// Memory is one memory of a module MultiMemory builds: its initial size and maximum in pages.
type Memory struct {
	Min, Max uint64
}

// MultiMemory is a buffer-abi/1 module under the multi-memory proposal (which browsers run and
// wazero refuses): "run" takes an i32 and answers 0, "memory" is its first memory, of one page
// and at most one, and then come extra, each of its limits. A runtime allocates every memory's
// initial size when it instantiates the module, whatever "memory" says; eight extra of 4,096
// pages is the module a review sent to the page, 2 GiB behind a 64 KiB memory.
func MultiMemory(extra ...Memory) []byte {
	memories := uleb(nil, uint64(1+len(extra)))
	memories = append(memories, 1, 1, 1) // flags (a maximum), 1 page, at most 1
	for _, m := range extra {
		memories = append(memories, 1)
		memories = uleb(uleb(memories, m.Min), m.Max)
	}
	b := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range []struct {
		id   byte
		body []byte
	}{
		{1, []byte{1, 0x60, 1, 0x7f, 1, 0x7f}}, // one type: (i32) -> i32
		{3, []byte{1, 0}},                      // one function, of that type
		{5, memories},
		{7, []byte{2, 3, 'r', 'u', 'n', 0, 0, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0}},
		{10, []byte{1, 4, 0, 0x41, 0, 0x0b}}, // its body: no locals, i32.const 0, end
	} {
		b = append(uleb(append(b, s.id), uint64(len(s.body))), s.body...)
	}
	return b
}

func uleb(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
