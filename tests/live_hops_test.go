//go:build !js

package tests

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// liveHopProbe is prepended, by the benchmark only, to the copies of the capture worklets and of
// the workers that own /live which its relay serves (liveHopFiles), and evaluated in each page
// before the session starts. It stamps an onset where each stage of the capture path holds it,
// on one clock (performance.timeOrigin + performance.now(); Date.now() where a realm has no
// performance):
//   - held: the capture worklet's process() is called with the quantum holding the onset;
//   - posted: the worklet posts the frame holding it (MessagePort.postMessage of an ArrayBuffer);
//   - sent: the frame is handed to the /live socket (WebSocket.send, in the worker or, on the
//     main-thread floor, in the page).
//
// A worklet's stamps wait in globalThis.__benchHops until the benchmark's tap worklet in the same
// context (live-tap.js) posts them to the page; a worker's go to the page on the BroadcastChannel
// "bench-hops"; the page keeps them in __bench.hops[stage]. An onset is a sample above
// liveBenchLevel after at least 30 ms below it, as the vendor's ear counts them. It is a format:
// liveHopProbeSource fills in the level.
const liveHopProbe = `(() => {
	if (globalThis.__hopProbe) return;
	globalThis.__hopProbe = true;
	const hasPerf = typeof performance !== 'undefined';
	const now = () => hasPerf ? performance.timeOrigin + performance.now() : Date.now();
	const LEVEL = %d;
	const detector = (quietSamples, scale) => {
		let quiet = Infinity;
		return (n, at) => {
			let hit = false;
			for (let i = 0; i < n; i++) {
				if (Math.abs(at(i)) * scale < LEVEL) { quiet++; continue; }
				if (quiet >= quietSamples) hit = true;
				quiet = 0;
			}
			return hit;
		};
	};
	// Frames are PCM16 at the session's rate; 30 ms at 16 kHz is the shortest quiet counted.
	const pcmOnset = detector(480, 1);
	const onPcm = (buf) => { const v = new Int16Array(buf, 0, buf.byteLength >> 1); return pcmOnset(v.length, (i) => v[i]); };
	if (typeof registerProcessor === 'function') {
		const out = globalThis.__benchHops = [];
		const held = detector(0.03 * sampleRate, 32768);
		const register = registerProcessor;
		globalThis.registerProcessor = (name, cls) => {
			if (name !== 'bench-tap') {
				const process = cls.prototype.process;
				cls.prototype.process = function (inputs, outputs, params) {
					const ch = inputs[0] && inputs[0][0];
					if (ch && held(ch.length, (i) => ch[i])) out.push({ stage: 'held', t: now(), perf: hasPerf });
					return process.call(this, inputs, outputs, params);
				};
			}
			register(name, cls);
		};
		const post = MessagePort.prototype.postMessage;
		MessagePort.prototype.postMessage = function (m, t) {
			if (m instanceof ArrayBuffer && onPcm(m)) out.push({ stage: 'posted', t: now(), perf: hasPerf });
			return post.call(this, m, t);
		};
		return;
	}
	const report = typeof window !== 'undefined'
		? (r) => window.__bench.hops[r.stage].push(r.t)
		: ((bc) => (r) => bc.postMessage(r))(new BroadcastChannel('bench-hops'));
	const send = WebSocket.prototype.send;
	WebSocket.prototype.send = function (d) {
		const t = now();
		const hit = d instanceof ArrayBuffer && this.url.endsWith('/live') && onPcm(d);
		const r = send.call(this, d);
		if (hit) report({ stage: 'sent', t });
		return r;
	};
})();
`

// liveHopProbeSource is liveHopProbe with its level filled in.
var liveHopProbeSource = fmt.Sprintf(liveHopProbe, liveBenchLevel)

// liveHopStages are the stages liveHopProbe stamps, in the order an onset passes them.
var liveHopStages = []string{"held", "posted", "sent"}

// liveHopFiles are the served files liveHopProbe is prepended to: the capture worklets and the
// workers that own /live, of the product page and of the floor pages.
var liveHopFiles = []string{"audio-worklet.js", "live-worker.js", "live-floor-capture.js", "live-floor-socket.js"}

