// Package catalogue holds the extension descriptors shipped with Voicebox, one JSON file each.
// They are offered, never admitted by default: each still goes through the gate and a human.
package catalogue

import "embed"

// Files holds the descriptors (*.json).
//
//go:embed *.json
var Files embed.FS
