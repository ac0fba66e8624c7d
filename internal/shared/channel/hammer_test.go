package channel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// hammerPeer answers calls from a few worker goroutines, each frame in a randomly chosen way.
type hammerPeer struct {
	connected atomic.Bool
	frames    chan []byte
	broker    *Broker
}

func (p *hammerPeer) Connected() bool { return p.connected.Load() }

func (p *hammerPeer) Send(frame []byte) error {
	if !p.connected.Load() {
		return fmt.Errorf("hammer: socket is down")
	}
	p.frames <- frame // buffered for every call; never blocks
	return nil
}

// The ways the hammer peer treats a call.
const (
	actObserve = iota
	actRefuseWithBudget
	actMalformedFirst
	actUnmatchedFirst
	actTwice
	actSilent
	actLate
	nActs
)

type hammerCounts struct {
	acts      [nActs]atomic.Int64
	malformed atomic.Int64 // malformed frames sent
	unmatched atomic.Int64 // frames sent that can match nothing
}

func (p *hammerPeer) work(rng *rand.Rand, counts *hammerCounts, late *[][]byte, lateMu *sync.Mutex, t *testing.T) {
	for frame := range p.frames {
		call, err := wire.ParseCall(frame)
		if err != nil {
			t.Errorf("the broker sent a frame that does not parse: %v", err)
			continue
		}
		id := call.CallID
		observed := observedFrame(id)
		act := rng.IntN(nActs)
		counts.acts[act].Add(1)
		switch act {
		case actObserve:
			p.broker.Answer(observed)
		case actRefuseWithBudget:
			p.broker.Answer([]byte(`{"v":1,"callId":"` + id + `","ok":false,"refused":"budget-exhausted","why":"no requests left","budget":{"used":3,"max":3}}`))
		case actMalformedFirst:
			counts.malformed.Add(1)
			p.broker.Answer([]byte(`{"v":1,"callId":"` + id + `","ok":true}`))
			p.broker.Answer(observed)
		case actUnmatchedFirst:
			counts.unmatched.Add(1)
			p.broker.Answer(observedFrame(id + "-nobody"))
			p.broker.Answer(observed)
		case actTwice:
			p.broker.Answer(observed)
			p.broker.Answer(observed)
		case actSilent:
		case actLate:
			lateMu.Lock()
			*late = append(*late, observed)
			lateMu.Unlock()
		}
	}
}

// waitOrFail waits for wg, failing the test if it takes longer than testDeadline: a call that
// never settles, or a settle that blocks, shows up here.
func waitOrFail(t *testing.T, what string, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(testDeadline):
		buf := make([]byte, 1<<20)
		t.Fatalf("%s did not finish within %v:\n%s", what, testDeadline, buf[:runtime.Stack(buf, true)])
	}
}

// liveGoroutines counts goroutines like runtime.NumGoroutine, leaving out the one the js/wasm
// runtime starts to run callbacks from the browser's event loop (runtime.handleEvent), which comes
// and goes with timers and is no goroutine of ours.
func liveGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.HasPrefix(g, "goroutine ") && !strings.Contains(g, "runtime.handleEvent") {
			count++
		}
	}
	return count
}

// TestBrokerHammer asks thousands of calls at once while the peer answers, refuses, repeats, lies,
// stays silent and disconnects at random, then checks that every call settled exactly once with an
// answer of its own, nothing is left waiting, and no goroutine outlives the test.
func TestBrokerHammer(t *testing.T) {
	// Not parallel: it counts goroutines.
	n := hammerCalls
	if testing.Short() {
		n /= 4
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d calls", seed, n)
	before := liveGoroutines()

	p := &hammerPeer{frames: make(chan []byte, n)}
	p.connected.Store(true)
	b := New(Page, p, Options{Timeout: 20 * time.Millisecond})
	p.broker = b

	var counts hammerCounts
	var late [][]byte
	var lateMu sync.Mutex
	var workers sync.WaitGroup
	for w := range 4 {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		workers.Go(func() { p.work(rng, &counts, &late, &lateMu, t) })
	}

	stop := make(chan struct{})
	var flapper sync.WaitGroup
	var flaps atomic.Int64
	flapper.Go(func() {
		rng := rand.New(rand.NewPCG(seed, 99))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(rng.IntN(20000)) * time.Microsecond):
			}
			p.connected.Store(false)
			b.Abandon()
			flaps.Add(1)
			time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond)
			p.connected.Store(true)
		}
	})

	var (
		askers  sync.WaitGroup
		byRule  sync.Map // refusal.Rule ("" for observed) -> *atomic.Int64
		answers = make([]atomic.Int32, n)
	)
	for i := range n {
		askers.Go(func() {
			id := fmt.Sprintf("h%d", i)
			ctx := context.Background()
			if i%7 == 0 { // some callers bring a deadline of their own
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Duration(1+i%10)*time.Millisecond)
				defer cancel()
			}
			a := b.Ask(ctx, testCall(id))
			answers[i].Add(1)
			if a.CallID != id {
				t.Errorf("call %s got the answer for %s", id, a.CallID)
			}
			switch {
			case a.OK:
				if string(a.Observed) != `{"for":"`+id+`"}` {
					t.Errorf("call %s got observation %s", id, a.Observed)
				}
			case a.Refused == refusal.BudgetExhausted:
				if a.Budget == nil || *a.Budget != (wire.Budget{Used: 3, Max: 3}) {
					t.Errorf("call %s: budget figures lost: %+v", id, a.Budget)
				}
			case a.Refused == refusal.NoPage, a.Refused == refusal.PageTimeout, a.Refused == refusal.PageClosed:
			default:
				t.Errorf("call %s settled with %+v", id, a)
			}
			c, _ := byRule.LoadOrStore(a.Refused, new(atomic.Int64))
			c.(*atomic.Int64).Add(1)
		})
	}
	waitOrFail(t, "the asking goroutines", &askers)
	close(stop)
	waitOrFail(t, "the disconnecting goroutine", &flapper)
	close(p.frames)
	waitOrFail(t, "the peer's workers", &workers)
	for _, f := range late {
		p.broker.Answer(f) // every call has settled, so these match nothing
	}

	for i := range answers {
		if got := answers[i].Load(); got != 1 {
			t.Errorf("call h%d returned %d times", i, got)
		}
	}
	if w := b.Waiting(); w != 0 {
		t.Errorf("Waiting() = %d after every call returned", w)
	}
	st := b.Stats()
	if st.Malformed != uint64(counts.malformed.Load()) {
		t.Errorf("Stats.Malformed = %d, the peer sent %d malformed frames", st.Malformed, counts.malformed.Load())
	}
	if min := uint64(counts.unmatched.Load()) + uint64(len(late)); st.Unmatched < min {
		t.Errorf("Stats.Unmatched = %d, the peer sent at least %d frames that match nothing", st.Unmatched, min)
	}
	var summary []string
	byRule.Range(func(k, v any) bool {
		summary = append(summary, fmt.Sprintf("%q:%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	t.Logf("answers by rule %s; %d disconnects; stats %+v", strings.Join(summary, " "), flaps.Load(), st)

	deadline := time.Now().Add(testDeadline)
	for liveGoroutines() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, liveGoroutines(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
