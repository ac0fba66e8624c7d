//go:build !js

package tests

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// benchIters is how many operations each side times per case (8 MiB cases do fewer on the JS
// side, where one takes tens of milliseconds).
const benchIters = 50

// mainThreadOPFS times, in page JavaScript on the main thread, the operations the worker's Go
// benchmarks do: a read of a file through a cached handle (getFile + arrayBuffer) and an atomic
// replace through createWritable, for 4 KiB and 8 MiB. It resolves {case: [ms...]}.
const mainThreadOPFS = `(async (iters) => {
	const root = await navigator.storage.getDirectory();
	const dir = await root.getDirectoryHandle('bench-js', {create: true});
	const out = {};
	for (const [name, n] of [['4KiB', 4096], ['8MiB', 8 << 20]]) {
		const data = new Uint8Array(n).fill(114);
		const k = n > 65536 ? Math.min(iters, 20) : iters;
		const rh = await dir.getFileHandle('read-' + name, {create: true});
		let w = await rh.createWritable(); await w.write(data); await w.close();
		const reads = [];
		for (let i = 0; i < k; i++) {
			const t = performance.now();
			const b = await (await rh.getFile()).arrayBuffer();
			if (b.byteLength !== n) throw new Error('short read');
			reads.push(performance.now() - t);
		}
		const wh = await dir.getFileHandle('write-' + name, {create: true});
		const writes = [];
		for (let i = 0; i < k; i++) {
			const t = performance.now();
			w = await wh.createWritable(); await w.write(data); await w.close();
			writes.push(performance.now() - t);
		}
		out['Read/' + name] = reads;
		out['Write/' + name] = writes;
	}
	await root.removeEntry('bench-js', {recursive: true});
	return out;
})(%d)`

var benchLine = regexp.MustCompile(`^BenchmarkWorker(\w+/\w+)\S*\s+\d+\s+.*?([\d.]+) us-p50\s+([\d.]+) us-p99`)

// BenchmarkOPFSWorkerVersusMainThread runs the page's Go OPFS operations in a dedicated worker
// and the same operations in page JavaScript on the main thread, in one browser and one run, and
// reports each side's p50 and the ratio worker/main (below 1: the worker is faster).
func BenchmarkOPFSWorkerVersusMainThread(b *testing.B) {
	runner := harness.NewWorkerRunner(b, harness.BuildWorkerTest(b, "./internal/opfs"))
	runner.Tab.Quiet()
	for b.Loop() {
		js := harness.Eval[map[string][]float64](runner.Tab, fmt.Sprintf(mainThreadOPFS, benchIters))
		res := runner.Run("-test.run=^$", "-test.bench=Worker", fmt.Sprintf("-test.benchtime=%dx", benchIters))
		if res.Exit != 0 {
			b.Fatalf("the worker benchmarks failed:\n%s", res.Output())
		}
		found := 0
		for _, l := range res.Lines {
			m := benchLine.FindStringSubmatch(l.Text)
			if m == nil {
				continue
			}
			found++
			goP50, _ := strconv.ParseFloat(m[2], 64)
			jsMs := slices.Sorted(slices.Values(js[m[1]]))
			if len(jsMs) == 0 {
				b.Fatalf("no main-thread figure for %s", m[1])
			}
			jsP50 := jsMs[len(jsMs)/2] * 1000
			b.Logf("%-12s worker Go p50 %9.1f us (p99 %s us)   main-thread JS p50 %9.1f us (p99 %.1f us)   ratio %.3f",
				m[1], goP50, m[3], jsP50, jsMs[min(len(jsMs)-1, len(jsMs)*99/100)]*1000, goP50/jsP50)
			b.ReportMetric(goP50/jsP50, m[1]+"-ratio")
		}
		if found != 4 {
			b.Fatalf("read %d worker benchmark lines, want 4:\n%s", found, res.Output())
		}
	}
}
