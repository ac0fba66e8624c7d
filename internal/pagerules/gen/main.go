// Command gen writes public/rules.js from the Go constants (see package pagerules).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/voicebox-go/voicebox/internal/pagerules"
)

func main() {
	out := flag.String("o", "", "the file to write")
	flag.Parse()
	b, err := pagerules.Module()
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pagerules/gen:", err)
		os.Exit(1)
	}
}
