//go:build js

package names

import "github.com/hack-pad/safejs"

// nfc returns s in Unicode Normalization Form C, and whether that differs from s, from the
// browser's String.prototype.normalize: x/text's tables would add about 45 KB (brotli) to the
// page's wasm for what every browser already has (the browser's Unicode version may be newer
// than x/text's; NFC is stable for every character both know). A browser that cannot answer
// (none that runs WebAssembly) leaves s as it is.
func nfc(s string) (string, bool) {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < 0x80
	}
	if ascii {
		return s, false // ASCII is its own NFC, and most names are ASCII
	}
	normalize, err := stringNormalize()
	if err != nil {
		return s, false
	}
	// A method cannot be called on a primitive string through syscall/js (Reflect.get refuses
	// one), so the prototype's normalize is applied to it.
	n, err := normalize.Call("call", s, "NFC")
	if err != nil {
		return s, false
	}
	out, err := n.String()
	if err != nil {
		return s, false
	}
	return out, out != s
}

// stringNormalize returns String.prototype.normalize.
func stringNormalize() (safejs.Value, error) {
	str, err := safejs.Global().Get("String")
	if err != nil {
		return safejs.Value{}, err
	}
	proto, err := str.Get("prototype")
	if err != nil {
		return safejs.Value{}, err
	}
	return proto.Get("normalize")
}
