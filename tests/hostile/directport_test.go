//go:build !js

package hostile

import (
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// The worker's port to each app's document (issue 38): the bridge hands one end of a channel to
// the app's document and the other, through the page, to the worker, and steps off the call's
// path. What the bridge held for such a call the worker holds on that port: the message budget
// (TestFloodingItsPortStopsTheApp), one answer per call, the answer's shape, the deadline, and
// whatever else the app posts there refused by name.

// portRefusals is the worker's account of an app's port, with its refusals by rule.
type portRefusals struct {
	portStats
	Refused map[string]int `json:"refused"`
	Samples []struct {
		Rule string `json:"rule"`
		Why  string `json:"why"`
	} `json:"samples"`
}

// answersApp keeps the worker's port its SDK was handed (the second port of mini_app_port) and
// posts on it what an answer never is: a second answer, answers to calls never made, strings,
// objects of no answer's shape, a refusal in the old bridge's words; its tools answer through the
// SDK meanwhile.
const answersApp = `<!doctype html><title>Port answers</title><script>
let wp = null, last = '';
addEventListener('message', (e) => {
  if (!e.data || e.data.type !== 'mini_app_port' || e.ports.length !== 2) return;
  wp = e.ports[1];
  wp.addEventListener('message', (m) => {
    if (!m.data || m.data.type !== 'call_tool') return;
    last = m.data.callId;
    if (m.data.name === 'twice') setTimeout(() => wp.postMessage({type: 'tool_result', callId: last, ok: true, result: '"second"'}), 20);
    if (m.data.name === 'claims_timeout') {
      wp.postMessage({type: 'tool_result', callId: last, refused: 'tool-timeout', why: 'says the app'});
      wp.postMessage({type: 'tool_result', callId: last, ok: false, error: 'tool-timeout', refused: 'tool-timeout'});
    }
  });
});
webMcp.registerTool({name: 'twice', description: 'answers twice', execute: () => 'first'});
webMcp.registerTool({name: 'junk', description: 'posts junk on the worker port, then answers', execute: () => {
  wp.postMessage('a string');
  wp.postMessage({type: 'tool_result'});
  wp.postMessage({type: 'register_tool', tool: {name: 'sneaky', description: 'registered on the wrong port'}});
  wp.postMessage({type: 'tool_result', callId: 'mc-99999999', ok: true, result: '"never asked"'});
  wp.postMessage({type: 'tool_result', callId: last, ok: true, error: 'both'});
  return 'done';
}});
webMcp.registerTool({name: 'claims_timeout', description: 'names its own refusal', execute: () => new Promise(() => {})});
</script>`

// TestTheWorkersPortTakesOneShapedAnswerPerCall: on the port its document holds to the worker, an
// app answers a call twice, answers a call never made, posts a string, an object without a call
// id, a registration, an answer with both a result and an error, and a refusal naming its own
// rule. Each call gets exactly one answer (the first; a failure is exec-threw whatever rule the
// app names, and does not stop it); the rest are refused by name (malformed-answer,
// mini-app-unsolicited-answer), counted, and never reach a call; the app and the page serve on.
func TestTheWorkersPortTakesOneShapedAnswerPerCall(t *testing.T) {
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	id := writeAndLaunch(t, tab, "hostile/port-answers.html", answersApp, 3)
	if a := callTool(tab, id, "twice", "{}"); !a.OK || string(a.Value) != `{"result":"first"}` {
		t.Fatalf("twice answered %+v, want its first answer", a)
	}
	if a := callTool(tab, id, "junk", "{}"); !a.OK || string(a.Value) != `{"result":"done"}` {
		t.Fatalf("junk answered %+v", a)
	}
	if a := callTool(tab, id, "claims_timeout", "{}"); a.OK || a.Refused != "exec-threw" || !strings.Contains(a.Why, "tool-timeout") {
		t.Fatalf("claims_timeout answered %+v, want exec-threw saying what the app said", a)
	}
	p := harness.WaitFor[portRefusals](tab, fmt.Sprintf(`voicebox.call('miniapps.ports', {appId: %q}).then(a => a.value.ports[0].dropped >= 7 && a.value.ports[0])`, id), appBound)
	if p.Sent != 3 || p.Answered != 3 || p.Dropped != 7 || p.Refused["malformed-answer"] != 5 || p.Refused["mini-app-unsolicited-answer"] != 2 {
		t.Errorf("the app's port: %+v, want 3 calls answered once each, 5 malformed-answer and 2 mini-app-unsolicited-answer", p)
	}
	never := false
	for _, s := range p.Samples {
		never = never || (s.Rule == "mini-app-unsolicited-answer" && strings.Contains(s.Why, "no call mc-99999999 waits on this port"))
	}
	if !never || len(p.Samples) != 5 {
		t.Errorf("the port's samples %+v, want the first five, the call never made among them", p.Samples)
	}
	if tools := workerTools(tab, id); len(tools) != 3 {
		t.Errorf("the worker holds the app's tools %v, want its 3 (none registered on the worker's port)", tools)
	}
	if st := harness.Eval[map[string]any](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q)`, id)); st["stopped"] != nil {
		t.Errorf("the app was stopped: %v", st["stopped"])
	}
	if a := callTool(tab, id, "twice", "{}"); !a.OK || string(a.Value) != `{"result":"first"}` {
		t.Fatalf("twice, again, answered %+v", a)
	}
	stillServes(t, tab)
}

// lateApp answers a call after the call's deadline, and hands the worker's port to the page and
// its bridge dressed as their handshakes.
const lateApp = `<!doctype html><title>Port late</title><script>
let wp = null;
addEventListener('message', (e) => { if (e.data && e.data.type === 'mini_app_port' && e.ports.length === 2) wp = e.ports[1]; });
webMcp.registerTool({name: 'late', description: 'answers after the deadline', execute: () => new Promise((r) => setTimeout(() => r('late'), 5600))});
webMcp.registerTool({name: 'give_away', description: 'gives its worker port away', execute: () => {
  top.postMessage({type: 'handshake', generation: 99}, '*', [wp]);
  return new Promise(() => {});
}});
webMcp.registerTool({name: 'ping', description: 'pong', execute: () => 'pong'});
</script>`

// TestACallOnTheWorkersPortEndsAtItsDeadline: with the bridge off the call's path, the worker's
// deadline is the call's. An app that answers after it, and one that gives its port to the page
// dressed as its bridge's handshake (the page takes ports from the bridge's window only), each get
// one answer, tool-timeout, at the deadline; the app is stopped as any app whose call expired is
// (tool-timeout on its card, its port closed, so the late answer reaches nothing); the page bound
// no second port; Start again serves the next call.
func TestACallOnTheWorkersPortEndsAtItsDeadline(t *testing.T) {
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	id := writeAndLaunch(t, tab, "hostile/port-late.html", lateApp, 3)
	for i, tool := range []string{"late", "give_away"} {
		before, ok := portOf(tab, id)
		if !ok {
			t.Fatalf("before %s the app has no port", tool)
		}
		if a := callTool(tab, id, tool, "{}"); a.OK || a.Refused != "tool-timeout" {
			t.Fatalf("%s answered %+v, want tool-timeout", tool, a)
		}
		if why := stopped(t, tab, id); !strings.Contains(why, "tool-timeout") {
			t.Errorf("after %s the card says %q", tool, why)
		}
		if p, ok := portOf(tab, id); ok {
			t.Errorf("after %s the stopped app's port is still bound: %+v", tool, p)
		}
		st := harness.Eval[map[string]any](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q)`, id))
		if st["handshakes"] != float64(i+1) || st["portsRefused"] != 0.0 {
			t.Errorf("after %s the page took a port it was not handed by the bridge: %v (the port before: %+v)", tool, st, before)
		}
		stillServes(t, tab)
		startAgain(t, tab, id, 3)
		if a := callTool(tab, id, "ping", "{}"); !a.OK || string(a.Value) != `{"result":"pong"}` {
			t.Fatalf("started again after %s, ping answered %+v", tool, a)
		}
		if p, ok := portOf(tab, id); !ok || p.Dropped != 0 || p.Answered != 1 {
			t.Errorf("the new document's port: %+v, %v (nothing of the old one's may reach it)", p, ok)
		}
	}
}
