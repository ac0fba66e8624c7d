// Package catalogue holds the extension descriptors shipped with Voicebox, one JSON file each.
// They are offered, never admitted by default: each still goes through the gate and a human.
package catalogue

import "embed"

// Files holds the descriptors (*.json) and the WASM modules they name (wasm/*.wasm, each built
// from the .wat source beside it), and a sample WASM shelf (shelf/: its manifest.json and
// modules, built from their .wat sources): the original's hash and diff tools.
//
//go:embed *.json wasm/*.wasm shelf/manifest.json shelf/*.wasm
var Files embed.FS
