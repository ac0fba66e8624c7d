// Package approval holds the one deadline every request for a person's approval has, whatever
// asks: the assistant's delete and file-writing extension tools (relay/assistant) and an external
// mini-app's tools that change something (the page's gate, public/external-apps.js, which reads it
// from public/rules.js). One deadline means the person meets one rule, and the countdown the page
// shows means the same everywhere.
package approval

import "time"

// Timeout is how long a request waits for the person's decision; past it the request times out
// (approval-timed-out) and nothing happens.
const Timeout = 60 * time.Second
