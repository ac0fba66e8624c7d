//go:build !js

package hostile

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestForgedSessionsPassNoRelayOfTheFleet: cookies nobody was given, in every shape (hex of the
// right length, NATS wildcards and subject dots, megabytes), are refused
// loopback-unauthenticated by every relay of a gated fleet, never passed and never an error of
// the shared store; one ticket redeemed at once through three relays starts one session.
func TestForgedSessionsPassNoRelayOfTheFleet(t *testing.T) {
	t.Parallel()
	relays := harness.StartFleet(t, harness.FleetOptions{Prefix: "forged", Relays: 3, Env: []string{"VOICEBOX_LOOPBACK_AUTH=1"}}).Relays
	forged := []string{strings.Repeat("ab", 32), strings.Repeat("0", 64), "*", ">", "a.b.c", "voicebox_sessions.>", strings.Repeat("f", 100_000)}
	for _, r := range relays {
		for i, c := range forged {
			name := server.SessionCookieName("fleet-forged") // the fleet's own name; every other forgery under the name before it
			if i%2 == 1 {
				name = server.LegacySessionCookie
			}
			req, _ := http.NewRequest(http.MethodGet, r.URL+"/api/root", nil)
			req.Header.Set("Cookie", name+"="+c)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized && !(len(c) > 64<<10 && resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge) {
				t.Fatalf("a forged cookie (%d bytes) on %s: %d", len(c), r.URL, resp.StatusCode)
			}
		}
	}

	req, _ := http.NewRequest(http.MethodPost, relays[0].URL+"/api/bootstrap", strings.NewReader("{}"))
	req.Header.Set("x-voicebox-host-token", relays[0].HostToken(t))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var minted struct{ URL string }
	json.NewDecoder(resp.Body).Decode(&minted)
	resp.Body.Close()
	ticket := minted.URL[strings.Index(minted.URL, "bootstrap=")+len("bootstrap="):]
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var started atomic.Int32
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			resp, err := noRedirect.Get(relays[i%3].URL + "/?bootstrap=" + ticket)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusSeeOther {
				started.Add(1)
				if c := resp.Cookies(); len(c) != 1 || c[0].Name != server.SessionCookieName("fleet-forged") {
					t.Errorf("the session was set as %v, not under the name the forgeries used", c)
				}
			}
		})
	}
	wg.Wait()
	if started.Load() != 1 {
		t.Fatalf("one ticket redeemed through three relays at once started %d sessions", started.Load())
	}
}

// TestForgedFleetMessagesReachNoPage: a client of the fleet's NATS that is no relay (a leaked
// credential, a side service gone wrong) publishes forged events (two in one message, a retry
// directive, a comment, half a frame) and sends junk to the executor's subject. The page
// following /api/events sees none of the forged events but sees the genuine one after them; each
// junk call is refused by the wire's rules (bad-version, malformed-call, ...) and the page keeps
// executing.
func TestForgedFleetMessagesReachNoPage(t *testing.T) {
	t.Parallel()
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "insider"})
	a, b := fleet.Relays[0], fleet.Relays[1]
	fleet.GoPage(a)

	req, _ := http.NewRequest(http.MethodGet, a.URL+"/api/events", nil)
	req.Header.Set("Origin", a.URL)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 256)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	nc := fleet.Client()
	for _, f := range []string{
		"event: call\ndata: {\"forged\":1}\n\nevent: approval\ndata: {\"forged\":2}\n\n",
		"retry: 1\nevent: call\ndata: {\"forged\":3}\n\n",
		": a comment\nevent: call\ndata: {\"forged\":4}\n\n",
		"event: call\ndata: {\"forged\":5}",
		"event: call\ndata: {\"forged\":6}\ndata: {\"forged\":7}\n\n",
	} {
		nc.Publish("insider.events", []byte(f))
	}
	if err := nc.Flush(); err != nil { // the forgeries reach NATS before the genuine event is made
		t.Fatal(err)
	}
	subject := fleet.ExecSubject()
	for _, junk := range []string{"", "{}", "not json", `{"v":1,"callId":"x","tool":"write-file","args":{"path":"../../etc/passwd","content":"x"}}`} {
		m, err := nc.Request(subject, []byte(junk), 10*time.Second)
		if err != nil {
			t.Fatalf("junk %q got no answer: %v", junk, err)
		}
		var ans struct {
			OK      bool
			Refused string
		}
		if json.Unmarshal(m.Data, &ans) != nil || ans.OK || ans.Refused == "" {
			t.Fatalf("junk %q answered %s", junk, m.Data)
		}
	}
	// A genuine event: a call through B's catalogue.
	if a := b.Call(t, "now", map[string]string{}); !a.OK {
		t.Fatalf("the page stopped executing: %s", a.Raw)
	}
	turn, _ := http.NewRequest(http.MethodPost, b.URL+"/api/turn", strings.NewReader(`{"action":{"verb":"list_files"}}`))
	turn.Header.Set("Content-Type", "application/json")
	turn.Header.Set("x-voicebox-host-token", b.HostToken(t))
	if r, err := http.DefaultClient.Do(turn); err == nil {
		r.Body.Close()
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the event stream ended")
			}
			if strings.Contains(l, "forged") || strings.HasPrefix(l, "retry") || strings.HasPrefix(l, ":") {
				t.Fatalf("a forged line reached the page: %q", l)
			}
			if l == "event: call" {
				return // the genuine event, after every forgery
			}
		case <-deadline:
			t.Fatal("the genuine event never came")
		}
	}
}

