// Command browser is the page's Go: compiled with GOOS=js GOARCH=wasm to public/voicebox.wasm and
// run in the page's dedicated worker (public/worker.js), never on the main thread. It only starts
// the engine (package internal/engine, whose doc lists the messages JavaScript sends and receives)
// with the build's version string.
//
// The same code is built natively only so that `go vet ./...` and the import guard cover it; the
// native binary refuses to run.
package main
