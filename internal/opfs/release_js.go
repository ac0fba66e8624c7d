package opfs

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/jsutil"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// A sync access handle locks its file against every other context of the origin: while one
// worker's pool keeps a handle open, another worker's createWritable, removeEntry, move and
// createSyncAccessHandle on that file fail with NoModificationAllowedError. Two tabs of one
// relay open the same browser storage, each in a worker of its own (one holds the workspace, the
// other waits with its Files panel still its person's), and both append to the one audit log.
// So the pools of every worker of the origin lend their handles back: a context whose change
// finds the file locked asks, on the BroadcastChannel releaseChannel, for the path's handles
// (and those below it); every pool that keeps one closes it, and the asker tries again. A pool
// reopens a handle on its next read, so a file two contexts take turns on is asked for again.
const releaseChannel = "voicebox-opfs-release"

// releaseWaits are the pauses between an asker's attempts (about 1.2 s in all): a holder busy
// with a long call hears the ask only when its worker next waits.
var releaseWaits = [...]time.Duration{0, 1, 2, 4, 8, 16, 32, 64, 128, 128, 256, 256, 256}

// Any page of the origin can post on releaseChannel, so what is heard there is bounded before it
// costs the holder anything: an ask that is not a string, or is longer than maxAskChars, is
// dropped before a byte of it is copied into Go (WebAssembly memory never shrinks); and at most
// asksPerSecond asks are heard a second. Past that the channel is not listened to for the rest
// of the second (its onmessage unset, so the browser drops what arrives without calling Go),
// said on the console once per floodSayEvery. A flood then costs the holder at most
// asksPerSecond reopened handles a second, not one at every read; a genuine ask lost in it is
// asked again (releaseWaits), and a change still refused when they run out answers file-busy.
const (
	// maxAskChars bounds an ask, in UTF-16 code units (a JS string's length): every path a pool
	// of the origin keys (a root's folder, the metadata folder, a name of fsroot.MaxPathBytes)
	// is shorter.
	maxAskChars = 2 * fsroot.MaxPathBytes
	// asksPerSecond bounds the asks heard a second: a change asks at most len(releaseWaits)
	// times, over about 1.2 s, and usually once.
	asksPerSecond = 32
	// floodSayEvery bounds how often the console is told of asks not heard.
	floodSayEvery = 10 * time.Second
)

// lender is this context's side of releaseChannel: the pools it lends from and the channel.
type lender struct {
	mu      sync.Mutex
	pools   []*handlePool
	channel jsutil.Value // a BroadcastChannel, or undefined where there is none
	onMsg   jsutil.Func

	window  time.Time           // the start of the second whose asks heard counts
	heard   int                 // asks heard since window
	deaf    bool                // the channel's onmessage is unset until the second ends
	saidAt  [sayKinds]time.Time // when each kind of line was last said
	objectF jsutil.Value        // the global Object, to read a string's length without copying it
}

var (
	lenderOnce sync.Once
	theLender  *lender
)

// lend makes p's handles available to the origin's other contexts, and returns the lender.
func lend(p *handlePool) *lender {
	lenderOnce.Do(func() { theLender = newLender() })
	theLender.mu.Lock()
	theLender.pools = append(theLender.pools, p)
	theLender.mu.Unlock()
	return theLender
}

func newLender() *lender {
	l := &lender{channel: jsutil.Undefined()}
	ctor, err := jsutil.Global().Get("BroadcastChannel")
	if err != nil || ctor.Type() != jsutil.TypeFunction {
		return l
	}
	ch, err := ctor.New(releaseChannel)
	if err != nil {
		return l
	}
	if l.objectF, err = jsutil.Global().Get("Object"); err != nil {
		return l
	}
	l.onMsg, err = jsutil.FuncOf(func(_ jsutil.Value, args []jsutil.Value) any {
		if len(args) > 0 && l.hear() {
			if p, ok := l.askOf(args[0]); ok {
				l.closeLocal(p)
			}
		}
		return nil
	})
	if err != nil {
		return l
	}
	if ch.Set("onmessage", l.onMsg.Value()) != nil {
		return l
	}
	l.channel = ch
	return l
}

