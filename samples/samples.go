// Package samples holds the mini-apps that ship with Voicebox. The page puts each on its shelf once,
// so they are in the tray on first use; a sample the user deletes stays deleted.
//
// Each sample is one self-contained HTML file that registers its tools with window.webMcp (see
// public/mini-app-sdk.js), so it doubles as an example of how to write a mini-app.
//
// Each file is embedded as a string of its own rather than through an embed.FS: reading an
// embed.FS links the embed package and io/fs.ReadDir's sort into the page's wasm (about 5 KB of
// brotli, measured 2026-12-05) for three files. TestAllListsEveryFile keeps the list below and the
// directory the same.
package samples

import _ "embed" // for the go:embed strings below

//go:embed calculator.html
var calculator string

//go:embed scoreboard.html
var scoreboard string

//go:embed timer.html
var timer string

// Sample is one shipped mini-app.
type Sample struct {
	// Name is the file name without .html; it is what marks the sample as put on the shelf.
	Name string
	HTML []byte
}

// All returns the samples in file-name order, each HTML a copy of its own.
func All() []Sample {
	return []Sample{
		{Name: "calculator", HTML: []byte(calculator)},
		{Name: "scoreboard", HTML: []byte(scoreboard)},
		{Name: "timer", HTML: []byte(timer)},
	}
}
