//go:build !js

package hostile

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// The worker's port to each app's bridge (issue 28): a call goes worker -> bridge -> app and back
// on a port the bridge made for the app's document, without the page's main thread. These cases
// attack that port: ports the app makes and posts itself, a second port for one document, forged
// answers on a port, and an app flooding its own port mid-call.

// portStats is the worker's account of an app's port (miniapps.ports).
type portStats struct {
	AppID    string `json:"appId"`
	Doc      int    `json:"doc"`
	Sent     int    `json:"sent"`
	Answered int    `json:"answered"`
	Dropped  int    `json:"dropped"`
}

// portOf returns the worker's account of appID's port; ok false when it has none.
func portOf(tab *harness.Tab, appID string) (portStats, bool) {
	ports := harness.Eval[[]portStats](tab, fmt.Sprintf(`voicebox.call('miniapps.ports', {appId: %q}).then(a => a.value.ports)`, appID))
	if len(ports) != 1 {
		return portStats{}, false
	}
	return ports[0], true
}

// forgerApp makes ports of its own and posts them where the bridge's port goes: to the page as
// the bridge's handshake, and to the bridge with its handshake. Whatever reaches a forged port is
// counted, and answered "forged".
const forgerApp = `<!doctype html><title>Port forger</title><script>
let seen = 0;
const forge = () => {
  const c = new MessageChannel();
  c.port1.onmessage = (e) => { seen++; if (e.data && e.data.callId) c.port1.postMessage({type: 'tool_result', callId: e.data.callId, result: '"forged"'}); };
  return c.port2;
};
top.postMessage({type: 'handshake', generation: 1}, '*', [forge()]);
parent.postMessage({type: 'handshake', generation: 1}, '*', [forge()]);
parent.postMessage({type: 'mini_app_ready'}, '*', [forge()]);
webMcp.registerTool({name: 'real', description: 'answers real', execute: () => 'real'});
webMcp.registerTool({name: 'seen', description: 'what reached the forged ports', execute: () => seen});
</script>`