// hear counts an ask arriving, and reports whether it is heard: past asksPerSecond this second,
// the channel is not listened to until the second ends.
func (l *lender) hear() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if now.Sub(l.window) >= time.Second {
		l.window, l.heard = now, 0
	}
	if l.heard++; l.heard <= asksPerSecond {
		return true
	}
	if !l.deaf && l.channel.Set("onmessage", jsutil.Null()) == nil {
		l.deaf = true
		time.AfterFunc(l.window.Add(time.Second).Sub(now), l.listen)
		l.sayLocked(sayFlood, "opfs: asks to let go of files came faster than "+strconv.Itoa(asksPerSecond)+
			" a second on "+releaseChannel+" (another page of this origin floods it?): the rest of each such second is not heard")
	}
	return false
}

// listen listens to the channel again, once the second of a flood is over.
func (l *lender) listen() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.deaf && l.channel.Set("onmessage", l.onMsg.Value()) == nil {
		l.deaf = false
	}
}

// askOf returns the path an ask names: a string of at most maxAskChars, read only then.
func (l *lender) askOf(ev jsutil.Value) (string, bool) {
	data, err := ev.Get("data")
	if err != nil || data.Type() != jsutil.TypeString {
		l.say(sayNotPath, "opfs: an ask on "+releaseChannel+" that is not a path was dropped")
		return "", false
	}
	n := -1
	if boxed, err := l.objectF.Invoke(data); err == nil {
		n, _ = boxed.Length()
	}
	if n < 0 || n > maxAskChars {
		l.say(sayTooLong, "opfs: an ask on "+releaseChannel+" longer than any path was dropped")
		return "", false
	}
	p, err := data.String()
	return p, err == nil
}

// The kinds of line the lender says, each at most once per floodSayEvery.
const (
	sayFlood = iota
	sayNotPath
	sayTooLong
	sayKinds
)

// say writes line on the console, once per floodSayEvery for its kind.
func (l *lender) say(kind int, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sayLocked(kind, line)
}

func (l *lender) sayLocked(kind int, line string) {
	now := time.Now()
	if at := l.saidAt[kind]; !at.IsZero() && now.Sub(at) < floodSayEvery {
		return
	}
	l.saidAt[kind] = now
	println(line)
}

// closeLocal closes this context's pooled handles of path (a path from the origin's storage
// root) and of everything below it.
func (l *lender) closeLocal(path string) {
	l.mu.Lock()
	pools := l.pools
	l.mu.Unlock()
	for _, p := range pools {
		switch {
		case p.base == "":
			p.close(path)
		case path == p.base:
			p.closeAll()
		case strings.HasPrefix(path, p.base+"/"):
			p.close(path[len(p.base)+1:])
		}
	}
}

// ask asks every context of the origin, this one's other pools included, to close their handles
// of path and below it.
func (l *lender) ask(path string) {
	l.closeLocal(path)
	if l.channel.Type() == jsutil.TypeObject {
		l.channel.Call("postMessage", path)
	}
}

// lockedElsewhere reports whether err says another context holds the file open.
func lockedElsewhere(err error) bool {
	return jsutil.Name(err) == "NoModificationAllowedError"
}

// whileLocked runs try, and while it fails because another context holds name open, asks for
// name's handles and runs it again after a pause, until it succeeds, fails otherwise, or the
// pauses (or ctx) run out. It returns try's last error.
func (r *Root) whileLocked(ctx context.Context, name string, try func() error) error {
	err := try()
	if r.pool == nil || r.pool.lender == nil {
		return err
	}
	for _, wait := range releaseWaits {
		if !lockedElsewhere(err) || ctx.Err() != nil {
			return err
		}
		r.pool.lender.ask(r.pool.path(r.poolKey + name))
		if wait > 0 {
			time.Sleep(wait * time.Millisecond)
		}
		err = try()
	}
	return err
}
