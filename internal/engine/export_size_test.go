//go:build !js && !race

package engine

// bigFileBytes is the size of the file the bounded-memory test downloads: many chunks.
const bigFileBytes = 64 << 20
