//go:build js

package strictjson

// errNotStruct is why the page's Decode refuses a type that is not a Struct.
var errNotStruct = errorString("strictjson: the page decodes only a Struct (a type that lists its fields)")

// decodeReflect refuses v: the page's wasm carries no encoding/json decoder.
func decodeReflect(data []byte, v any) error {
	return &Error{Kind: Invalid, Err: errNotStruct}
}