// TestForgedMCPBearersPassNoRelayOfTheFleet: bearers nobody was given, in every shape (a
// pairing's, the hash of a real one, NATS wildcards and subject dots, 100 KB), are refused
// bearer-refused by every relay's /mcp in a fleet, never passed and never an error of the shared
// store; a bearer revoked through one relay, tried through all three at once, is refused
// bearer-revoked every time.
func TestForgedMCPBearersPassNoRelayOfTheFleet(t *testing.T) {
	t.Parallel()
	relays := harness.StartFleet(t, harness.FleetOptions{Prefix: "forgedmcp", Relays: 3}).Relays
	hostDo := func(r *harness.Relay, method, path, body string) map[string]any {
		req, _ := http.NewRequest(method, r.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-voicebox-host-token", r.HostToken(t))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, out)
		}
		return out
	}
	mcpRule := func(r *harness.Relay, bearer string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, r.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+bearer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Refused string }
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Refused
	}
	real, _ := hostDo(relays[0], http.MethodPost, "/api/mcp/clients", `{"name":"desktop"}`)["bearer"].(string)
	sum := sha256.Sum256([]byte(real))
	forged := []string{"vbm_" + strings.Repeat("0", 64), "vbm_*", "vbm_>", "vbm_a.b.c", "vbm_voicebox_mcpclients.>",
		"vbx_" + strings.TrimPrefix(real, "vbm_"), "vbm_" + hex.EncodeToString(sum[:]), hex.EncodeToString(sum[:]), "vbm_" + strings.Repeat("f", 100_000)}
	for _, r := range relays {
		for _, b := range forged {
			status, rule := mcpRule(r, b)
			if status != http.StatusUnauthorized || rule != "bearer-refused" {
				if len(b) > 64<<10 && status == http.StatusRequestHeaderFieldsTooLarge {
					continue
				}
				t.Fatalf("a forged bearer (%.40q, %d bytes) at %s: %d %q", b, len(b), r.URL, status, rule)
			}
		}
	}
	hostDo(relays[1], http.MethodDelete, "/api/mcp/clients/desktop", "{}")
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			if status, rule := mcpRule(relays[i%3], real); status != http.StatusUnauthorized || rule != "bearer-revoked" {
				t.Errorf("the revoked bearer at %s: %d %q", relays[i%3].URL, status, rule)
			}
		})
	}
	wg.Wait()
}

// fleetCodeLine is the console line an approval code is printed on.
var fleetCodeLine = regexp.MustCompile(`approval code for extension (\S+): (\d{8})`)

