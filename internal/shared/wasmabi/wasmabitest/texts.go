// Package wasmabitest holds what the tests and benchmarks of the WASM modules share.
package wasmabitest

import (
	"bytes"
	"fmt"
	"math/rand/v2"

	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
)

// BigTexts are two texts of at most 64 KiB (wasmabi.DiffMaxInputBytes) of about 1,100 lines
// each, differing in one line in ten or so: the inputs of the diff tests and benchmarks.
func BigTexts() (a, b []byte) {
	rng := rand.New(rand.NewPCG(7, 8))
	var sa, sb bytes.Buffer
	for i := 0; ; i++ {
		line := fmt.Sprintf("line %05d of a text about the shelf and its tools, %d\n", i, rng.IntN(1000))
		if sa.Len()+len(line) > wasmabi.DiffMaxInputBytes || sb.Len()+len(line)+12 > wasmabi.DiffMaxInputBytes {
			break
		}
		switch rng.IntN(10) {
		case 0:
			sa.WriteString(line)
		case 1:
			sb.WriteString(line)
		case 2:
			sa.WriteString(line)
			sb.WriteString("changed: " + line)
		default:
			sa.WriteString(line)
			sb.WriteString(line)
		}
	}
	return sa.Bytes(), sb.Bytes()
}
