//go:build !js

package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/voicebox-go/voicebox/tests/harness"
)

const (
	// sweepSeconds is how long the resampler benchmark's sweep runs, from 0 Hz to the input's
	// Nyquist frequency (3 kHz a second from 48 kHz).
	sweepSeconds = 8
	// sweepLevel is the sweep's amplitude (half scale).
	sweepLevel = 0.5
	// sweepWindowsPerSecond cuts the output into windows of 20 ms, each measured as one tone.
	sweepWindowsPerSecond = 50
	// passbandLow and passbandHigh bound the passband the ripple is measured over: 100 Hz to 0.4
	// of the output rate (6.4 kHz at 16 kHz), speech's band below both filters' edges.
	passbandLow      = 100.0
	passbandHighRate = 0.4
	// stopbandGuard is how far above the output's Nyquist frequency a window's lowest input
	// frequency lies for it to count as aliasing.
	stopbandGuard = 100.0
	// silentRMS is the least RMS the measure tells from silence: an output quieter than it in
	// the stopband reads as it, 191 dB under the sweep, the measure's ceiling.
	silentRMS = 1e-10
)

// BenchmarkResamplerAgainstSox sends the same sweep (0 Hz to the input's Nyquist frequency over
// 8 s, half scale, 32-bit float) through the capture resampler (public/resampler.js, run in
// Chromium) and through sox's rate effect at its default quality and at -v, from 48 and 44.1 kHz
// to 16 kHz, and reports for each, in the same run:
//   - rejection-dB: how far under the sweep the loudest 20 ms of output is while the input lies
//     above the output's Nyquist frequency (all that comes out then is aliasing);
//   - ripple-dB: the spread of the gain over the passband, 100 Hz to 6.4 kHz (each 20 ms window
//     fitted to the sweep, delayed as the resampler delays it).
//
// sox comes from Debian's sox package, which ./build.sh bench installs; without it the benchmark
// fails.
func BenchmarkResamplerAgainstSox(b *testing.B) {
	sox, err := exec.LookPath("sox")
	if err != nil {
		b.Fatal("sox is not on PATH: ./build.sh bench installs it (Debian's sox package)")
	}
	relay := harness.StartRelay(b)
	tab := harness.NewTab(b)
	// As TestCaptureWorkletResamplesAndClamps: this tab only may evaluate the resampler's source.
	if err := chromedp.Do(tab.Ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true})
		return err
	})); err != nil {
		b.Fatal(err)
	}
	tab.Navigate(relay.URL)
	for _, pair := range [][2]int{{48000, 16000}, {44100, 16000}} {
		in, out := pair[0], pair[1]
		b.Run(fmt.Sprintf("%d-%d", in, out), func(b *testing.B) {
			for range b.N {
				sweep := makeSweep(in)
				results := map[string][]float32{
					"ours":  oursResampled(b, tab, in, out),
					"sox":   soxResampled(b, sox, sweep, in, out),
					"sox-v": soxResampled(b, sox, sweep, in, out, "-v"),
				}
				for _, name := range []string{"ours", "sox", "sox-v"} {
					rejection, ripple, delay := sweepResponse(results[name], in, out)
					b.ReportMetric(rejection, name+"-rejection-dB")
					b.ReportMetric(ripple, name+"-ripple-dB")
					b.Logf("%d -> %d Hz, %s: alias rejection %.1f dB, passband ripple %.4f dB, delay %.2f ms", in, out, name, rejection, ripple, delay*1000)
				}
			}
		})
	}
}

// sweepPhase is the sweep's phase at t seconds from inRate: its frequency rises from 0 at t = 0
// to inRate/2 at sweepSeconds.
func sweepPhase(t float64, inRate int) float64 {
	k := float64(inRate) / 2 / sweepSeconds // Hz per second
	return math.Pi * k * t * t
}

// makeSweep returns the sweep at inRate as 32-bit floats.
func makeSweep(inRate int) []float32 {
	s := make([]float32, sweepSeconds*inRate)
	for n := range s {
		s[n] = float32(sweepLevel * math.Sin(sweepPhase(float64(n)/float64(inRate), inRate)))
	}
	return s
}

