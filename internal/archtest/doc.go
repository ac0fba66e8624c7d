// Package archtest holds the tests that keep the house's shape: the core imports no door, no door
// imports another, every door is a core.Door but the exceptions it names (the fleet),
// docs/architecture.md's picture of the imports is the import graph, its line counts are current,
// and the public surface (the exported names outside internal/) does not grow unnoticed.
package archtest