// probeLiveHops prepends liveHopProbe to the copies in public (the benchmark's own served copy of
// public/ and tests/livefloor, never the repository's).
func probeLiveHops(b *testing.B, public string) {
	for _, name := range liveHopFiles {
		path := filepath.Join(public, name)
		src, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, append([]byte(liveHopProbeSource), src...), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// liveHopsInstrument is evaluated with liveBenchInstrument: it keeps the stamps in
// __bench.hops and patches this page's own WebSocket.send (the main-thread floor's socket).
const liveHopsInstrument = `(() => {
	const H = window.__bench.hops = { held: [], posted: [], sent: [], perf: true };
	new BroadcastChannel('bench-hops').onmessage = (e) => H[e.data.stage].push(e.data.t);
	window.__benchWorkletHops = (hops) => { for (const r of hops) { H[r.stage].push(r.t); H.perf = H.perf && r.perf; } };
	return true;
})()`

// captureHops chains each onset placed in the microphone (mic) through the probe's stages and
// the vendor's ear (vendor), all epoch ms: an onset's stamp at each stage is the first not
// before its stamp at the stage before (less the clocks' slack). It returns, for each hop, the
// delays of the onsets that reached the vendor with a stamp at every stage, and how many did
// not.
func captureHops(mic []float64, stages ...[]float64) (hops [][]float64, unmatched int) {
	// clockSlack is pairOnsets' 1 ms, and 1 ms more for Date.now() in a realm without performance.
	const clockSlack = 2.0
	hops = make([][]float64, len(stages))
	next := make([]int, len(stages))
onsets:
	for _, t := range mic {
		at := t
		delays := make([]float64, len(stages))
		for s, stamps := range stages {
			for next[s] < len(stamps) && stamps[next[s]] < at-clockSlack {
				next[s]++
			}
			if next[s] == len(stamps) {
				unmatched++
				continue onsets
			}
			delays[s] = stamps[next[s]] - at
			at = stamps[next[s]]
			next[s]++
		}
		for s := range stages {
			hops[s] = append(hops[s], delays[s])
		}
	}
	return hops, unmatched
}

// reportCaptureHops waits (bounded) for the probe's stamps of n onsets to reach the page, chains
// them with the microphone's, the tap's (wire: the relay's append event reached the vendor's side
// of the loopback) and the vendor's, and reports each hop's p50 / p99. No tap stands in front of
// the relay: the page's policy lets its sockets reach the relay's own port only.
func reportCaptureHops(b *testing.B, tab *harness.Tab, n int, mic, wire, vendor []float64) {
	ready := fmt.Sprintf(`Math.min(__bench.hops.held.length, __bench.hops.posted.length, __bench.hops.sent.length) >= %d`, n)
	for deadline := time.Now().Add(liveBenchSettle); !harness.Eval[bool](tab, ready) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	stages := make([][]float64, 0, len(liveHopStages)+1)
	for _, s := range liveHopStages {
		stages = append(stages, harness.Eval[[]float64](tab, `__bench.hops.`+s))
	}
	stages = append(stages, wire, vendor)
	hops, unmatched := captureHops(mic, stages...)
	names := append(slices.Clone(liveHopStages), "wire", "vendor")
	var line strings.Builder
	for i, d := range hops {
		slices.Sort(d)
		hop := "hop-" + names[i]
		b.ReportMetric(percentile(d, 0.5), hop+"-p50-ms")
		b.ReportMetric(percentile(d, 0.99), hop+"-p99-ms")
		fmt.Fprintf(&line, " ->%s %.1f/%.1f", names[i], percentile(d, 0.5), percentile(d, 0.99))
	}
	b.ReportMetric(float64(unmatched), "hops-unmatched")
	b.Logf("capture hops p50/p99 ms: mic%s (%d onsets chained, %d not; performance clock in the worklet: %v)",
		line.String(), len(hops[0]), unmatched, harness.Eval[bool](tab, `__bench.hops.perf`))
}

// wireTap is a loopback TCP proxy in front of a WebSocket server that stamps, in the client's
// messages, the onsets of the microphone's audio when their bytes are read from the client
// (before they are forwarded): in front of the vendor fixture (the relay's append events, base64
// in JSON), when the relay's write of an onset reached the loopback. Its own forwarding is
// counted in the hop after it.
type wireTap struct {
	ln     net.Listener
	target string
	ears   onsetEars
	pcm    func(opcode byte, payload []byte) []byte // the audio a client message carries, or nil
}

// tapStream is what a tap knows of one client's messages: the message being put together from
// its frames, and its opcode.
type tapStream struct {
	message []byte
	opcode  byte
}

// startWireTap proxies a listener of its own to target (host:port); pcm picks the audio out of
// each whole client message.
func startWireTap(b *testing.B, target string, pcm func(opcode byte, payload []byte) []byte) *wireTap {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	w := &wireTap{ln: ln, target: target, pcm: pcm}
	w.ears.quiet = liveBenchQuiet
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go w.serve(c)
		}
	}()
	return w
}

