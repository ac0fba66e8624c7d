package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/core/session"
)

// relayUnderTest is serveUntil running in the test, with its stdout lines and its log.
type relayUnderTest struct {
	url, state string
	out        *bufio.Reader
	log        *syncBuffer
	stop       func()
}

// startLogged runs serve with the gate (VOICEBOX_LOOPBACK_AUTH as set by the caller) and extra
// flags, and returns once it printed its address; the log (stderr) is kept.
func startLogged(t *testing.T, extra ...string) *relayUnderTest {
	t.Helper()
	public := t.TempDir()
	os.WriteFile(filepath.Join(public, "index.html"), []byte("<!doctype html>"), 0o644)
	r := &relayUnderTest{state: filepath.Join(t.TempDir(), "state"), log: &syncBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	exit := make(chan int, 1)
	args := append([]string{"--addr", "127.0.0.1:0", "--public", public, "--state-dir", r.state}, extra...)
	go func() {
		exit <- serveUntil(ctx, args, outW, r.log)
		outW.Close()
	}()
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		go io.Copy(io.Discard, outR)
		select {
		case <-exit:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	}
	t.Cleanup(r.stop)
	r.out = bufio.NewReader(outR)
	line, err := r.out.ReadString('\n')
	if err != nil {
		t.Fatalf("no address line: %v (log %s)", err, r.log.String())
	}
	m := regexp.MustCompile(`^voicebox on (https?://\S+)\n$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("printed %q", line)
	}
	r.url = m[1]
	return r
}

// ticket reads the one-time address of the banner.
func (r *relayUnderTest) ticket(t *testing.T) string {
	t.Helper()
	line, _ := r.out.ReadString('\n')
	m := regexp.MustCompile(`(https?://\S+/\?bootstrap=([0-9a-f]{64})) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("the banner is %q", line)
	}
	go io.Copy(io.Discard, r.out)
	return m[2]
}

// redeem opens url and returns the session cookie.
func redeem(t *testing.T, base, ticket string) *http.Cookie {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(base + "/?bootstrap=" + ticket)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("redeeming: %d %v", resp.StatusCode, resp.Cookies())
	}
	return resp.Cookies()[0]
}

// relayCmd runs a relay command and returns its exit code, stdout and stderr.
func relayCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestSessionsAndTicketCommands drives `relay ticket` and `relay sessions` against a serving
// relay through its control socket: a minted address signs in once, the listing shows IDs and
// never a secret, revoking one and then all ends them and closes the page's socket.
func TestSessionsAndTicketCommands(t *testing.T) {
	t.Setenv("VOICEBOX_LOOPBACK_AUTH", "1")
	r := startLogged(t, "--session-lifetime", "2h")
	first := redeem(t, r.url, r.ticket(t))
	if first.MaxAge != 7200 {
		t.Fatalf("the cookie lasts %d s, want the 2h lifetime", first.MaxAge)
	}

	code, out, errOut := relayCmd("ticket", "--state-dir", r.state)
	m := regexp.MustCompile(`^http://127\.0\.0\.1:\d+/\?bootstrap=([0-9a-f]{64})\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(errOut, "once") {
		t.Fatalf("relay ticket: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	second := redeem(t, r.url, m[1])

	// The page of the second session holds /channel.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.url, "http")+"/channel", &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {r.url}, "Cookie": {second.Name + "=" + second.Value}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	// The admitted set comes before anything else once the page is admitted, session and all.
	if _, frame, err := ws.Read(ctx); err != nil || !strings.Contains(string(frame), `"type":"admitted"`) {
		t.Fatalf("the page's socket read %s, %v; want the admitted set", frame, err)
	}
	// Then that it holds the slot (nobody else does).
	if _, frame, err := ws.Read(ctx); err != nil || !strings.Contains(string(frame), `"type":"holding"`) {
		t.Fatalf("the page's socket read %s, %v; want holding", frame, err)
	}
	var list string
	for deadline := time.Now().Add(20 * time.Second); ; {
		code, list, errOut = relayCmd("sessions", "--state-dir", r.state)
		if code != 0 {
			t.Fatalf("relay sessions: exit %d, %q", code, errOut)
		}
		if strings.Contains(list, " 1\n") || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || strings.Contains(list, first.Value) || strings.Contains(list, second.Value) {
		t.Fatalf("relay sessions listed:\n%s", list)
	}
	firstID, secondID := strings.Fields(lines[1])[0], strings.Fields(lines[2])[0]
	if !strings.HasSuffix(lines[1], " 0") || !strings.HasSuffix(lines[2], " 1") || firstID != session.ID(first.Value) || secondID != session.ID(second.Value) {
		t.Fatalf("relay sessions listed (want 0 sockets, then 1):\n%s", list)
	}

	if code, out, _ := relayCmd("sessions", "revoke", firstID, "--state-dir", r.state); code != 0 || out != "revoked "+firstID+" (closed 0 sockets)\n" {
		t.Fatalf("revoke: exit %d %q", code, out)
	}
	if code, _, errOut := relayCmd("sessions", "--state-dir", r.state, "revoke", firstID); code != 1 || !strings.Contains(errOut, "not-found") {
		t.Fatalf("revoke again: exit %d %q", code, errOut)
	}
	if code, out, _ := relayCmd("sessions", "revoke", "--all", "--state-dir", r.state); code != 0 || out != "revoked 1 session\n" {
		t.Fatalf("revoke --all: exit %d %q", code, out)
	}
	_, frame, err := ws.Read(ctx)
	if err != nil || !strings.Contains(string(frame), `"refused":"session-revoked"`) {
		t.Fatalf("the page's socket read %s, %v; want session-revoked", frame, err)
	}
	ws.CloseNow()
	if code, list, _ := relayCmd("sessions", "list", "--state-dir", r.state); code != 0 || strings.Count(list, "\n") != 1 {
		t.Fatalf("after revoke --all: exit %d\n%s", code, list)
	}

	for _, bad := range [][]string{{"revoke"}, {"revoke", "a", "b"}, {"revoke", "a", "--all"}, {"list", "--all"}, {"frob"}} {
		if code, _, _ := relayCmd(append([]string{"sessions", "--state-dir", r.state}, bad...)...); code != 2 {
			t.Errorf("sessions %v: exit %d, want 2", bad, code)
		}
	}
	r.stop()
	if code, _, errOut := relayCmd("sessions", "--state-dir", r.state); code != 1 || !strings.Contains(errOut, "no relay answers") {
		t.Fatalf("with the relay stopped: exit %d %q", code, errOut)
	}
	if code, _, errOut := relayCmd("ticket", "--state-dir", r.state); code != 1 || !strings.Contains(errOut, "no relay answers") {
		t.Fatalf("ticket with the relay stopped: exit %d %q", code, errOut)
	}
}

func TestTicketWithoutTheGate(t *testing.T) {
	t.Setenv("VOICEBOX_LOOPBACK_AUTH", "")
	r := startLogged(t)
	if code, _, errOut := relayCmd("ticket", "--state-dir", r.state); code != 1 || !strings.Contains(errOut, "gate-off") {
		t.Fatalf("relay ticket without the gate: exit %d %q", code, errOut)
	}
	if code, out, errOut := relayCmd("sessions", "--state-dir", r.state); code != 0 || !strings.Contains(errOut, "without the session gate") || strings.Count(out, "\n") != 1 {
		t.Fatalf("relay sessions without the gate: exit %d %q %q", code, out, errOut)
	}
}

// TestServeFlagsAreChecked: bad values of the new settings stop serve before it listens.
func TestServeFlagsAreChecked(t *testing.T) {
	t.Setenv("VOICEBOX_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	t.Setenv("VOICEBOX_LOOPBACK_AUTH", "")
	cert, key, _ := writeTestCert(t)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"a lifetime that is no duration", []string{"--session-lifetime", "forever"}, "session lifetime"},
		{"a lifetime under a second", []string{"--session-lifetime", "10ms"}, "at least 1s"},
		{"a trusted proxy that is no address", []string{"--trusted-proxy", "proxy.example"}, "--trusted-proxy"},
		{"a log format", []string{"--log-format", "xml"}, "--log-format"},
		{"ACME and a certificate file", []string{"--acme-host", "voicebox.example.com", "--tls-cert", cert, "--tls-key", key}, "use one of them"},
		{"ACME and a key file", []string{"--acme-host", "voicebox.example.com", "--tls-key", key}, "use one of them"},
		{"ACME for an IP address", []string{"--acme-host", "192.0.2.1"}, "DNS name"},
		{"ACME for a name with a port", []string{"--acme-host", "voicebox.example.com:443"}, "DNS name"},
		{"ACME for a URL", []string{"--acme-host", "https://voicebox.example.com"}, "DNS name"},
		{"ACME for a single label", []string{"--acme-host", "localhost"}, "DNS name"},
		{"ACME with another origin", []string{"--acme-host", "voicebox.example.com", "--origin", "https://other.example.com"}, "must be https on the --acme-host"},
		{"ACME with a plain http origin", []string{"--acme-host", "voicebox.example.com", "--origin", "http://voicebox.example.com"}, "must be https"},
		{"ACME email without a host", []string{"--acme-email", "ops@example.com"}, "need --acme-host"},
		{"ACME challenges on the network without the gate", []string{"--acme-host", "voicebox.example.com", "--acme-http-addr", "0.0.0.0:0"}, "VOICEBOX_LOOPBACK_AUTH=1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := serveUntil(context.Background(), append([]string{"--addr", "127.0.0.1:0", "--public", t.TempDir()}, tt.args...), &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tt.want) || stdout.Len() != 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout.String(), stderr.String(), tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("VOICEBOX_STATE_DIR"), core.ACMECacheDir)); err == nil {
		t.Fatal("a refused ACME start made the cache directory")
	}
}

// TestLogFormat: JSON when the log is not a terminal (a buffer, a pipe), text when asked.
func TestLogFormat(t *testing.T) {
	t.Parallel()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if isTerminal(pw) {
		t.Fatal("a pipe is taken for a terminal")
	}
	for _, tt := range []struct {
		format string
		json   bool
	}{{"", true}, {"auto", true}, {"json", true}, {"text", false}} {
		var b bytes.Buffer
		log, err := newLogger(&b, tt.format)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("hello", "k", "v")
		if got := json.Valid(b.Bytes()); got != tt.json {
			t.Errorf("format %q wrote %q", tt.format, b.String())
		}
	}
	if _, err := newLogger(io.Discard, "xml"); err == nil {
		t.Fatal("xml was taken")
	}
}

// TestLogsCarryNoSecrets sends requests carrying every kind of secret the relay meets: the
// session cookie, the host token, a bootstrap ticket (used and unused), a pairing bearer (in a
// header and in a /channel hello), an approval code, and vendor-style API keys in headers and the
// query. Every request gets a log line with its id, and no secret is anywhere in the log.
func TestLogsCarryNoSecrets(t *testing.T) {
	t.Setenv("VOICEBOX_LOOPBACK_AUTH", "1")
	r := startLogged(t, "--log-format", "json", "--trusted-proxy", "127.0.0.1")
	ticket := r.ticket(t)
	cookie := redeem(t, r.url, ticket)
	token := hostToken(t, r.state)
	code, bearer, _ := relayCmd("pair", "--state-dir", r.state, "box")
	if code != 0 {
		t.Fatal("pair failed")
	}
	bearer = strings.TrimSpace(bearer)
	_, minted, _ := relayCmd("ticket", "--state-dir", r.state)
	mintedTicket := minted[strings.LastIndex(minted, "=")+1 : len(minted)-1]
	const approvalCode, apiKey, geminiKey, sk = "483920", "AIzaSyTESTKEY0000000000000000000000000", "AIzaSyQUERYKEY000000000000000000000000", "sk-test-0123456789abcdefghijklmnop"
	secrets := map[string]string{"ticket": ticket, "minted ticket": mintedTicket, "session": cookie.Value, "host token": token,
		"bearer": bearer, "approval code": approvalCode, "api key": apiKey, "query key": geminiKey, "openai key": sk}

	var ids []string
	send := func(method, path, body string, header map[string]string) {
		req, _ := http.NewRequest(method, r.url+path, strings.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if id := resp.Header.Get("X-Request-Id"); id == "" {
			t.Fatalf("%s %s: no X-Request-Id", method, path)
		} else {
			ids = append(ids, id)
		}
	}
	withCookie := map[string]string{"Cookie": cookie.Name + "=" + cookie.Value}
	send("GET", "/?bootstrap="+ticket, "", nil)       // spent
	send("GET", "/?bootstrap="+mintedTicket, "", nil) // redeemed now
	send("GET", "/", "", withCookie)
	send("GET", "/api/root", "", map[string]string{"X-Voicebox-Host-Token": token})
	send("GET", "/api/sessions", "", map[string]string{"X-Voicebox-Host-Token": token})
	send("GET", "/api/root", "", map[string]string{"Authorization": "Bearer " + bearer, "Cookie": cookie.Name + "=" + cookie.Value})
	send("POST", "/api/extensions/approve", `{"id":"x","code":"`+approvalCode+`"}`, map[string]string{"X-Voicebox-Host-Token": token})
	send("GET", "/api/root?key="+geminiKey, "", map[string]string{"X-Api-Key": apiKey, "X-Goog-Api-Key": apiKey, "Authorization": "Bearer " + sk})
	send("GET", "/nothing/here?token="+token, "", withCookie)
	send("GET", "/", "", map[string]string{"X-Forwarded-For": "203.0.113.9", "X-Request-Id": "edge-7", "Cookie": cookie.Name + "=" + cookie.Value})
	// A machine says hello with its bearer on /channel.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.url, "http")+"/channel?bearer="+bearer, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, resp.Header.Get("X-Request-Id"))
	ws.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","role":"environment","bearer":"`+bearer+`"}`))
	ws.Close(websocket.StatusNormalClosure, "")
	r.stop()

	log := r.log.String()
	for name, secret := range secrets {
		if strings.Contains(log, secret) {
			t.Errorf("the log carries the %s", name)
		}
	}
	logged := map[string]bool{}
	for line := range strings.SplitSeq(strings.TrimSpace(log), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		if m["msg"] == "request" {
			id, _ := m["request_id"].(string)
			logged[id] = true
		}
	}
	for _, id := range ids {
		if !logged[id] {
			t.Errorf("no request line for request %s", id)
		}
	}
	if !logged["edge-7"] || !strings.Contains(log, `"client":"203.0.113.9"`) {
		t.Error("the trusted proxy's request id and client are not in the log")
	}
	if !strings.Contains(log, `"client":"control-socket"`) {
		t.Error("the ticket command's request is not logged as the control socket's")
	}
	if strings.Count(log, `"session":"`+session.ID(cookie.Value)+`"`) < 3 {
		t.Errorf("the session's requests are not logged with its ID:\n%s", log)
	}
}

