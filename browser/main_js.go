package main

import (
	"fmt"

	"github.com/voicebox-go/voicebox/internal/engine"
)

// build is the version string, set at link time by build.sh (-X main.build=...).
var build = "dev"

func main() {
	if err := engine.Run(build); err != nil {
		fmt.Println("voicebox worker:", err)
		return
	}
	select {} // the engine answers from JS callbacks and its goroutines
}
