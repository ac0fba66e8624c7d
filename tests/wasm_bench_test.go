//go:build !js

package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/wasmabi/wasmabitest"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// BenchmarkShelfCall measures a call of the WASM shelf's tools from the host's side, POST
// /api/extensions/call to its answer, with modules run in the relay (wazero) and in the page (a
// Worker of the page holding an OPFS workspace, the module and inputs carried over /channel):
// hash is sha256 of 1 KiB (buffer-abi/1), diff a line diff of two 64 KiB texts
// (buffer-abi/diff). It reports each call's p50 and p99.
func BenchmarkShelfCall(b *testing.B) {
	shelf := shelfIn(b)
	ta, tb := wasmabitest.BigTexts()
	hashArgs, _ := json.Marshal(map[string]string{"input": strings.Repeat("voicebox ", 114)[:1024]})
	diffArgs, _ := json.Marshal(map[string]string{"a": string(ta), "b": string(tb)})
	client := &http.Client{Timeout: time.Minute}
	for _, place := range []string{"relay", "page"} {
		relay := harness.StartRelay(b, "VOICEBOX_WASM_SHELF_DIR="+shelf, "VOICEBOX_WASM_PLACEMENT="+place)
		if place == "page" {
			tab := harness.NewTab(b)
			tab.Quiet()
			tab.Navigate(relay.URL)
			harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
		}
		token := relay.HostToken(b)
		for _, c := range []struct {
			name, id string
			args     []byte
		}{{"hash/1KiB", "hash", hashArgs}, {"diff/2x64KiB", "diff", diffArgs}} {
			body, _ := json.Marshal(map[string]any{"extension": "wasm-shelf-" + c.id, "tool": c.id, "args": json.RawMessage(c.args)})
			b.Run(place+"/"+c.name, func(b *testing.B) {
				var ms []float64
				for b.Loop() {
					req, _ := http.NewRequest("POST", relay.URL+"/api/extensions/call", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("X-Voicebox-Host-Token", token)
					start := time.Now()
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					out, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					ms = append(ms, float64(time.Since(start).Microseconds())/1000)
					if !bytes.Contains(out, []byte(`"ok":true`)) {
						b.Fatalf("%s in the %s: %s", c.id, place, out)
					}
				}
				b.StopTimer()
				harness.ReportPercentiles(b, ms, "ms")
			})
		}
	}
}
