package engine

import (
	"archive/zip"
	"bytes"
	"io"
	"slices"
	"testing"
	"time"
)

// TestTheZipBoundCountsEveryRecord: what reserve counts for a file (local header, data, data
// descriptor, central header) is what begin, write and finish really write, so the plan made at
// files.export.begin and the bound fits checks (the 4 GiB a zip without Zip64 names) hold for
// the archive sent; and fits refuses exactly the first byte past the bound.
func TestTheZipBoundCountsEveryRecord(t *testing.T) {
	files := []struct {
		name string
		data []byte
	}{{"a.txt", []byte("alpha")}, {"docs/é.md", bytes.Repeat([]byte("b"), 5000)}, {"empty", nil}}
	var plan, z storedZip
	var out []byte
	for _, f := range files {
		plan.reserve(f.name, int64(len(f.data)))
		out = append(out, z.begin(f.name, time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC))...)
		for piece := range slices.Chunk(f.data, 1000) {
			out = append(out, piece...)
			z.write(piece)
		}
		out = append(out, z.finish()...)
	}
	if plan.offset != z.offset || plan.offset != uint64(len(out)) || plan.centralLen != uint64(len(z.central)) || plan.entries != z.entries {
		t.Errorf("reserve planned %d bytes, a central directory of %d and %d entries; the archive has %d (counted %d), %d and %d",
			plan.offset, plan.centralLen, plan.entries, len(out), z.offset, len(z.central), z.entries)
	}
	out = append(out, z.End()...)
	zr, err := zip.NewReader(bytes.NewReader(out), int64(len(out)))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc) // checks the data descriptor's CRC-32
		if err != nil || f.Name != files[i].name || !bytes.Equal(b, files[i].data) || f.Flags&0x8 == 0 {
			t.Errorf("entry %d: %q, %d bytes, flags %#x, %v; want %q with a data descriptor", i, f.Name, len(b), f.Flags, err, files[i].name)
		}
	}

	// The largest file that fits an empty archive: every record and the end counted.
	name := "big.bin"
	largest := int64(MaxZipBytes - (localHeaderBytes + len(name) + dataDescriptorBytes + centralHeaderBytes + len(name) + endRecordBytes))
	var empty storedZip
	if !empty.fits(name, largest) || empty.fits(name, largest+1) {
		t.Errorf("fits(%d) = %v, fits(%d) = %v; want true, then false", largest, empty.fits(name, largest), largest+1, empty.fits(name, largest+1))
	}
	if (&storedZip{entries: MaxZipEntries}).fits("one-more", 0) {
		t.Errorf("fits allowed an entry past MaxZipEntries")
	}
}
