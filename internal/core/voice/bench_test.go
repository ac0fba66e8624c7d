package voice_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/live"
	"github.com/voicebox-go/voicebox/internal/core/live/openai"
	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/core/voice"
)

// The live benchmarks put the relay's /live door between page clients and the vendor fixture,
// all over loopback WebSockets. A page frame is 20 ms of 24 kHz PCM16 (960 bytes) whose first 8
// bytes carry its send time; the fixture reads it back on arrival. "Added" latency is the
// through-the-relay figure minus the same frames sent by the clients straight to the fixture.
//
//	go test -run '^$' -bench Live -benchtime 250x ./internal/core/voice/

const frameBytes = 960

var epoch = time.Now()

func stamp(frame []byte) { binary.LittleEndian.PutUint64(frame, uint64(time.Since(epoch))) }

func sinceStamp(pcm []byte) time.Duration {
	return time.Since(epoch) - time.Duration(binary.LittleEndian.Uint64(pcm))
}

// latencies collects one duration per frame.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
	n  atomic.Int64
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
	l.n.Add(1)
}

// reset forgets the durations collected so far (the count goes on).
func (l *latencies) reset() {
	l.mu.Lock()
	l.d = l.d[:0]
	l.mu.Unlock()
}

func (l *latencies) percentile(p float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Clone(l.d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// benchRelay starts the /live door with OpenAI at base, and returns its URL and handler.
func benchRelay(tb testing.TB, base string, sessions int) (string, *voice.Handler) {
	log := slog.New(slog.DiscardHandler)
	srv, err := server.New(server.Config{Public: tb.TempDir(), Log: log})
	if err != nil {
		tb.Fatal(err)
	}
	reg := voice.Providers()
	set := voice.NewSettings(reg, nil)
	set.Set(live.Choice{Provider: openai.Name})
	keys := voice.NewKeys(nil, func(string) string { return vendorfixture.DefaultKey }, voice.KeyEnvs(reg))
	h := voice.New(voice.Options{Providers: reg, Settings: set, Keys: keys, BaseURLs: map[string]string{openai.Name: base}, PageOrigin: srv.PageOrigin,
		MaxSockets: sessions + 1, Log: log})
	voice.Register(srv, h, nil)
	ts := httptest.NewServer(srv)
	tb.Cleanup(func() { h.Close(); ts.Close() })
	return "ws" + strings.TrimPrefix(ts.URL, "http") + "/live", h
}

// client is one page on /live, or one direct vendor client for the baseline.
type client struct {
	ws *websocket.Conn
}

// dialPageClient opens /live and waits for the session to be ready.
func dialPageClient(tb testing.TB, url string) *client {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	origin := "http" + strings.TrimSuffix(strings.TrimPrefix(url, "ws"), "/live")
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
	if err != nil {
		tb.Fatalf("dial /live: %v", err)
	}
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			tb.Fatalf("/live before ready: %v", err)
		}
		if strings.Contains(string(b), `"state":"ready"`) {
			break
		}
		if strings.Contains(string(b), `"refused"`) {
			tb.Fatalf("/live refused: %s", b)
		}
	}
	go func() { // keep reading so control frames are served
		for {
			if _, _, err := ws.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	return &client{ws: ws}
}

// dialDirect opens the vendor fixture itself, as the relay would, for the baseline.
func dialDirect(tb testing.TB, fx *vendorfixture.Fixture) *client {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, fx.OpenAIURL()+"?model=gpt-realtime", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + fx.Key()}}})
	if err != nil {
		tb.Fatalf("dial the fixture: %v", err)
	}
	ws.Write(ctx, websocket.MessageText, openai.SessionUpdate("gpt-realtime", "alloy", "", nil))
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			tb.Fatalf("fixture before ready: %v", err)
		}
		if strings.Contains(string(b), `"session.updated"`) {
			break
		}
	}
	go func() {
		for {
			if _, _, err := ws.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	return &client{ws: ws}
}

// sendPage sends one frame as the page does: binary PCM16.
func (c *client) sendPage(frame []byte) error {
	return c.ws.Write(context.Background(), websocket.MessageBinary, frame)
}

// sendDirect sends one frame as the relay would: OpenAI's base64 append event.
func (c *client) sendDirect(frame []byte) error {
	b := append([]byte(`{"type":"input_audio_buffer.append","audio":"`), base64.StdEncoding.EncodeToString(frame)...)
	return c.ws.Write(context.Background(), websocket.MessageText, append(b, `"}`...))
}

// run sends frames from every client, paced every 20 ms (real time) or back to back, until the
// fixture has them all.
func run(tb testing.TB, clients []*client, perClient int, paced bool, direct bool, got *latencies) time.Duration {
	want := got.n.Load() + int64(len(clients)*perClient)
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			frame := make([]byte, frameBytes)
			var tick *time.Ticker
			if paced {
				// Sessions start at different moments, as people do: spread over one frame.
				time.Sleep(time.Duration(i) * 20 * time.Millisecond / time.Duration(len(clients)))
				tick = time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
			}
			for range perClient {
				if paced {
					<-tick.C
				}
				stamp(frame)
				send := c.sendPage
				if direct {
					send = c.sendDirect
				}
				if err := send(frame); err != nil {
					tb.Errorf("send: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(time.Minute)
	for got.n.Load() < want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got.n.Load() < want {
		tb.Fatalf("the fixture got %d of %d frames", got.n.Load(), want)
	}
	return time.Since(start)
}

func fixtureFor(tb testing.TB, got *latencies) *vendorfixture.Fixture {
	return vendorfixture.Start(tb, vendorfixture.Options{Script: vendorfixture.Script{
		OnAudio: func(c *vendorfixture.Conn, pcm []byte) { got.add(sinceStamp(pcm)) },
	}})
}

// The peers (page clients, the fixtures, the direct baseline) run in a child process, the test
// binary itself running TestLivePeerProcess, so the benchmark's process holds only the relay: its
// heap, its goroutines and its garbage collector measure the relay alone. Both processes share
// the machine's cores.
const (
	peerEnv       = "VOICEBOX_LIVE_BENCH_PEERS"  // sessions
	peerModeEnv   = "VOICEBOX_LIVE_BENCH_MODE"   // idle, latency or throughput
	peerFramesEnv = "VOICEBOX_LIVE_BENCH_FRAMES" // frames per session
)

// peer is a running child process of peers.
type peer struct {
	tb    testing.TB
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	relay *voice.Handler
	// fixture is the URL of the child's vendor fixture (OpenAI's protocol).
	fixture string
}

// startPeers starts the child process, builds the relay on the fixture it announces, and hands
// it the relay's address: the child then opens its sessions.
func startPeers(tb testing.TB, mode string, sessions, frames int) *peer {
	p := spawnPeers(tb, mode, sessions, frames)
	url, h := benchRelay(tb, p.fixture, sessions)
	p.relay = h
	p.say(url)
	return p
}

// spawnPeers starts the child process and reads the fixture's URL it announces.
func spawnPeers(tb testing.TB, mode string, sessions, frames int) *peer {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLivePeerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), peerEnv+"="+strconv.Itoa(sessions), peerModeEnv+"="+mode, peerFramesEnv+"="+strconv.Itoa(frames))
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &peer{tb: tb, cmd: cmd, in: in, out: bufio.NewScanner(out)}
	tb.Cleanup(func() { in.Close(); cmd.Wait() })
	p.fixture = strings.TrimSpace(p.line("FIXTURE "))
	return p
}

// say writes one line to the child.
func (p *peer) say(line string) {
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.tb.Fatalf("the peer process: %v", err)
	}
}

// line waits for the child's line that starts with prefix and returns the rest.
func (p *peer) line(prefix string) string {
	var said []string
	for p.out.Scan() {
		if s, ok := strings.CutPrefix(p.out.Text(), prefix); ok {
			return s
		}
		said = append(said, p.out.Text())
	}
	p.tb.Fatalf("the peer process said no %q but %q", prefix, said)
	return ""
}

// BenchmarkLiveAudioLatency: 20 ms frames paced in real time from 1 and 100 sessions through the
// relay, and at the same time as many clients sending the same frames straight to a second
// fixture; b.N frames per session. Reports p50/p99 of both and their difference.
func BenchmarkLiveAudioLatency(b *testing.B) {
	for _, sessions := range []int{1, 100} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			p := startPeers(b, "latency", sessions, b.N)
			var r [4]float64
			if _, err := fmt.Sscan(p.line("RESULT "), &r[0], &r[1], &r[2], &r[3]); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(r[0], "relay-p50-us")
			b.ReportMetric(r[1], "relay-p99-us")
			b.ReportMetric(r[2], "direct-p50-us")
			b.ReportMetric(r[3], "direct-p99-us")
			b.ReportMetric(r[0]-r[2], "added-p50-us")
			b.ReportMetric(r[1]-r[3], "added-p99-us")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkLiveAudioThroughput: frames sent back to back from 1 and 100 sessions through the
// relay; b.N frames in all. Reports frames forwarded per second.
func BenchmarkLiveAudioThroughput(b *testing.B) {
	for _, sessions := range []int{1, 100} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			p := startPeers(b, "throughput", sessions, max(1, b.N/sessions))
			var fps float64
			if _, err := fmt.Sscan(p.line("RESULT "), &fps); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(fps, "frames/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkLiveIdleSessionMemory: the relay's heap and stacks per ready, idle session (100 of
// them), best run alone in a fresh process (BENCHMARKS.md). One measurement whatever b.N is: it is
// a size, not a speed. The benchmark framework calls a fast benchmark again with a larger b.N (as
// `./build.sh bench` does, without -benchtime 1x); a second measurement in the same process would
// find the relay's one-time costs paid and its pools warm, so every call reports the first one.
func BenchmarkLiveIdleSessionMemory(b *testing.B) {
	idleMemoryOnce.Do(func() { idleMemory = measureIdleSessions(b) })
	for _, m := range idleMemory {
		b.ReportMetric(m.value, m.unit)
	}
	b.ReportMetric(0, "ns/op")
}

// metric is one figure a benchmark reports.
type metric struct {
	value float64
	unit  string
}

var (
	idleMemoryOnce sync.Once
	idleMemory     []metric // the process's one measurement of BenchmarkLiveIdleSessionMemory
)

// measureIdleSessions opens 100 idle sessions through a relay in this process and returns what
// each costs it.
func measureIdleSessions(b *testing.B) []metric {
	const sessions = 100
	if os.Getenv("VOICEBOX_HEAPPROFILE") != "" {
		runtime.MemProfileRate = 1 // every allocation, so the profile adds up per session
	}
	runtime.GC()
	heapBefore, stackBefore := heapAndStacks()
	goBefore := runtime.NumGoroutine()
	p := startPeers(b, "idle", sessions, 0)
	p.line("READY")
	for p.relay.Open() < sessions {
		time.Sleep(time.Millisecond)
	}
	heapAfter, stackAfter := heapAndStacks()
	if name := os.Getenv("VOICEBOX_HEAPPROFILE"); name != "" {
		if f, err := os.Create(name); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	perSession := func(n int64) float64 { return float64(n) / sessions / 1024 }
	return []metric{
		{perSession(heapAfter + stackAfter - heapBefore - stackBefore), "KiB/session"},
		{perSession(heapAfter - heapBefore), "heap-KiB/session"},
		{perSession(stackAfter - stackBefore), "stack-KiB/session"},
		{float64(runtime.NumGoroutine()-goBefore) / sessions, "goroutines/session"},
	}
}

// heapAndStacks returns the bytes of heap spans and goroutine stacks in use after two collections.
func heapAndStacks() (heap, stacks int64) {
	var m runtime.MemStats
	for range 2 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse), int64(m.StackInuse)
}

// TestLivePeerProcess is not a test: the live benchmarks run it in a child process (see
// startPeers). Without peerEnv it returns at once. It prints the fixture's URL, reads the relay's
// /live URL, opens the sessions, runs its mode and prints RESULT (READY for idle), and ends when
// its input closes.
func TestLivePeerProcess(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(peerEnv))
	if n <= 0 {
		return
	}
	frames, _ := strconv.Atoi(os.Getenv(peerFramesEnv))
	viaRelay := &latencies{}
	fx := fixtureFor(t, viaRelay)
	fmt.Printf("FIXTURE %s\n", fx.OpenAIURL())
	in := bufio.NewScanner(os.Stdin)
	if os.Getenv(peerModeEnv) == "capacity" {
		capacitySteps(t, in, fx, viaRelay)
		return
	}
	in.Scan()
	url := strings.TrimSpace(in.Text())
	pages := make([]*client, n)
	for i := range pages {
		pages[i] = dialPageClient(t, url)
	}
	switch os.Getenv(peerModeEnv) {
	case "idle":
		fmt.Printf("READY\n")
	case "latency":
		direct := &latencies{}
		fxDirect := fixtureFor(t, direct)
		directs := make([]*client, n)
		for i := range directs {
			directs[i] = dialDirect(t, fxDirect)
		}
		// Both at once, so the relay's frames and the baseline's meet the same load.
		var both sync.WaitGroup
		both.Go(func() { run(t, pages, frames, true, false, viaRelay) })
		both.Go(func() { run(t, directs, frames, true, true, direct) })
		both.Wait()
		us := func(d time.Duration) float64 { return float64(d.Microseconds()) }
		fmt.Printf("RESULT %v %v %v %v\n", us(viaRelay.percentile(0.5)), us(viaRelay.percentile(0.99)), us(direct.percentile(0.5)), us(direct.percentile(0.99)))
	case "throughput":
		elapsed := run(t, pages, frames, false, false, viaRelay)
		fmt.Printf("RESULT %v\n", float64(frames*n)/elapsed.Seconds())
	}
	in.Scan() // until the benchmark closes its end
}
