// Command precompress writes NAME.br (brotli, quality 11) and NAME.gz (gzip, best compression)
// beside each file it is given, so the relay can serve the page's wasm precompressed.
//
// A sibling newer than its source is kept as it is. The two encodings of a file are written at
// the same time: brotli at quality 11 takes most of the time, on one core, and gzip fits beside it.
package main

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/andybalholm/brotli"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: precompress FILE...")
		os.Exit(2)
	}
	for _, name := range os.Args[1:] {
		if err := compress(name); err != nil {
			fmt.Fprintln(os.Stderr, "precompress:", err)
			os.Exit(1)
		}
	}
}

func compress(name string) error {
	src, err := os.Stat(name)
	if err != nil {
		return err
	}
	writers := []struct {
		suffix string
		wrap   func(io.Writer) io.WriteCloser
	}{
		{".br", func(w io.Writer) io.WriteCloser { return brotli.NewWriterLevel(w, brotli.BestCompression) }},
		{".gz", func(w io.Writer) io.WriteCloser { zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression); return zw }},
	}
	errs := make([]error, len(writers))
	var wg sync.WaitGroup
	for i, wr := range writers {
		out := name + wr.suffix
		if info, err := os.Stat(out); err == nil && info.ModTime().After(src.ModTime()) {
			continue
		}
		wg.Go(func() { errs[i] = write(name, out, wr.wrap) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// write compresses name into out through a temporary file renamed into place, so a reader never
// sees a partial sibling.
func write(name, out string, wrap func(io.Writer) io.WriteCloser) (err error) {
	in, err := os.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(out), ".precompress-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	zw := wrap(tmp)
	if _, err = io.Copy(zw, in); err != nil {
		return err
	}
	if err = zw.Close(); err != nil {
		return err
	}
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}
