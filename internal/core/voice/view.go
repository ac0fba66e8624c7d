package voice

import (
	"context"
	"sync"

	"github.com/voicebox-go/voicebox/internal/core/live"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// Viewer is a tool.Catalogue that can also say what the person has on screen now: the open external
// apps' "current view" note (internal/door/externalapps.Model). A session's instruction is the catalogue's
// instruction followed by that note: taken fresh when the session starts and again after every
// turn of the model, and sent in place of the previous one, so the model always holds exactly one
// description of the screen, the newest.
type Viewer interface {
	CurrentView(ctx context.Context) string
}

// view keeps one session's instruction in step with the catalogue and the current view.
type view struct {
	cat  tool.Catalogue
	mu   sync.Mutex // one refresh at a time
	last string     // the instruction the session was last given
	busy bool
}

// instruction returns the catalogue's instruction with the current view note, when there is one.
func (v *view) instruction(ctx context.Context) string {
	in := v.cat.Instruction()
	if vw, ok := v.cat.(Viewer); ok {
		if note := vw.CurrentView(ctx); note != "" {
			in += "\n\n" + note
		}
	}
	return in
}

// start returns the instruction a session starts with and remembers it.
func (v *view) start(ctx context.Context) string {
	in := v.instruction(ctx)
	v.mu.Lock()
	v.last = in
	v.mu.Unlock()
	return in
}

// update gives sess the current tools and instruction. With force (the tools changed) it sends
// them even when the instruction is the same; otherwise (a turn ended) only a changed instruction
// is sent, and never by a refresh still running for the previous turn. It returns what
// UpdateTools said, or nil when nothing was sent.
func (v *view) update(ctx context.Context, sess *live.Conversation, force bool) error {
	v.mu.Lock()
	if v.busy && !force {
		v.mu.Unlock()
		return nil
	}
	v.busy = true
	v.mu.Unlock()
	in := v.instruction(ctx)
	v.mu.Lock()
	v.busy = false
	same := in == v.last
	v.last = in
	v.mu.Unlock()
	if same && !force {
		return nil
	}
	return sess.UpdateTools(v.cat.Declarations(), in)
}

// afterTurn refreshes the note once the model finished a turn; a vendor that cannot change its
// instruction mid-session keeps the one it started with, silently (the tools-changed notice
// already tells the person about such vendors).
func (v *view) afterTurn(ctx context.Context, sess *live.Conversation) {
	if _, ok := v.cat.(Viewer); !ok || sess == nil {
		return
	}
	_ = v.update(ctx, sess, false)
}
