// Package jsutil is the small set of JavaScript helpers the page's Go shares: Value, through which
// every JavaScript operation that can throw returns an error instead of panicking; awaiting a
// promise from a goroutine; moving bytes (IO: the worker's byte paths in one call across each,
// through public/engine-io.js); and naming the DOMException a browser call failed with.
// Value replaces github.com/hack-pad/safejs, whose panic catcher wrapped a panic with fmt.Errorf
// and so linked all of fmt into the page (about 50 KB of brotli, issue 38).
//
// # Wasm
//
// Only the GOOS=js build has the helpers; the native build is empty so `go vet ./...` sees the
// package.
package jsutil
