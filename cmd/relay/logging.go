package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
)

// Log formats --log-format takes.
const (
	logAuto = "auto"
	logJSON = "json"
	logText = "text"
)

// newLogger returns the relay's logger on w: JSON lines, or text when format is "text", or,
// with "auto" (or ""), text when w is a terminal and JSON otherwise (a file, a pipe, a journal).
func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "", logAuto:
		if isTerminal(w) {
			return slog.New(slog.NewTextHandler(w, nil)), nil
		}
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	case logJSON:
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	case logText:
		return slog.New(slog.NewTextHandler(w, nil)), nil
	}
	return nil, fmt.Errorf("log format %q: use auto, json or text", format)
}

// isTerminal reports whether w is a character device (a terminal; /dev/null counts too, which
// does no harm).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
