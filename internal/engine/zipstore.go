package engine

import (
	"encoding/binary"
	"hash/crc32"
	"time"
)

// The workspace's download (files.export.*) is a zip archive whose files are stored, not
// compressed: archive/zip would bring compress/flate into the page's wasm (about 285 KB more
// before compression) for files that are mostly small text, and a stored archive is written as
// it goes, one file at a time, with nothing to seek back to.

// MaxZipEntries bounds the files of one archive: the count a zip without its Zip64 extension holds.
const MaxZipEntries = 0xffff

// MaxZipBytes bounds one archive's length: the offsets a zip without Zip64 can name.
const MaxZipBytes = 0xffffffff

// storedZip writes a stored (uncompressed) zip archive piece by piece: each file's local header
// and bytes (File), then the central directory (End).
type storedZip struct {
	offset  uint64 // bytes written so far
	central []byte
	entries int
}

// dosTime is t in the zip's MS-DOS date and time (local fields, two-second steps, from 1980).
func dosTime(t time.Time) (date, clock uint16) {
	if t.Year() < 1980 {
		t = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	date = uint16((t.Year()-1980)<<9 | int(t.Month())<<5 | t.Day())
	clock = uint16(t.Hour()<<11 | t.Minute()<<5 | t.Second()/2)
	return date, clock
}

// fits reports whether a file of n bytes named name may follow what is written (the archive stays
// within MaxZipEntries and MaxZipBytes, its central directory and end included).
func (z *storedZip) fits(name string, n int) bool {
	after := z.offset + uint64(30+len(name)+n) + uint64(len(z.central)+46+len(name)) + 22
	return z.entries < MaxZipEntries && after <= MaxZipBytes
}

// File returns the archive's bytes for one file: its local header, then data.
func (z *storedZip) File(name string, data []byte, mod time.Time) []byte {
	date, clock := dosTime(mod)
	sum := crc32.ChecksumIEEE(data)
	const utf8Names = 0x0800
	head := make([]byte, 0, 30+len(name)+len(data))
	head = binary.LittleEndian.AppendUint32(head, 0x04034b50)
	head = binary.LittleEndian.AppendUint16(head, 20) // version needed: 2.0
	head = binary.LittleEndian.AppendUint16(head, utf8Names)
	head = binary.LittleEndian.AppendUint16(head, 0) // stored
	head = binary.LittleEndian.AppendUint16(head, clock)
	head = binary.LittleEndian.AppendUint16(head, date)
	head = binary.LittleEndian.AppendUint32(head, sum)
	head = binary.LittleEndian.AppendUint32(head, uint32(len(data)))
	head = binary.LittleEndian.AppendUint32(head, uint32(len(data)))
	head = binary.LittleEndian.AppendUint16(head, uint16(len(name)))
	head = binary.LittleEndian.AppendUint16(head, 0) // no extra field
	head = append(head, name...)

	c := z.central
	c = binary.LittleEndian.AppendUint32(c, 0x02014b50)
	c = binary.LittleEndian.AppendUint16(c, 20) // made by: 2.0
	c = binary.LittleEndian.AppendUint16(c, 20) // needed: 2.0
	c = binary.LittleEndian.AppendUint16(c, utf8Names)
	c = binary.LittleEndian.AppendUint16(c, 0)
	c = binary.LittleEndian.AppendUint16(c, clock)
	c = binary.LittleEndian.AppendUint16(c, date)
	c = binary.LittleEndian.AppendUint32(c, sum)
	c = binary.LittleEndian.AppendUint32(c, uint32(len(data)))
	c = binary.LittleEndian.AppendUint32(c, uint32(len(data)))
	c = binary.LittleEndian.AppendUint16(c, uint16(len(name)))
	c = binary.LittleEndian.AppendUint16(c, 0) // extra
	c = binary.LittleEndian.AppendUint16(c, 0) // comment
	c = binary.LittleEndian.AppendUint16(c, 0) // disk
	c = binary.LittleEndian.AppendUint16(c, 0) // internal attributes
	c = binary.LittleEndian.AppendUint32(c, 0) // external attributes
	c = binary.LittleEndian.AppendUint32(c, uint32(z.offset))
	z.central = append(c, name...)

	z.entries++
	out := append(head, data...)
	z.offset += uint64(len(out))
	return out
}

// End returns the central directory and the end of the archive.
func (z *storedZip) End() []byte {
	out := append([]byte{}, z.central...)
	out = binary.LittleEndian.AppendUint32(out, 0x06054b50)
	out = binary.LittleEndian.AppendUint16(out, 0) // this disk
	out = binary.LittleEndian.AppendUint16(out, 0) // the central directory's disk
	out = binary.LittleEndian.AppendUint16(out, uint16(z.entries))
	out = binary.LittleEndian.AppendUint16(out, uint16(z.entries))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(z.central)))
	out = binary.LittleEndian.AppendUint32(out, uint32(z.offset))
	out = binary.LittleEndian.AppendUint16(out, 0) // no comment
	z.offset += uint64(len(out))
	return out
}
