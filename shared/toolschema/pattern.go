//go:build !js

package toolschema

import "regexp"

// matchPattern reports whether s matches pattern. In the page's worker (pattern_js.go) that is
// the JavaScript RegExp's answer, ECMAScript's semantics; natively, where no mini-app registers
// tools and only the package's tests run it, Go's regexp answers, which agrees on the patterns
// both take and refuses lookaround and backreferences.
func matchPattern(pattern, s string) (bool, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return false, err
	}
	return re.MatchString(s), nil
}