// addr is the tap's host:port.
func (w *wireTap) addr() string { return w.ln.Addr().String() }

func (w *wireTap) serve(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", w.target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() { io.Copy(c, up); c.Close() }()
	var pending []byte
	var st tapStream
	headDone := false
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := up.Write(buf[:n]); werr != nil {
				return
			}
			pending = append(pending, buf[:n]...)
			if !headDone {
				end := bytes.Index(pending, []byte("\r\n\r\n"))
				if end < 0 {
					continue
				}
				headDone, pending = true, pending[end+4:]
			}
			pending = w.frames(pending, &st)
		}
		if err != nil {
			return
		}
	}
}

// frames takes the whole client frames at the start of p (masked, RFC 6455), hears the audio of
// each whole message, and returns what is left of p.
func (w *wireTap) frames(p []byte, st *tapStream) []byte {
	for len(p) >= 2 {
		fin, opcode := p[0]&0x80 != 0, p[0]&0x0f
		size, at := int(p[1]&0x7f), 2
		switch size {
		case 126:
			if len(p) < 4 {
				return p
			}
			size, at = int(binary.BigEndian.Uint16(p[2:])), 4
		case 127:
			if len(p) < 10 {
				return p
			}
			size, at = int(binary.BigEndian.Uint64(p[2:])), 10
		}
		masked := p[1]&0x80 != 0
		var key []byte
		if masked {
			if len(p) < at+4 {
				return p
			}
			key, at = p[at:at+4], at+4
		}
		if len(p) < at+size {
			return p
		}
		payload := slices.Clone(p[at : at+size])
		for i := range payload {
			if masked {
				payload[i] ^= key[i%4]
			}
		}
		p = p[at+size:]
		if opcode >= 8 {
			continue // a control frame
		}
		if opcode != 0 {
			st.message, st.opcode = st.message[:0], opcode
		}
		st.message = append(st.message, payload...)
		if fin {
			if pcm := w.pcm(st.opcode, st.message); pcm != nil {
				w.ears.hear(pcm)
			}
		}
	}
	return p
}

// vendorAudio is the audio of the relay's message to the vendor (OpenAI's protocol): the base64
// of an input_audio_buffer.append event.
func vendorAudio(opcode byte, payload []byte) []byte {
	const append, audio = `"type":"input_audio_buffer.append"`, `"audio":"`
	if opcode != 1 || !bytes.Contains(payload, []byte(append)) {
		return nil
	}
	_, b64, ok := bytes.Cut(payload, []byte(audio))
	if !ok {
		return nil
	}
	b64, _, _ = bytes.Cut(b64, []byte(`"`))
	pcm, err := base64.StdEncoding.DecodeString(string(b64))
	if err != nil {
		return nil
	}
	return pcm
}

// hostOf is the host:port of a URL.
func hostOf(b *testing.B, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		b.Fatal(err)
	}
	return u.Host
}

// epochs are the times t as epochMs counts them.
func epochs(t []time.Time) []float64 {
	out := make([]float64, len(t))
	for i, x := range t {
		out[i] = epochMs(x)
	}
	return out
}
