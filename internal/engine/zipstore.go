package engine

import (
	"encoding/binary"
	"hash/crc32"
	"time"
)

// The workspace's download (files.export.*) is a zip archive whose files are stored, not
// compressed: archive/zip would bring compress/flate into the page's wasm (about 285 KB more
// before compression) for files that are mostly small text, and a stored archive is written as
// it goes, a piece of a file at a time, with nothing to seek back to: each entry's local header
// says its CRC-32 and sizes follow the data (general purpose flag bit 3), in a data descriptor
// written once the last piece is, so no file is held whole to sum it first.

// MaxZipEntries bounds the files of one archive: the count a zip without its Zip64 extension holds.
const MaxZipEntries = 0xffff

// MaxZipBytes bounds one archive's length: the offsets a zip without Zip64 can name.
const MaxZipBytes = 0xffffffff

// The fixed lengths of a stored entry's records (the name comes on top of the headers).
const (
	localHeaderBytes    = 30
	dataDescriptorBytes = 16 // with its signature
	centralHeaderBytes  = 46
	endRecordBytes      = 22
)

// zipFlags are every entry's general purpose flags: the name is UTF-8 (bit 11), and the CRC-32
// and sizes are in the data descriptor after the data (bit 3), zero in the local header.
const zipFlags = 0x0800 | 0x0008

// storedZip writes a stored (uncompressed) zip archive piece by piece: an entry's local header
// (begin), its data in any number of pieces (write), its data descriptor (finish), and at last
// the central directory (End).
type storedZip struct {
	offset     uint64 // bytes written so far
	central    []byte
	centralLen uint64 // the central directory's length (reserve counts it without writing it)
	entries    int

	// The entry being written.
	start       uint64 // its local header's offset
	name        string
	date, clock uint16
	crc         uint32
	size        uint64
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
func (z *storedZip) fits(name string, n int64) bool {
	if n < 0 || n > MaxZipBytes {
		return false
	}
	entry := uint64(localHeaderBytes+len(name)) + uint64(n) + dataDescriptorBytes
	after := z.offset + entry + z.centralLen + uint64(centralHeaderBytes+len(name)) + endRecordBytes
	return z.entries < MaxZipEntries && after <= MaxZipBytes
}

// reserve counts a file of n bytes named name as if it were written, without writing anything:
// fits then answers for the archive that would hold it.
func (z *storedZip) reserve(name string, n int64) {
	z.offset += uint64(localHeaderBytes+len(name)) + uint64(n) + dataDescriptorBytes
	z.centralLen += uint64(centralHeaderBytes + len(name))
	z.entries++
}

// begin returns the local header of the file name, the entry whose data write takes next.
func (z *storedZip) begin(name string, mod time.Time) []byte {
	z.start, z.name, z.crc, z.size = z.offset, name, 0, 0
	z.date, z.clock = dosTime(mod)
	head := make([]byte, 0, localHeaderBytes+len(name))
	head = binary.LittleEndian.AppendUint32(head, 0x04034b50)
	head = binary.LittleEndian.AppendUint16(head, 20) // version needed: 2.0
	head = binary.LittleEndian.AppendUint16(head, zipFlags)
	head = binary.LittleEndian.AppendUint16(head, 0) // stored
	head = binary.LittleEndian.AppendUint16(head, z.clock)
	head = binary.LittleEndian.AppendUint16(head, z.date)
	head = binary.LittleEndian.AppendUint32(head, 0) // CRC-32: in the data descriptor
	head = binary.LittleEndian.AppendUint32(head, 0) // sizes: in the data descriptor
	head = binary.LittleEndian.AppendUint32(head, 0)
	head = binary.LittleEndian.AppendUint16(head, uint16(len(name)))
	head = binary.LittleEndian.AppendUint16(head, 0) // no extra field
	head = append(head, name...)
	z.offset += uint64(len(head))
	return head
}

// write counts p as the entry's next data, which the caller puts in the archive after what it
// has put there so far.
func (z *storedZip) write(p []byte) {
	z.crc = crc32.Update(z.crc, crc32.IEEETable, p)
	z.size += uint64(len(p))
	z.offset += uint64(len(p))
}

// finish returns the entry's data descriptor (the CRC-32 and sizes of the data written) and
// records its central directory header.
func (z *storedZip) finish() []byte {
	size := uint32(z.size) // fits kept the archive, and so every entry, within 32 bits
	out := make([]byte, 0, dataDescriptorBytes)
	out = binary.LittleEndian.AppendUint32(out, 0x08074b50)
	out = binary.LittleEndian.AppendUint32(out, z.crc)
	out = binary.LittleEndian.AppendUint32(out, size)
	out = binary.LittleEndian.AppendUint32(out, size)

	c := z.central
	c = binary.LittleEndian.AppendUint32(c, 0x02014b50)
	c = binary.LittleEndian.AppendUint16(c, 20) // made by: 2.0
	c = binary.LittleEndian.AppendUint16(c, 20) // needed: 2.0
	c = binary.LittleEndian.AppendUint16(c, zipFlags)
	c = binary.LittleEndian.AppendUint16(c, 0) // stored
	c = binary.LittleEndian.AppendUint16(c, z.clock)
	c = binary.LittleEndian.AppendUint16(c, z.date)
	c = binary.LittleEndian.AppendUint32(c, z.crc)
	c = binary.LittleEndian.AppendUint32(c, size)
	c = binary.LittleEndian.AppendUint32(c, size)
	c = binary.LittleEndian.AppendUint16(c, uint16(len(z.name)))
	c = binary.LittleEndian.AppendUint16(c, 0) // extra
	c = binary.LittleEndian.AppendUint16(c, 0) // comment
	c = binary.LittleEndian.AppendUint16(c, 0) // disk
	c = binary.LittleEndian.AppendUint16(c, 0) // internal attributes
	c = binary.LittleEndian.AppendUint32(c, 0) // external attributes
	c = binary.LittleEndian.AppendUint32(c, uint32(z.start))
	z.central = append(c, z.name...)
	z.centralLen = uint64(len(z.central))

	z.entries++
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
