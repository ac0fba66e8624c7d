package main

import (
	"github.com/voicebox-go/voicebox/internal/engine"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
)

// build is the version string, set at link time by build.sh (-X main.build=...).
var build = "dev"

func main() {
	if err := engine.Run(build); err != nil {
		print(textf.Sprintf("voicebox worker: %v\n", err))
		return
	}
	select {} // the engine answers from JS callbacks and its goroutines
}
