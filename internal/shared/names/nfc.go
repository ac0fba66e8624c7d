//go:build !js

package names

import "golang.org/x/text/unicode/norm"

// nfc returns s in Unicode Normalization Form C, and whether that differs from s. The relay
// uses x/text's tables; the page asks the browser (nfc_js.go), which carries its own.
func nfc(s string) (string, bool) {
	if norm.NFC.IsNormalString(s) {
		return s, false
	}
	return norm.NFC.String(s), true
}
