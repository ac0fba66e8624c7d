// Package livetest helps tests of live sessions: a Recorder of every callback, in order, with
// waits bounded by a hang guard (never a timing assertion).
package livetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/live"
)

// Bound is the hang guard of every wait.
const Bound = 20 * time.Second

// Recorder keeps a session's callbacks. Its methods are safe for concurrent use.
type Recorder struct {
	// OnToolCall, when set, runs after a tool call is recorded (to answer it).
	OnToolCall func(calls []live.Call)

	mu     sync.Mutex
	events []string
	calls  []live.Call
	audio  []byte
	rates  map[int]bool
	texts  map[live.TextKind]string
	change chan struct{}
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{rates: map[int]bool{}, texts: map[live.TextKind]string{}, change: make(chan struct{})}
}

func (r *Recorder) add(s string) {
	r.mu.Lock()
	r.events = append(r.events, s)
	close(r.change)
	r.change = make(chan struct{})
	r.mu.Unlock()
}

// Callbacks returns the callbacks that record into r.
func (r *Recorder) Callbacks() live.Callbacks {
	return live.Callbacks{
		OnState: func(s live.State, d string) { r.add("state:" + string(s) + ":" + d) },
		OnText: func(t string, k live.TextKind) {
			r.mu.Lock()
			r.texts[k] += t
			r.mu.Unlock()
			r.add("text:" + string(k) + ":" + t)
		},
		OnAudio: func(pcm []byte, rate int) {
			r.mu.Lock()
			r.audio = append(r.audio, pcm...)
			r.rates[rate] = true
			r.mu.Unlock()
			r.add(fmt.Sprintf("audio:%d@%d", len(pcm), rate))
		},
		OnToolCall: func(calls []live.Call) {
			r.mu.Lock()
			r.calls = append(r.calls, calls...)
			r.mu.Unlock()
			r.add(fmt.Sprintf("calls:%d", len(calls)))
			if r.OnToolCall != nil {
				r.OnToolCall(calls)
			}
		},
	}
}

// Events returns every callback so far, as "state:S:detail", "text:KIND:text", "audio:N@RATE"
// and "calls:N".
func (r *Recorder) Events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// Calls returns the tool calls delivered so far.
func (r *Recorder) Calls() []live.Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]live.Call(nil), r.calls...)
}

// Audio returns the output audio so far and the rates it came at.
func (r *Recorder) Audio() ([]byte, []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var rates []int
	for k := range r.rates {
		rates = append(rates, k)
	}
	return append([]byte(nil), r.audio...), rates
}

// Text returns the text of kind delivered so far, joined.
func (r *Recorder) Text(kind live.TextKind) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.texts[kind]
}

// Terminals returns the terminal states reported (a correct session reports exactly one).
func (r *Recorder) Terminals() []string {
	var out []string
	for _, e := range r.Events() {
		for _, s := range []live.State{live.Closed, live.UpstreamClosed, live.Failed} {
			if strings.HasPrefix(e, "state:"+string(s)+":") {
				out = append(out, e)
			}
		}
	}
	return out
}

// Count returns how many events start with prefix.
func (r *Recorder) Count(prefix string) int {
	n := 0
	for _, e := range r.Events() {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// Wait waits until cond holds, checking after every callback, up to Bound.
func (r *Recorder) Wait(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.After(Bound)
	for {
		r.mu.Lock()
		ch := r.change
		r.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			tb.Fatalf("livetest: %s: not within %v; events: %q", what, Bound, r.Events())
		}
	}
}

// WaitFor waits until n events start with prefix.
func (r *Recorder) WaitFor(tb testing.TB, prefix string, n int) {
	tb.Helper()
	r.Wait(tb, fmt.Sprintf("%d× %q", n, prefix), func() bool { return r.Count(prefix) >= n })
}

// LogBuffer is an io.Writer a slog handler and a test can share, to look for secrets in a log.
type LogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write keeps p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
