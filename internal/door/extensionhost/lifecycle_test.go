package extensionhost

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// auditLines reads the audit log of f's directory.
func (f *fixture) auditLines() []AuditRecord {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, AuditFile))
	if err != nil {
		f.t.Fatalf("no audit log: %v", err)
	}
	var out []AuditRecord
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		var r AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			f.t.Fatalf("an audit line is not JSON: %s", sc.Text())
		}
		out = append(out, r)
	}
	return out
}

// audited reports whether the log has a record of act on id with that decision and rule.
func (f *fixture) audited(act, id, decision, rule string) bool {
	for _, r := range f.auditLines() {
		if r.Act == act && r.ID == id && r.Decision == decision && string(r.Rule) == rule {
			return true
		}
	}
	return false
}

func (f *fixture) ledger() []LedgerEntry {
	b, _ := os.ReadFile(filepath.Join(f.dir, LedgerFile))
	var out []LedgerEntry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e LedgerEntry
		if json.Unmarshal([]byte(line), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// presentNotAdmitted returns the listing's rule for id among the files not running, or "".
func (f *fixture) notRunning(id string) string {
	_, m, _ := f.do("GET", "/api/extensions", "", "")
	exts, _ := m["extensions"].(map[string]any)
	list, _ := exts["presentNotAdmitted"].([]any)
	for _, p := range list {
		if p := p.(map[string]any); p["id"] == id {
			return p["refused"].(string)
		}
	}
	return ""
}

const clockRaw = `{"id":"clock","name":"Clock","source":"model","runsIn":"host","capabilities":[],"bounds":{},"tools":[{"name":"clock_now","description":"The time.","primitive":"now","params":{}}]}`

// TestADroppedDescriptorIsAdmittedWhereItLies: a descriptor put straight into the state
// directory is listed present-not-admitted at once and never runs; the host can read its plan
// and admit it where it lies (a ledger line, no copy), or deny it (a ledger line, still present).
func TestADroppedDescriptorIsAdmittedWhereItLies(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	os.WriteFile(filepath.Join(f.dir, "clock.json"), []byte(clockRaw), 0o600)
	os.WriteFile(filepath.Join(f.dir, "other.json"), []byte(strings.ReplaceAll(clockRaw, "clock", "other")), 0o600)
	if got := f.notRunning("clock"); got != "present-not-admitted" {
		t.Fatalf("a dropped file is listed %q, want present-not-admitted (without a reload)", got)
	}
	if m := f.call("clock", "clock_now", `{}`); m["refused"] != "not-admitted" {
		t.Fatalf("a dropped file ran: %v", m)
	}
	if code, _, body := f.do("GET", "/api/extensions/proposals/clock/plan", "", ""); code != 200 || !strings.Contains(body, `"hash"`) {
		t.Fatalf("the plan of a present file: %d %s", code, body)
	}
	if code, m, _ := f.do("POST", "/api/extensions/admit", "", `{"id":"clock","decision":"admit","confirm":true}`); code != 403 || m["refused"] != "host-token-required" {
		t.Fatalf("admitting without the host token: %d %v", code, m)
	}
	if code, _, body := f.do("POST", "/api/extensions/admit", "tok", `{"id":"clock","decision":"admit","confirm":true}`); code != 200 {
		t.Fatalf("admit where it lies: %d %s", code, body)
	}
	if m := f.call("clock", "clock_now", `{}`); m["ok"] != true || f.asked[len(f.asked)-1].Tool != "now" {
		t.Fatalf("the admitted clock: %v", m)
	}
	l := f.ledger()
	if last := l[len(l)-1]; last.Action != "admit" || last.ID != "clock" || last.By != "host-token" || len(last.Hash) != 64 {
		t.Fatalf("the ledger line: %+v", last)
	}
	if f.notRunning("clock") != "" {
		t.Fatal("an admitted file is still listed as not running")
	}
	if !f.audited(ActAdmit, "clock", Allow, "") {
		t.Fatal("the admission is not audited")
	}

	if code, m, _ := f.do("POST", "/api/extensions/admit", "tok", `{"id":"other","decision":"deny"}`); code != 200 || m["decision"] != "deny" {
		t.Fatalf("deny: %d %v", code, m)
	}
	if l := f.ledger(); l[len(l)-1].Action != "deny" || l[len(l)-1].ID != "other" {
		t.Fatalf("the deny line: %+v", l[len(l)-1])
	}
	if f.notRunning("other") != "present-not-admitted" || !f.audited(ActDeny, "other", Refuse, "") {
		t.Fatal("a denied file is present-not-admitted, and the denial audited")
	}
	// A file whose name is not its id is never admitted under the name.
	os.WriteFile(filepath.Join(f.dir, "alias.json"), []byte(clockRaw), 0o600)
	if _, m, _ := f.do("POST", "/api/extensions/admit", "tok", `{"id":"alias","decision":"admit","confirm":true}`); m["refused"] != "bad-descriptor" {
		t.Fatalf("a file under another id's name: %v", m)
	}
}

// TestAnAdmissionWhoseFileIsGone: an admitted descriptor removed by hand stops at once (its next
// call is refused descriptor-missing, with no reload, and the executors are sent an admitted set
// without it) and is listed once, as not running; revoked, it is listed no more.
func TestAnAdmissionWhoseFileIsGone(t *testing.T) {
	t.Parallel()
	for _, first := range []string{"a call", "the listing"} {
		t.Run("seen first by "+first, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.admit(clockRaw)
			var frames []string
			f.g.Publish = func(b []byte) { frames = append(frames, string(b)) }
			if m := f.call("clock", "clock_now", `{}`); m["ok"] != true {
				t.Fatalf("the admitted clock: %v", m)
			}
			os.Remove(filepath.Join(f.dir, "clock.json"))
			if first == "the listing" {
				f.listedOnce(t, "clock", "descriptor-missing")
			}
			// Its rule when the call is the first to see it; once the listing stopped it, it is
			// not admitted like any other id.
			want := map[string]string{"a call": "descriptor-missing", "the listing": "not-admitted"}[first]
			if m := f.call("clock", "clock_now", `{}`); m["refused"] != want {
				t.Fatalf("a call after the file was removed: %v; want %s", m, want)
			}
			if len(frames) == 0 || strings.Contains(frames[len(frames)-1], `"clock"`) {
				t.Fatalf("the executors were not sent an admitted set without it: %q", frames)
			}
			f.listedOnce(t, "clock", "descriptor-missing")
			f.do("POST", "/api/extensions/revoke", "", `{"id":"clock"}`)
			if got := f.notRunning("clock"); got != "" {
				t.Fatalf("a revoked admission is still listed: %q", got)
			}
		})
	}
}

// TestAnAdmissionEditedByHandStopsAtOnce: an admitted descriptor edited by hand (its bytes no
// longer the admitted plan's) stops at its next call, refused present-not-admitted, and is
// listed once; put back as admitted, it runs again.
func TestAnAdmissionEditedByHandStopsAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.admit(clockRaw)
	p := filepath.Join(f.dir, "clock.json")
	was, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(clockRaw, "The time.", "The time, and more.", 1)), 0o600)
	if m := f.call("clock", "clock_now", `{}`); m["refused"] != "present-not-admitted" {
		t.Fatalf("a call after the file was edited: %v", m)
	}
	f.listedOnce(t, "clock", "present-not-admitted")
	os.WriteFile(p, was, 0o600)
	if got := f.notRunning("clock"); got != "" {
		t.Fatalf("put back as admitted, it is listed %q", got)
	}
	if m := f.call("clock", "clock_now", `{}`); m["ok"] != true {
		t.Fatalf("put back as admitted, it does not run: %v", m)
	}
}

