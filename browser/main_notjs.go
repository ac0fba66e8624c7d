//go:build !js

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "voicebox: the page's Go runs in a browser worker; build it with GOOS=js GOARCH=wasm (./build.sh build)")
	os.Exit(2)
}
