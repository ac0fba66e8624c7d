//go:build js

package names

import "syscall/js"

// nfc returns s in Unicode Normalization Form C, and whether that differs from s, from the
// browser's String.prototype.normalize: x/text's tables would add about 45 KB (brotli) to the
// page's wasm for what every browser already has (the browser's Unicode version may be newer
// than x/text's; NFC is stable for every character both know). A browser that cannot answer
// (none that runs WebAssembly) leaves s as it is: a throw is recovered here, since the shared
// rules import none of the page's packages (jsutil.Value among them).
func nfc(s string) (out string, changed bool) {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < 0x80
	}
	if ascii {
		return s, false // ASCII is its own NFC, and most names are ASCII
	}
	defer func() {
		if recover() != nil {
			out, changed = s, false
		}
	}()
	// A method cannot be called on a primitive string through syscall/js (Reflect.get refuses
	// one), so the prototype's normalize is applied to it.
	normalize := js.Global().Get("String").Get("prototype").Get("normalize")
	n := normalize.Call("call", s, "NFC")
	if n.Type() != js.TypeString {
		return s, false
	}
	out = n.String()
	return out, out != s
}
