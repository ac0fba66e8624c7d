//go:build !js

package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// BenchmarkFolderAppStart measures a folder app's start, from launch to its tool registered
// (the worker lists its files, the page reads each from the worker and copies it to the relay,
// a new bridge loads the app from the bundle), against the same app as one file (the app's code
// inline, no bundle). The folder holds 16 modules of 16 KiB; the app imports all of them.
func BenchmarkFolderAppStart(b *testing.B) {
	relay := harness.StartRelay(b)
	tab := harness.NewTab(b)
	tab.Quiet()
	openWorkspace(b, tab, relay.URL)
	const modules = 16
	pad := strings.Repeat("/* padding */ ", 16<<10/14)
	harness.Eval[bool](tab, `voicebox.must('files.mkdir', {path: 'bench'}).then(() => true)`)
	var imports, inline strings.Builder
	for i := range modules {
		body := fmt.Sprintf("export const v%d = %d;\n%s", i, i, pad)
		writeFile(b, tab, fmt.Sprintf("bench/m%d.mjs", i), body)
		fmt.Fprintf(&imports, "import { v%d } from './m%d.mjs';\n", i, i)
		fmt.Fprintf(&inline, "const v%d = %d;\n%s\n", i, i, pad)
	}
	tool := "\nawait document.modelContext.registerTool({ name: 'sum', description: 'the sum', execute: () => 1 });\n"
	writeFile(b, tab, "bench/index.html", "<!doctype html><script type=module>\n"+imports.String()+tool+"</script>")
	writeFile(b, tab, "single.html", "<!doctype html><script type=module>\n"+inline.String()+tool+"</script>")
	start := func(path string) float64 {
		return harness.Eval[float64](tab, fmt.Sprintf(`(async () => {
			const t0 = performance.now();
			const { appId } = await voicebox.miniApps.launch({path: %q});
			while (!voicebox.miniApps.tools(appId).includes('sum')) await new Promise((r) => requestAnimationFrame(r));
			const ms = performance.now() - t0;
			voicebox.miniApps.close(appId);
			return ms;
		})()`, path))
	}
	var folder, single []float64
	for b.Loop() {
		folder = append(folder, start("bench/index.html"))
		single = append(single, start("single.html"))
	}
	b.StopTimer()
	harness.ReportPercentiles(b, folder, "folder-ms")
	harness.ReportPercentiles(b, single, "single-ms")
}

// writeFile writes body to path in the page's workspace.
func writeFile(b *testing.B, tab *harness.Tab, path, body string) {
	b.Helper()
	harness.Eval[bool](tab, fmt.Sprintf(`voicebox.must('files.write', {path: %q, content: %s}).then(() => true)`, path, jsString(body)))
}

func jsString(s string) string {
	q := strings.NewReplacer(`\`, `\\`, "`", "\\`", "${", "\\${").Replace(s)
	return "`" + q + "`"
}
