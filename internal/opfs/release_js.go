package opfs

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/jsutil"
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

// lender is this context's side of releaseChannel: the pools it lends from and the channel.
type lender struct {
	mu      sync.Mutex
	pools   []*handlePool
	channel jsutil.Value // a BroadcastChannel, or undefined where there is none
	onMsg   jsutil.Func
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
	l.onMsg, err = jsutil.FuncOf(func(_ jsutil.Value, args []jsutil.Value) any {
		if len(args) == 0 {
			return nil
		}
		data, err := args[0].Get("data")
		if err != nil || data.Type() != jsutil.TypeString {
			return nil
		}
		p, _ := data.String()
		l.closeLocal(p)
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
