package engine

import (
	"maps"
	"slices"
)

// Methods returns the names of every method the worker answers from the page's main thread,
// sorted: the worker's doors, which the hostile suite checks each have a case.
func (a *Engine) Methods() []string { return slices.Sorted(maps.Keys(a.methods)) }