// TestACMEWiring: a serving relay with --acme-host makes its certificate cache 0700 in the state
// directory, refuses a handshake for another name and prints sign-in addresses on https://NAME
// (internal/relay's TestACMEManager checks the manager itself).
func TestACMEWiring(t *testing.T) {
	t.Setenv("VOICEBOX_LOOPBACK_AUTH", "1")
	r := startLogged(t, "--acme-host", "Voicebox.Example.com", "--acme-email", "ops@example.com")
	if !strings.HasPrefix(r.url, "https://127.0.0.1:") {
		t.Fatalf("serving on %s", r.url)
	}
	line, _ := r.out.ReadString('\n')
	if !strings.HasPrefix(line, "loopback gate on: open https://voicebox.example.com/?bootstrap=") {
		t.Fatalf("the banner is %q", line)
	}
	line, _ = r.out.ReadString('\n')
	if !strings.Contains(line, "certificates for voicebox.example.com") {
		t.Fatalf("the ACME line is %q", line)
	}
	if info, err := os.Stat(filepath.Join(r.state, core.ACMECacheDir)); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("the relay's cache directory: %v", err)
	}
	conn, err := tls.Dial("tcp", strings.TrimPrefix(r.url, "https://"), &tls.Config{ServerName: "evil.example.com", InsecureSkipVerify: true})
	if err == nil {
		conn.Close()
		t.Fatal("a handshake for another name succeeded")
	}
}
