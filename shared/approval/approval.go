// Package approval holds the one deadline every request for a person's approval has, whatever
// asks: the assistant's delete and file-writing extension tools (relay/assistant) and an external
// mini-app's tools that change something (the page's gate, public/external-apps.js, which reads it
// from public/rules.js). One deadline means the person meets one rule, and the countdown the page
// shows means the same everywhere.
package approval

import (
	"time"

	"github.com/voicebox-go/voicebox/shared/channel"
)

// Timeout is how long a request waits for the person's decision; past it the request times out
// (approval-timed-out) and nothing happens.
const Timeout = 60 * time.Second

// OutcomeGrace is how long past an approval's deadline a page still waits for the outcome of a
// turn that waited for it (the relay answers such a turn at once with a pending handle and sends
// its outcome on the event stream): once approved, the call runs within the executor's call bound
// (channel.DefaultTimeout), and this leaves room beyond it. Past it, with no outcome seen, the
// page says outcome-unknown.
const OutcomeGrace = channel.DefaultTimeout + 15*time.Second
