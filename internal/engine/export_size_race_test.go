//go:build !js && race

package engine

// bigFileBytes is the size of the file the bounded-memory test downloads: many chunks, fewer
// under the race detector (each copy of the file costs seconds there), still 4 times what one
// call may allocate.
const bigFileBytes = 16 << 20
