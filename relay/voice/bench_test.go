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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"voicebox/relay/live"
	"voicebox/relay/live/openai"
	"voicebox/relay/server"
	"voicebox/relay/voice"
	"voicebox/tests/vendorfixture"
)

// The live benchmarks put the relay's /live door between page clients and the vendor fixture,
// all over loopback WebSockets. A page frame is 20 ms of 24 kHz PCM16 (960 bytes) whose first 8
// bytes carry its send time; the fixture reads it back on arrival. "Added" latency is the
// through-the-relay figure minus the same frames sent by the clients straight to the fixture.
//
//	go test -run '^$' -bench Live -benchtime 250x ./relay/voice/

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
	h := voice.New(voice.Options{Registry: reg, Settings: set, Keys: keys, BaseURLs: map[string]string{openai.Name: base}, PageOrigin: srv.PageOrigin,
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

// BenchmarkLiveAudioLatency: 20 ms frames paced in real time from 1 and 100 sessions through the
// relay, and at the same time as many clients sending the same frames straight to a second
// fixture; b.N frames per session. Reports p50/p99 of both and their difference.
func BenchmarkLiveAudioLatency(b *testing.B) {
	for _, sessions := range []int{1, 100} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			viaRelay, direct := &latencies{}, &latencies{}
			fx := fixtureFor(b, viaRelay)
			url, _ := benchRelay(b, fx.OpenAIURL(), sessions)
			pages := make([]*client, sessions)
			for i := range pages {
				pages[i] = dialPageClient(b, url)
			}
			fxDirect := fixtureFor(b, direct)
			directs := make([]*client, sessions)
			for i := range directs {
				directs[i] = dialDirect(b, fxDirect)
			}
			b.ResetTimer()
			// Both at once, so the relay's frames and the baseline's meet the same load.
			var both sync.WaitGroup
			both.Go(func() { run(b, pages, b.N, true, false, viaRelay) })
			both.Go(func() { run(b, directs, b.N, true, true, direct) })
			both.Wait()
			b.StopTimer()
			p50, p99 := viaRelay.percentile(0.50), viaRelay.percentile(0.99)
			d50, d99 := direct.percentile(0.50), direct.percentile(0.99)
			b.ReportMetric(float64(p50.Microseconds()), "relay-p50-us")
			b.ReportMetric(float64(p99.Microseconds()), "relay-p99-us")
			b.ReportMetric(float64(d50.Microseconds()), "direct-p50-us")
			b.ReportMetric(float64(d99.Microseconds()), "direct-p99-us")
			b.ReportMetric(float64((p50 - d50).Microseconds()), "added-p50-us")
			b.ReportMetric(float64((p99 - d99).Microseconds()), "added-p99-us")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkLiveAudioThroughput: frames sent back to back from 1 and 100 sessions through the
// relay; b.N frames in all. Reports frames forwarded per second.
func BenchmarkLiveAudioThroughput(b *testing.B) {
	for _, sessions := range []int{1, 100} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			got := &latencies{}
			fx := fixtureFor(b, got)
			url, _ := benchRelay(b, fx.OpenAIURL(), sessions)
			pages := make([]*client, sessions)
			for i := range pages {
				pages[i] = dialPageClient(b, url)
			}
			per := max(1, b.N/sessions)
			b.ResetTimer()
			elapsed := run(b, pages, per, false, false, got)
			b.StopTimer()
			b.ReportMetric(float64(per*sessions)/elapsed.Seconds(), "frames/s")
		})
	}
}

// peerEnv, set to a number of sessions, makes TestLivePeerProcess the peers of the relay
// BenchmarkLiveIdleSessionMemory measures: the fixture and the page clients run in that child
// process, so the benchmark's process holds only the relay.
const peerEnv = "VOICEBOX_LIVE_BENCH_PEERS"

// TestLivePeerProcess is not a test: BenchmarkLiveIdleSessionMemory runs it in a child process.
// Without peerEnv it returns at once. It prints the fixture's URL, reads the relay's /live URL,
// opens the sessions, prints READY, and closes them when it reads another line.
func TestLivePeerProcess(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(peerEnv))
	if n <= 0 {
		return
	}
	fx := vendorfixture.Start(t, vendorfixture.Options{})
	fmt.Printf("FIXTURE %s\n", fx.OpenAIURL())
	in := bufio.NewScanner(os.Stdin)
	in.Scan()
	url := strings.TrimSpace(in.Text())
	clients := make([]*client, n)
	for i := range clients {
		clients[i] = dialPageClient(t, url)
	}
	fmt.Printf("READY\n")
	in.Scan() // STOP
	for _, c := range clients {
		c.ws.Close(websocket.StatusNormalClosure, "")
	}
}

// BenchmarkLiveIdleSessionMemory: the relay's heap and stacks per ready, idle session, with the
// fixture and the page clients in a child process.
func BenchmarkLiveIdleSessionMemory(b *testing.B) {
	const sessions = 100
	// One measurement whatever b.N is: it is a size, not a speed.
	b.StopTimer()
	{
		cmd := exec.Command(os.Args[0], "-test.run=^TestLivePeerProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), peerEnv+"="+strconv.Itoa(sessions))
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		out := bufio.NewScanner(stdout)
		line := func(prefix string) string {
			var said []string
			for out.Scan() {
				if s, ok := strings.CutPrefix(out.Text(), prefix); ok {
					return s
				}
				said = append(said, out.Text())
			}
			b.Fatalf("the peer process said no %q but %q", prefix, said)
			return ""
		}
		url, h := benchRelay(b, strings.TrimSpace(line("FIXTURE ")), sessions)
		before := heapAndStacks()
		io.WriteString(stdin, url+"\n")
		line("READY")
		for h.Open() < sessions {
			time.Sleep(time.Millisecond)
		}
		after := heapAndStacks()
		io.WriteString(stdin, "STOP\n")
		cmd.Wait()
		b.ReportMetric(float64(after-before)/sessions/1024, "KiB/session")
	}
}

func heapAndStacks() int64 {
	var m runtime.MemStats
	for range 2 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}
