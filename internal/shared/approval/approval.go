// Package approval holds the one deadline every request for a person's approval has, whatever
// asks: the assistant's delete and file-writing extension tools (internal/core/assistant) and an external
// mini-app's tools that change something (the page's gate, public/external-apps.js, which reads it
// from public/rules.js). One deadline means the person meets one rule, and the countdown the page
// shows means the same everywhere.
package approval

import (
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/channel"
)

// Timeout is how long a request waits for the person's decision; past it the request times out
// (approval-timed-out) and nothing happens.
const Timeout = 60 * time.Second

// RunBound is how long a turn the page was answered at once (a pending handle, internal/core/assistant)
// may still run past its approval's wait: once approved, the call runs within the executor's call
// bound (channel.DefaultTimeout) and the extensions' own; past RunBound the relay ends the turn,
// which then answers as a cancelled call does. It ends before the page stops waiting
// (OutcomeGrace), so the page always hears the turn's one outcome.
const RunBound = channel.DefaultTimeout

// OutcomeGrace is how long past an approval's wait the page still waits for the outcome of a turn
// that waited for it (the relay answers such a turn at once with a pending handle and sends its
// outcome on the event stream). It is RunBound and room for the outcome to travel; past it, with
// no outcome seen (the page's stream broke for longer than that), the page says outcome-unknown.
const OutcomeGrace = RunBound + 15*time.Second

// MaxLiveRuns bounds the fleet's live relay runs an event stream lists to the page (the hello's
// and the runs event's "runs", internal/door/fleet.Events.LiveRuns): a page's turn pending
// approval whose run is not among a complete list is lost at once, instead of after Timeout and
// OutcomeGrace. A fleet with more live runs lists none, and the page waits as it would without
// the list; the page takes no longer list either.
const MaxLiveRuns = 64
