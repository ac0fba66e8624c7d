// Command gen writes public/worker-methods.js from the worker's method table (see
// engine.MethodsModule).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/voicebox-go/voicebox/internal/engine"
)

func main() {
	out := flag.String("o", "", "the file to write")
	flag.Parse()
	b, err := engine.MethodsModule()
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "engine/gen:", err)
		os.Exit(1)
	}
}
