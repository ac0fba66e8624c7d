// Package linelog holds the torn-line rule of the project's append-only records, one record a
// line each ended by a newline: the relay's state records (internal/core/durable.Log) and the
// page's audit log (internal/shared/executor.RootAudit). An append cut short (a crash, a full
// disk, a failed write part way) leaves a last line without its newline; that line is no record,
// and is cut before the next record is added, so every record starts on a line of its own.
package linelog

import (
	"bytes"
	"io"
)

// MaxCheckedLineBytes bounds the last line the rule parses when it looks for a torn tail: a
// longer line that ends with its newline is taken as whole without being parsed.
const MaxCheckedLineBytes = 1 << 20

// tailChunk is how much of a record's end WholeEnd reads at a time, looking back for a newline.
const tailChunk = 4096

// Whole returns the whole lines of b: all of b when its last line ends with a newline and valid
// takes it (without its newline; or it is longer than MaxCheckedLineBytes), else b up to the
// start of that last line. A nil valid takes every line that ends with its newline. This is the
// rule; WholeEnd applies it to a file without reading more than its last line.
func Whole(b []byte, valid func([]byte) bool) []byte {
	n := len(b)
	if n == 0 || b[n-1] != '\n' {
		return b[:bytes.LastIndexByte(b, '\n')+1]
	}
	if valid == nil {
		return b
	}
	start := bytes.LastIndexByte(b[:n-1], '\n') + 1
	if n-1-start > MaxCheckedLineBytes || valid(b[start:n-1]) {
		return b
	}
	return b[:start]
}

// WholeEnd returns where the whole lines of r (size bytes) end, by Whole's rule: it reads back
// to the start of the last line and gives Whole that line alone (a line that ends with its
// newline and is longer than MaxCheckedLineBytes, or any such line with a nil valid, is not
// read).
func WholeEnd(r io.ReaderAt, size int64, valid func([]byte) bool) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	var last [1]byte
	if _, err := r.ReadAt(last[:], size-1); err != nil {
		return 0, err
	}
	ended := last[0] == '\n'
	if ended && valid == nil {
		return size, nil
	}
	lineEnd := size
	if ended {
		lineEnd--
	}
	start, err := lineStart(r, lineEnd)
	if err != nil {
		return 0, err
	}
	if !ended {
		return start, nil // the whole tail is the torn line: nothing of it needs reading
	}
	if lineEnd-start > MaxCheckedLineBytes {
		return size, nil
	}
	line := make([]byte, size-start)
	if _, err := r.ReadAt(line, start); err != nil {
		return 0, err
	}
	return start + int64(len(Whole(line, valid))), nil
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
