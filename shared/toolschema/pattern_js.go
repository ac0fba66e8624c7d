//go:build js

package toolschema

import (
	"errors"

	"github.com/hack-pad/safejs"
)

// matchPattern reports whether s matches pattern as an ECMAScript regular expression (the
// Unicode flag set, unanchored, as JSON Schema's pattern is), through the JavaScript RegExp of
// the worker the package runs in: the engine of the page whose apps declare the patterns. A
// pattern RegExp refuses is an error.
func matchPattern(pattern, s string) (bool, error) {
	ctor, err := safejs.Global().Get("RegExp")
	if err != nil {
		return false, err
	}
	re, err := ctor.New(pattern, "u")
	if err != nil {
		return false, errors.New("RegExp refuses it")
	}
	ok, err := re.Call("test", s)
	if err != nil {
		return false, err
	}
	return ok.Bool()
}