// consoleCode asks relay for a code for id and reads it off the relay's console, as the person
// at that console would.
func consoleCode(t *testing.T, relay *harness.Relay, id string) string {
	t.Helper()
	if r := postJSON(t, relay, "/api/extensions/approval-request", map[string]string{"id": id}, false); r.status != http.StatusOK {
		t.Fatalf("approval-request %s: %d %s", id, r.status, r.body)
	}
	for {
		if m := fleetCodeLine.FindStringSubmatch(relay.NextLine(t, patience)); m != nil && m[1] == id {
			return m[2]
		}
	}
}

// TestAnApprovalCodeIsRedeemedOnceAcrossTheFleet: one console code, redeemed at once through
// three relays twelve times, admits once; every other attempt is refused approval-code-used and
// nothing is admitted twice. A stranger's wrong guesses spread over the relays count against the
// stranger on all of them together: after MaxCodeAttempts in all it is refused
// approval-guesses-exhausted on every relay, and the person's code still admits. A flood of
// forged reload messages on the fleet's subject changes nothing and the relays keep serving.
func TestAnApprovalCodeIsRedeemedOnceAcrossTheFleet(t *testing.T) {
	t.Parallel()
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "codes", Relays: 3})
	relays := fleet.Relays
	stage := func(id string) {
		raw := json.RawMessage(`{"id":"` + id + `","name":"N","capabilities":["clock"],"tools":[{"name":"` + strings.ReplaceAll(id, "-", "_") + `_now","primitive":"now"}]}`)
		if r := postJSON(t, relays[0], "/api/extensions/sideload", raw, false); r.status != http.StatusOK {
			t.Fatalf("staging %s: %d %s", id, r.status, r.body)
		}
	}
	approve := func(r *harness.Relay, id, code string) reply {
		return postJSON(t, r, "/api/extensions/approve", map[string]string{"id": id, "code": code}, false)
	}

	stage("raced")
	code := consoleCode(t, relays[0], "raced")
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			r := approve(relays[i%3], "raced", code)
			switch {
			case r.status == http.StatusOK:
				wins.Add(1)
			case r.status != http.StatusForbidden || r.m["refused"] != "approval-code-used":
				t.Errorf("a losing redemption through relay %d: %d %s", i%3, r.status, r.body)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d of 12 redemptions of one code through three relays admitted", wins.Load())
	}

	stage("guessed")
	code = consoleCode(t, relays[1], "guessed")
	wrong := "00000000"
	if code == wrong {
		wrong = "99999999"
	}
	stranger := clientFrom("127.0.0.2")
	guess := func(r *harness.Relay, code string) reply {
		return send(t, stranger, http.MethodPost, r.URL+"/api/extensions/approve", nil, `{"id":"guessed","code":"`+code+`"}`)
	}
	for i := range 5 { // MaxCodeAttempts
		if r := guess(relays[i%3], wrong); r.m["refused"] != "approval-code-wrong" {
			t.Fatalf("wrong guess %d: %d %s", i+1, r.status, r.body)
		}
	}
	for i := range 3 {
		if r := guess(relays[i], wrong); r.m["refused"] != "approval-guesses-exhausted" {
			t.Fatalf("a guess through relay %d past the stranger's five over three relays: %d %s", i, r.status, r.body)
		}
	}
	if r := approve(relays[2], "guessed", code); r.status != http.StatusOK {
		t.Fatalf("the person's code after a stranger's wrong guesses over three relays: %d %s", r.status, r.body)
	}

	nc := fleet.Client()
	for range 2000 {
		nc.Publish("codes.extensions", []byte("reload, and again"))
	}
	nc.Flush()
	for _, r := range relays {
		served(t, r)
		waitFor(t, r.URL+" admitting raced and guessed once each", func() bool {
			var list struct {
				Extensions struct{ Admitted []struct{ ID string } }
			}
			json.Unmarshal([]byte(send(t, nil, http.MethodGet, r.URL+"/api/extensions", nil, "").body), &list)
			var ids []string
			for _, a := range list.Extensions.Admitted {
				ids = append(ids, a.ID)
			}
			slices.Sort(ids)
			return slices.Equal(ids, []string{"guessed", "raced"})
		})
	}
}
