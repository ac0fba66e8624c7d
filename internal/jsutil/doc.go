// Package jsutil is the small set of JavaScript helpers the page's Go shares: awaiting a promise
// from a goroutine, moving bytes, and naming the DOMException a browser call failed with.
//
// # Wasm
//
// Only the GOOS=js build has the helpers; the native build is empty so `go vet ./...` sees the
// package.
package jsutil