// listedOnce fails unless id is listed exactly once: among the files not running, with rule,
// and not as admitted.
func (f *fixture) listedOnce(t *testing.T, id, rule string) {
	t.Helper()
	_, m, body := f.do("GET", "/api/extensions", "", "")
	exts, _ := m["extensions"].(map[string]any)
	admitted, _ := exts["admitted"].([]any)
	for _, a := range admitted {
		if a.(map[string]any)["id"] == id {
			t.Fatalf("%s is listed admitted too: %s", id, body)
		}
	}
	n := 0
	for _, p := range exts["presentNotAdmitted"].([]any) {
		if p := p.(map[string]any); p["id"] == id {
			n++
			if p["refused"] != rule {
				t.Fatalf("%s is listed %v, want %s", id, p["refused"], rule)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%s is listed %d times among those not running: %s", id, n, body)
	}
}

// TestRefusalsAreAudited: a refused staging, a refused admission and refused calls each leave a
// record with their rule, as the original's audit does; answered calls leave what they observed.
func TestRefusalsAreAudited(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.do("POST", "/api/extensions/sideload", "", `{"id":"shell","name":"Shell","capabilities":["exec"],"tools":[{"name":"sh","primitive":"now"}]}`)
	f.admit(clockRaw)
	dup := strings.ReplaceAll(strings.Replace(clockRaw, `"id":"clock"`, `"id":"clock2"`, 1), `"name":"Clock"`, `"name":"Clock 2"`)
	f.do("POST", "/api/extensions/sideload", "", dup)
	f.do("POST", "/api/extensions/admit", "tok", `{"id":"clock2","decision":"admit","confirm":true}`)
	f.call("nothing", "t", `{}`)
	f.call("clock", "clock_now", `{"extra":1}`)
	f.call("clock", "clock_now", `{}`)
	f.do("POST", "/api/extensions/approve", "", `{"id":"clock2","code":"12345678"}`)
	for _, c := range []struct{ act, id, decision, rule string }{
		{ActStage, "shell", Refuse, "exec-absent"},
		{ActStage, "clock", Allow, ""},
		{ActAdmit, "clock2", Refuse, "duplicate-tool"},
		{ActCall, "nothing", Refuse, "not-admitted"},
		{ActCall, "clock", Refuse, "invalid-argument"},
		{ActCall, "clock", Allow, ""},
		{ActApprove, "clock2", Refuse, "approval-code-missing"},
	} {
		if !f.audited(c.act, c.id, c.decision, c.rule) {
			t.Errorf("no audit record of %s %s %s %s", c.act, c.id, c.decision, c.rule)
		}
	}
}

// TestAnUnparseableFetchURLIsRedacted: a URL that does not parse is refused with its credentials
// scrubbed, in the answer, the log and the audit.
func TestAnUnparseableFetchURLIsRedacted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.admit(`{"id":"probe","name":"Probe","capabilities":["network"],"bounds":{"hosts":["a.example"],"maxRequests":2},"tools":[{"name":"probe","primitive":"http-get","params":{}}]}`)
	m := f.call("probe", "probe", `{"url":"https://a.example/%zz?api_key=SECRET-1&q=x"}`)
	if m["refused"] != "host-not-allowed" {
		t.Fatalf("an unparseable URL: %v", m)
	}
	audit, _ := os.ReadFile(filepath.Join(f.dir, AuditFile))
	for where, text := range map[string]string{"answer": m["why"].(string), "log": f.logs.String(), "audit": string(audit)} {
		if strings.Contains(text, "SECRET-1") {
			t.Errorf("the %s carries the credential: %s", where, text)
		}
		if !strings.Contains(text, "api_key=[redacted]") {
			t.Errorf("the %s does not say where it went: %s", where, text)
		}
	}
}
