// Package linelog holds the torn-line rule of the project's append-only records, one record a line
// each ended by a newline: the relay's state records (internal/core/durable.Log) and the page's
// audit log (internal/shared/executor.RootAudit). An append cut short (a crash, a full disk, a
// failed write part way) leaves a last line without its newline; that line is no record, and is
// cut before the next record is added, so every record starts on a line of its own.
package linelog

import (
	"bytes"
	"io"
)

// MaxCheckedLineBytes bounds the last line WholeEnd parses when it looks for a torn tail: a
// longer line that ends with its newline is taken as whole without being parsed.
const MaxCheckedLineBytes = 1 << 20

// tailChunk is how much of a record's end is read at a time, looking back for a newline.
const tailChunk = 4096

// WholeEnd returns where the whole lines of r (size bytes) end: size when its last line ends with
// a newline and valid takes it (without its newline; or it is longer than MaxCheckedLineBytes),
// else the start of that last line. A nil valid takes every line that ends with its newline.
func WholeEnd(r io.ReaderAt, size int64, valid func([]byte) bool) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	var last [1]byte
	if _, err := r.ReadAt(last[:], size-1); err != nil {
		return 0, err
	}
	if last[0] != '\n' {
		return lineStart(r, size)
	}
	if valid == nil {
		return size, nil
	}
	start, err := lineStart(r, size-1)
	if err != nil {
		return 0, err
	}
	n := size - 1 - start
	if n > MaxCheckedLineBytes {
		return size, nil
	}
	line := make([]byte, n)
	if _, err := r.ReadAt(line, start); err != nil {
		return 0, err
	}
	if valid(line) {
		return size, nil
	}
	return start, nil
}

// Whole returns the whole lines of b (see WholeEnd): b up to its last whole line's newline.
func Whole(b []byte, valid func([]byte) bool) []byte {
	end, _ := WholeEnd(bytes.NewReader(b), int64(len(b)), valid) // a bytes.Reader does not fail
	return b[:end]
}

// lineStart returns the offset just after the last newline before end, or 0 when there is none.
func lineStart(r io.ReaderAt, end int64) (int64, error) {
	buf := make([]byte, tailChunk)
	for end > 0 {
		from := max(end-tailChunk, 0)
		chunk := buf[:end-from]
		if _, err := r.ReadAt(chunk, from); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			return from + int64(i) + 1, nil
		}
		end = from
	}
	return 0, nil
}
