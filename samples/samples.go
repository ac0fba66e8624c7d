// Package samples holds the mini-apps that ship with Voicebox. The page puts each on its shelf once,
// so they are in the tray on first use; a sample the user deletes stays deleted.
//
// Each sample is one self-contained HTML file that registers its tools with window.webMcp (see
// public/mini-app-sdk.js), so it doubles as an example of how to write a mini-app.
package samples

import (
	"embed"
	"io/fs"
	"strings"
)

//go:embed *.html
var files embed.FS

// Sample is one shipped mini-app.
type Sample struct {
	// Name is the file name without .html; it is what marks the sample as put on the shelf.
	Name string
	HTML []byte
}

// All returns the samples in file-name order.
func All() []Sample {
	entries, _ := fs.ReadDir(files, ".")
	var out []Sample
	for _, e := range entries {
		data, err := files.ReadFile(e.Name())
		if err != nil {
			continue
		}
		out = append(out, Sample{Name: strings.TrimSuffix(e.Name(), ".html"), HTML: data})
	}
	return out
}
