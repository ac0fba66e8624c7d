// Package public holds the page's files, embedded into the relay so that one built binary serves
// everything with nothing beside it (relay serve without --public).
//
// What is embedded is what this directory holds when the relay is compiled: the committed
// HTML, JavaScript, CSS and icon, plus the build output ./build.sh build writes here first
// (voicebox.wasm and its .br and .gz copies, wasm_exec.js). A relay compiled before that build
// (a plain go build on a fresh checkout) has the page without its engine: HasEngine says so, and
// the relay warns at start.
package public

import (
	"embed"
	"io/fs"
)

// files is everything in this directory, this Go file and any dot file among them (a pattern's
// match takes dot files too; the relay serves only the file types it knows, never .go). So
// nothing may make a temporary file here: ./build.sh makes the wasm elsewhere and moves it in.
//
//go:embed *
var files embed.FS

// Engine is the page's compiled Go, the file HasEngine looks for.
const Engine = "voicebox.wasm"

// Files returns the embedded page.
func Files() fs.FS { return files }

// HasEngine reports whether fsys holds the page's compiled Go (Engine) and the loader it needs.
func HasEngine(fsys fs.FS) bool {
	for _, name := range []string{Engine, "wasm_exec.js"} {
		if info, err := fs.Stat(fsys, name); err != nil || !info.Mode().IsRegular() {
			return false
		}
	}
	return true
}