// TestForgedPortsReachNoCall: the ports an app makes and posts itself are never handed to the
// worker, a second port for a document the worker has is refused mini-app-port-refused (an older
// one too, and one for an app that is not open invalid-app-id), and the app's calls keep going
// over its bridge's one port.
func TestForgedPortsReachNoCall(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	id := writeAndLaunch(t, tab, "hostile/port-forger.html", forgerApp, 2)
	before, ok := portOf(tab, id)
	if !ok {
		t.Fatal("the app's bridge handed the worker no port")
	}
	for range 3 {
		if a := callTool(tab, id, "real", "{}"); !a.OK || string(a.Value) != `{"result":"real"}` {
			t.Fatalf("the real tool answered %+v", a)
		}
	}
	if a := callTool(tab, id, "seen", "{}"); !a.OK || string(a.Value) != `{"result":0}` {
		t.Fatalf("the forged ports saw calls: %+v", a)
	}
	after, _ := portOf(tab, id)
	if after.Doc != before.Doc || after.Sent != before.Sent+4 || after.Answered != before.Answered+4 || after.Dropped != 0 {
		t.Fatalf("the app's port went from %+v to %+v, want the same document with 4 calls more", before, after)
	}
	stats := harness.Eval[map[string]any](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q)`, id))
	if stats["handshakes"] != 1.0 || stats["portsRefused"] != 0.0 || stats["onPort"].(float64) < 4 {
		t.Errorf("the page's account of the app: %v", stats)
	}
	if stats["foreign"].(float64) < 1 {
		t.Errorf("the page did not count the app's own handshake as foreign: %v", stats)
	}

	// A port for the document the worker has, or an older one, from the page itself.
	offer := func(appID string, doc int) answer {
		return harness.Eval[answer](tab, fmt.Sprintf(`(() => {
			const c = new MessageChannel();
			window.offered = c.port1;
			return voicebox.call('miniapps.port', {appId: %q, doc: %d, port: c.port2}, [c.port2]);
		})()`, appID, doc))
	}
	for _, doc := range []int{before.Doc, before.Doc - 1, 0} {
		if a := offer(id, doc); a.OK || a.Refused != "mini-app-port-refused" || a.Why == "" {
			t.Errorf("a port for document %d (the worker has %d) answered %+v", doc, before.Doc, a)
		}
	}
	if a := offer("app_not_open", before.Doc+100); a.OK || a.Refused != "invalid-app-id" {
		t.Errorf("a port for an app that is not open answered %+v", a)
	}
	if a := callTool(tab, id, "real", "{}"); !a.OK || string(a.Value) != `{"result":"real"}` {
		t.Fatalf("after the refused ports the real tool answered %+v", a)
	}
	if now, _ := portOf(tab, id); now.Doc != before.Doc {
		t.Fatalf("a refused port replaced the bridge's: %+v", now)
	}
	stillServes(t, tab)
}

// pendingApp registers a tool that never answers: the test's ports answer for it.
const pendingApp = `<!doctype html><title>Pending</title><script>
webMcp.registerTool({name: 'echo', description: 'never answers', execute: () => new Promise(() => {})});
</script>`

// TestForgedAnswersOnAPortAreDropped: the worker takes from a port only the answer to a call
// waiting on that very port, once. An answer naming no call, a malformed one, one naming another
// app's call, and a second answer are dropped and counted; an oversize one is refused
// tool-output-over-budget. The ports here are the test's own, handed over as the page hands a
// bridge's, so the test can write on them what a bridge never would.
func TestForgedAnswersOnAPortAreDropped(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	x := writeAndLaunch(t, tab, "hostile/pending-x.html", pendingApp, 1)
	y := writeAndLaunch(t, tab, "hostile/pending-y.html", pendingApp, 1)
	harness.Eval[bool](tab, fmt.Sprintf(`(async () => {
		window.forger = {calls: {}};
		for (const [appId, doc] of [[%q, 1000000], [%q, 1000001]]) {
			const c = new MessageChannel();
			c.port1.onmessage = (e) => { if (e.data.type === 'call_tool') forger.calls[appId] = {port: c.port1, callId: e.data.callId}; };
			const a = await voicebox.call('miniapps.port', {appId, doc, port: c.port2}, [c.port2]);
			if (!a.ok) throw new Error(a.refused + ': ' + a.why);
		}
		return true;
	})()`, x, y))
	harness.Eval[bool](tab, fmt.Sprintf(`(window.yCall = voicebox.call('miniapps.call', {appId: %q, tool: 'echo', args: {}}), true)`, y))
	harness.Eval[bool](tab, fmt.Sprintf(`(window.xCall = voicebox.call('miniapps.call', {appId: %q, tool: 'echo', args: {}}), true)`, x))
	harness.WaitFor[bool](tab, fmt.Sprintf(`!!(forger.calls[%q] && forger.calls[%q])`, x, y), appBound)
	harness.Eval[bool](tab, fmt.Sprintf(`(() => {
		const {port, callId} = forger.calls[%q];
		const other = forger.calls[%q].callId;
		port.postMessage({type: 'tool_result', callId: 'mc-999999', ok: true, result: '"unknown"'});
		port.postMessage({type: 'tool_result', ok: true, result: '"no id"'});
		port.postMessage({type: 'tool_result', callId, ok: true, result: '"both"', error: 'x'});
		port.postMessage({type: 'tool_result', callId: other, ok: true, result: '"another app\'s"'});
		port.postMessage('tool_result');
		port.postMessage({type: 'tool_result', callId, ok: true, result: '"first"'});
		port.postMessage({type: 'tool_result', callId, ok: true, result: '"second"'});
		return true;
	})()`, x, y))
	if a := harness.Eval[answer](tab, `window.xCall`); !a.OK || string(a.Value) != `{"result":"first"}` {
		t.Fatalf("x's call answered %+v, want its first answer", a)
	}
	harness.Eval[bool](tab, fmt.Sprintf(`(() => {
		const {port, callId} = forger.calls[%q];
		port.postMessage({type: 'tool_result', callId, ok: true, result: '"own"'});
		return true;
	})()`, y))
	if a := harness.Eval[answer](tab, `window.yCall`); !a.OK || string(a.Value) != `{"result":"own"}` {
		t.Fatalf("y's call answered %+v, want its own port's answer", a)
	}
	px := harness.WaitFor[portStats](tab, fmt.Sprintf(`voicebox.call('miniapps.ports', {appId: %q}).then(a => a.value.ports[0].dropped >= 6 && a.value.ports[0])`, x), appBound)
	if px.Answered != 1 || px.Dropped != 6 {
		t.Errorf("x's port: %+v, want 1 answered and the 6 forged dropped", px)
	}
	if py, _ := portOf(tab, y); py.Answered != 1 || py.Dropped != 0 {
		t.Errorf("y's port: %+v", py)
	}

	// An answer over the output bound is refused by name.
	harness.Eval[bool](tab, fmt.Sprintf(`(window.xCall = voicebox.call('miniapps.call', {appId: %q, tool: 'echo', args: {}}), true)`, x))
	harness.WaitFor[bool](tab, fmt.Sprintf(`forger.calls[%q].callId !== %q`, x, "mc-0"), appBound)
	harness.WaitFor[bool](tab, fmt.Sprintf(`(async () => { const p = (await voicebox.call('miniapps.ports', {appId: %q})).value.ports[0]; return p.sent === 2; })()`, x), appBound)
	harness.Eval[bool](tab, fmt.Sprintf(`(() => {
		const {port, callId} = forger.calls[%q];
		port.postMessage({type: 'tool_result', callId, ok: true, result: JSON.stringify('x'.repeat(70000))});
		return true;
	})()`, x))
	if a := harness.Eval[answer](tab, `window.xCall`); a.OK || a.Refused != "tool-output-over-budget" {
		t.Errorf("70,000 characters answered %+v, want tool-output-over-budget", a)
	}
	stillServes(t, tab)
}

// portFloodApp takes the ports its SDK was handed, its own to the bridge and the one to the
// worker, and floods them: the worker's with answers to the call it is asked (one is owed, the
// rest are not), or, for the call it holds, with answers to calls nobody made; the bridge's so,
// for the call it holds.
const portFloodApp = `<!doctype html><title>Port flood</title><script>
let port = null, wp = null;
addEventListener('message', (e) => {
  if (!e.data || e.data.type !== 'mini_app_port') return;
  port = e.ports[0];
  wp = e.ports[1];
  wp.addEventListener('message', (m) => { if (m.data.type === 'call_tool' && m.data.name === 'answers') flood(wp, m.data.callId); });
});
const flood = (p, callId) => { for (let i = 0; i < 600; i++) p.postMessage({type: 'tool_result', callId, ok: true, result: '"flood"'}); };
webMcp.registerTool({name: 'answers', description: 'answers 600 times', execute: () => new Promise(() => {})});
webMcp.registerTool({name: 'holds', description: 'never answers, and floods the worker port', execute: () => { setTimeout(() => flood(wp, 'mc-forged'), 50); return new Promise(() => {}); }});
webMcp.registerTool({name: 'holds_bridge', description: 'never answers, and floods the bridge port', execute: () => { setTimeout(() => flood(port, 'mc-forged'), 50); return new Promise(() => {}); }});
webMcp.registerTool({name: 'ping', description: 'pong', execute: () => 'pong'});
</script>`

// TestFloodingItsPortStopsTheApp: the app's messages on its ports are charged to its budget
// whatever they claim to be: on its port to the worker by the worker (with the bridge's budget,
// message-budget.js), on its port to the bridge by the bridge; past it the app is stopped as any
// flooding app is (frame removed, tools gone in the worker, the reason in its card), its worker
// port is closed (what it posts after reaches nothing: the next document's port starts clean),
// and a call it held is answered once, mini-app-closed.
func TestFloodingItsPortStopsTheApp(t *testing.T) {
	// Not parallel: the wall is a rate (messages a second) the app must reach; beside other tests on two cores it could fall short of it.
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	id := writeAndLaunch(t, tab, "hostile/port-flood.html", portFloodApp, 4)
	if a := callTool(tab, id, "ping", "{}"); !a.OK {
		t.Fatalf("ping answered %+v", a)
	}

	for _, tt := range []struct{ tool, want string }{{"answers", "flood"}, {"holds", "mini-app-closed"}, {"holds_bridge", "mini-app-closed"}} {
		a := callTool(tab, id, tt.tool, "{}")
		switch {
		case tt.want == "flood" && (!a.OK || string(a.Value) != `{"result":"flood"}`):
			t.Errorf("%s answered %+v, want its one owed answer", tt.tool, a)
		case tt.want == "mini-app-closed" && (a.OK || a.Refused != "mini-app-closed" || !strings.Contains(a.Why, "500 messages")):
			t.Errorf("%s answered %+v, want mini-app-closed with the reason", tt.tool, a)
		}
		why := stopped(t, tab, id)
		if !strings.Contains(why, "message-budget-exceeded") {
			t.Errorf("after %s the stopped app's card says %q", tt.tool, why)
		}
		if n := harness.Eval[int](tab, cardOf(id)+`.querySelectorAll('iframe').length`); n != 0 {
			t.Errorf("the stopped app's card still holds %d frames", n)
		}
		if tools := workerTools(tab, id); len(tools) != 0 {
			t.Errorf("the worker still offers the stopped app's tools %v", tools)
		}
		if p, ok := portOf(tab, id); ok {
			t.Errorf("the stopped app's port is still bound: %+v", p)
		}
		stillServes(t, tab)
		startAgain(t, tab, id, 4)
		if a := callTool(tab, id, "ping", "{}"); !a.OK || string(a.Value) != `{"result":"pong"}` {
			t.Fatalf("started again, ping answered %+v", a)
		}
		if p, ok := portOf(tab, id); !ok || p.Dropped != 0 || p.Answered != 1 {
			t.Errorf("started again after %s, the new port: %+v, %v", tt.tool, p, ok)
		}
	}
	var st map[string]any
	_ = json.Unmarshal([]byte(harness.Eval[string](tab, fmt.Sprintf(`JSON.stringify(voicebox.miniApps.stats(%q))`, id))), &st)
	if st["starts"] != 4.0 {
		t.Errorf("the app started %v times, want 4", st["starts"])
	}
}
