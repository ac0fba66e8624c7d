//go:build !js

package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

func relayBuild(t *testing.T, relay *harness.Relay) string {
	t.Helper()
	resp, err := http.Get(relay.URL + "/api/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var health struct {
		OK    bool   `json:"ok"`
		Build string `json:"build"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &health); err != nil || !health.OK || health.Build == "" {
		t.Fatalf("health = %s (%v)", b, err)
	}
	return health.Build
}

func TestPageBootsGoInAWorkerAndSaysReady(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	build := relayBuild(t, relay)
	tab := harness.NewTab(t)
	tab.Navigate(relay.URL)

	status := harness.WaitFor[string](tab, `document.querySelector('#status').dataset.state !== 'loading' && document.querySelector('#status').textContent`, readyBound)
	if want := "ready · build " + build; status != want {
		t.Fatalf("status = %q, want %q", status, want)
	}

	type result struct {
		OK      bool            `json:"ok"`
		Value   json.RawMessage `json:"value"`
		Refused string          `json:"refused"`
		Why     string          `json:"why"`
	}
	got := harness.Eval[result](tab, `voicebox.call('status')`)
	var st struct {
		Build string `json:"build"`
		Go    string `json:"go"`
	}
	if !got.OK || json.Unmarshal(got.Value, &st) != nil || st.Build != build || !strings.HasPrefix(st.Go, "go1.") {
		t.Fatalf("status call answered %+v (%s)", got, got.Value)
	}
	if got := harness.Eval[result](tab, `voicebox.call('no-such-method')`); got.OK || got.Refused != "unknown-method" || got.Why == "" {
		t.Fatalf("unknown method answered %+v", got)
	}
	// Every panel is a card of its own in the workspace's grid, none inside another.
	if nested := harness.Eval[[]string](tab, `[...document.querySelectorAll('section.panel')]
		.filter(s => s.parentElement !== document.querySelector('main.workspace')).map(s => s.id)`); len(nested) != 0 {
		t.Fatalf("panels nested inside another panel: %v", nested)
	}
}

func TestPageIsServedWithItsHeaders(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	tab.Navigate(relay.URL)
	type probe struct {
		Encoding string `json:"encoding"`
		Type     string `json:"type"`
		Bytes    int    `json:"bytes"`
	}
	got := harness.Eval[probe](tab, `fetch('/voicebox.wasm').then(async r => ({
		encoding: r.headers.get('content-encoding') || '',
		type: r.headers.get('content-type') || '',
		bytes: (await r.arrayBuffer()).byteLength,
	}))`)
	if got.Encoding != "br" || got.Type != "application/wasm" || got.Bytes < 1<<20 {
		t.Fatalf("the browser got the wasm as %+v, want br-encoded application/wasm that decodes to over 1 MiB", got)
	}
	// The policy forbids inline script: a script injected into the page must not run (and the
	// browser reports the violation, which this test expects).
	tab.Allow(`violates the following Content Security Policy directive 'script-src`)
	ran := harness.Eval[bool](tab, `new Promise(resolve => {
		window.__inlineRan = false;
		const s = document.createElement('script');
		s.textContent = 'window.__inlineRan = true';
		document.head.appendChild(s);
		setTimeout(() => resolve(window.__inlineRan), 50);
	})`)
	if ran {
		t.Fatal("an inline script ran despite the Content-Security-Policy")
	}
}
