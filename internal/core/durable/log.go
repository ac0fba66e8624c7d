package durable

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/voicebox-go/voicebox/internal/shared/linelog"
)

// MaxCheckedLineBytes bounds the last line a Log parses when it looks for a torn tail: a longer
// line that ends with its newline is taken as whole without being parsed (linelog.WholeEnd).
const MaxCheckedLineBytes = linelog.MaxCheckedLineBytes

// Log is an append-only record in one file: one record a line, each ended by a newline. Every
// Log of one path in a process shares one lock, so appends never interleave and a repair never
// cuts a line being written. Two processes appending to one file are not supported.
type Log struct {
	path  string
	what  string
	valid func([]byte) bool
}

// NewLog returns the record at path (created 0600 on the first append). what names it in a
// refusal ("the extension ledger"); valid says whether a line, without its newline, is a whole
// record: nil means it must be JSON (json.Valid).
func NewLog(path, what string, valid func([]byte) bool) *Log {
	if valid == nil {
		valid = json.Valid
	}
	return &Log{path: path, what: what, valid: valid}
}

// Path returns the record's file.
func (l *Log) Path() string { return l.path }

var locks sync.Map // cleaned path -> *sync.Mutex

func (l *Log) lock() *sync.Mutex {
	m, _ := locks.LoadOrStore(filepath.Clean(l.path), &sync.Mutex{})
	return m.(*sync.Mutex)
}

// writeAt is f.WriteAt; a test puts a full disk in its place where it cannot mount one.
var writeAt = (*os.File).WriteAt

// ErrLineBreak is returned by Append for a line that holds a newline: it would read as two.
var ErrLineBreak = errors.New("durable: a record line cannot hold a newline")

// Append adds line and its newline at the end of the record. A torn tail is cut first (see
// Repair). With sync, the file (and its directory, when this append created it) is synced
// before Append returns, so nil means the line survives a crash. An append that fails part way
// is cut back at once, so the record ends with a whole line whatever happened; a full disk is a
// state-disk-full refusal.
func (l *Log) Append(line []byte, sync bool) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return ErrLineBreak
	}
	m := l.lock()
	m.Lock()
	defer m.Unlock()
	f, err := os.OpenFile(l.path, os.O_RDWR, 0)
	created := false
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		created = true
	}
	if err != nil {
		return classify(l.what, err)
	}
	defer f.Close()
	end, err := l.repair(f)
	if err != nil {
		return classify(l.what, err)
	}
	rec := append(line[:len(line):len(line)], '\n')
	_, err = writeAt(f, rec, end)
	if err == nil && sync {
		err = f.Sync()
	}
	if err != nil {
		l.cutBack(f, end)
		return classify(l.what, err)
	}
	if created && sync {
		return classify(l.what, SyncDir(filepath.Dir(l.path)))
	}
	return nil
}

// cutBack truncates f to end after a failed append, logging what it cut.
func (l *Log) cutBack(f *os.File, end int64) {
	st, err := f.Stat()
	if err != nil || st.Size() <= end {
		return
	}
	if err := f.Truncate(end); err != nil {
		log().Error("durable: a failed append could not be cut back; it is cut at the next append or read", "file", l.path, "error", err)
		return
	}
	f.Sync()
	log().Warn("durable: cut the part of a failed append from a state record", "file", l.path, "bytes", st.Size()-end)
}

// Repair cuts a torn tail from the record (a last line without its newline, or one valid
// refuses) back to the end of its last whole line, and logs one line naming the file and how
// many bytes were cut. It reports how many; a missing record has nothing to cut.
func (l *Log) Repair() (int64, error) {
	m := l.lock()
	m.Lock()
	defer m.Unlock()
	f, err := os.OpenFile(l.path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end, err := l.repair(f)
	return st.Size() - end, err
}

// repair cuts f's torn tail and returns where the next line goes.
func (l *Log) repair(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	end, err := linelog.WholeEnd(f, size, l.valid)
	if err != nil || end == size {
		return end, err
	}
	if err := f.Truncate(end); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	log().Warn("durable: cut a torn last line from a state record", "file", l.path, "bytes", size-end)
	return end, nil
}

// Read returns the record's whole lines, oldest first, each ended by its newline; a missing
// record reads as nothing. A torn tail is cut from the file as Repair does (and left out of
// what is returned even when the file cannot be changed).
func (l *Log) Read() ([]byte, error) {
	m := l.lock()
	m.Lock()
	defer m.Unlock()
	b, err := os.ReadFile(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	end := int64(len(linelog.Whole(b, l.valid)))
	if end < int64(len(b)) {
		if err := os.Truncate(l.path, end); err != nil {
			log().Error("durable: a torn last line could not be cut from a state record; it is left out", "file", l.path, "bytes", int64(len(b))-end, "error", err)
		} else {
			log().Warn("durable: cut a torn last line from a state record", "file", l.path, "bytes", int64(len(b))-end)
		}
	}
	return b[:end], nil
}