// oursResampled runs the same sweep (made in the page by the same formula) through resampler.js.
func oursResampled(b *testing.B, tab *harness.Tab, in, out int) []float32 {
	enc := harness.Eval[string](tab, fmt.Sprintf(`(async () => {
		const src = (await (await fetch('/resampler.js')).text()).replace(/^export /gm, '');
		const Resampler = new Function(src + '\nreturn Resampler;')();
		const rate = %d, target = %d, seconds = %d, level = %g;
		const k = rate / 2 / seconds;
		const rs = new Resampler(rate, target);
		const y = new Float32Array(seconds * target);
		let m = 0;
		for (let n = 0; n < seconds * rate; n++) {
			const t = n / rate;
			rs.write(Math.fround(level * Math.sin(Math.PI * k * t * t)));
			while (rs.ready() && m < y.length) y[m++] = rs.read();
		}
		const u8 = new Uint8Array(y.buffer, 0, m * 4);
		let s = '';
		for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode(...u8.subarray(i, i + 0x8000));
		return btoa(s);
	})()`, in, out, sweepSeconds, sweepLevel))
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		b.Fatal(err)
	}
	return floats(raw)
}

// soxResampled runs the sweep through `sox ... rate [opts] out`, 32-bit float in and out, no dither.
func soxResampled(b *testing.B, sox string, sweep []float32, in, out int, opts ...string) []float32 {
	dir := b.TempDir()
	src, dst := filepath.Join(dir, "in.f32"), filepath.Join(dir, "out.f32")
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, sweep); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(src, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	format := []string{"-t", "raw", "-e", "floating-point", "-b", "32", "-c", "1", "-L"}
	args := append([]string{"-D"}, format...)
	args = append(args, "-r", fmt.Sprint(in), src)
	args = append(args, format...)
	args = append(args, dst, "rate")
	args = append(args, opts...)
	args = append(args, fmt.Sprint(out))
	if msg, err := exec.Command(sox, args...).CombinedOutput(); err != nil {
		b.Fatalf("sox %q: %v: %s", args, err, msg)
	}
	raw, err := os.ReadFile(dst)
	if err != nil {
		b.Fatal(err)
	}
	return floats(raw)
}

func floats(raw []byte) []float32 {
	y := make([]float32, len(raw)/4)
	for i := range y {
		y[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return y
}

// sweepResponse measures y, the sweep resampled from inRate to outRate: its alias rejection (dB,
// the worst window above the output's Nyquist frequency), its passband ripple (dB) and its delay
// (seconds, found as the delay that best matches the passband to the sweep).
func sweepResponse(y []float32, inRate, outRate int) (rejection, ripple, delay float64) {
	k := float64(inRate) / 2 / sweepSeconds
	fs := float64(outRate)
	lo, hi := int(passbandLow/k*fs), int(passbandHighRate*fs/k*fs)
	hi = min(hi, len(y))
	// match is how much of the passband's output lines up with the sweep delayed by d.
	match := func(d float64) float64 {
		var re, im float64
		for n := lo; n < hi; n++ {
			p := sweepPhase(float64(n)/fs-d, inRate)
			re += float64(y[n]) * math.Cos(p)
			im += float64(y[n]) * math.Sin(p)
		}
		return re*re + im*im
	}
	best := 0.0
	for d := -2.0; d <= 120; d++ { // whole output samples first
		if m := match(d / fs); m > best {
			best, delay = m, d/fs
		}
	}
	coarse := delay
	for d := -1.0; d <= 1; d += 0.02 { // then fiftieths around the best
		if m := match(coarse + d/fs); m > best {
			best, delay = m, coarse+d/fs
		}
	}
	w := outRate / sweepWindowsPerSecond
	minGain, maxGain := math.Inf(1), math.Inf(-1)
	rejection = math.Inf(1)
	for start := 0; start+w <= len(y); start += w {
		fLow, fHigh := k*(float64(start)/fs-delay), k*(float64(start+w)/fs-delay)
		switch {
		case fLow >= passbandLow && fHigh <= passbandHighRate*fs:
			// The window's gain: y fitted to the delayed sweep, a sin + b cos.
			var ss, cc, sc, ys, yc float64
			for n := start; n < start+w; n++ {
				p := sweepPhase(float64(n)/fs-delay, inRate)
				s, c := math.Sin(p), math.Cos(p)
				ss, cc, sc = ss+s*s, cc+c*c, sc+s*c
				ys, yc = ys+float64(y[n])*s, yc+float64(y[n])*c
			}
			det := ss*cc - sc*sc
			a, bb := (ys*cc-yc*sc)/det, (yc*ss-ys*sc)/det
			g := 20 * math.Log10(math.Hypot(a, bb)/sweepLevel)
			minGain, maxGain = min(minGain, g), max(maxGain, g)
		case fLow >= fs/2+stopbandGuard && fHigh <= float64(inRate)/2*0.99:
			var sum float64
			for n := start; n < start+w; n++ {
				sum += float64(y[n]) * float64(y[n])
			}
			rms := math.Max(math.Sqrt(sum/float64(w)), silentRMS)
			rejection = min(rejection, -20*math.Log10(rms/(sweepLevel/math.Sqrt2)))
		}
	}
	return rejection, maxGain - minGain, delay
}
