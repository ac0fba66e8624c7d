//go:build !js

package harness

import (
	"testing"
	"time"
)

// ReadyBound bounds how long the page may take to start its worker and say ready, and the other
// waits of an end-to-end test for something the relay or the page does on its own.
const ReadyBound = 30 * time.Second

// WorkspaceReady is the page's readiness signal every browser's tests wait for: the worker says
// ready, and the workspace is open and listed.
const WorkspaceReady = `document.querySelector('#status').dataset.state === 'ready' &&
	!document.querySelector('#new-file').disabled &&
	document.querySelector('#file-list').children.length > 0`

// OpenWorkspace loads the page at url in tab and waits until the file browser shows browser
// storage.
func OpenWorkspace(t testing.TB, tab *Tab, url string) {
	t.Helper()
	tab.Navigate(url)
	WaitFor[bool](tab, WorkspaceReady, ReadyBound)
}

// Clip shortens an answer quoted in a failure.
func Clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}
