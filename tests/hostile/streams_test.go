//go:build !js

package hostile

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// stoppedReaders is how many streams each case opens and never reads.
const stoppedReaders = 8

// smallReceiveBuffer is the receive buffer of a stopped reader's socket: small, so the relay's
// writes to it stop within a few hundred events rather than the megabytes loopback allows.
const smallReceiveBuffer = 2048

// dialStopped opens a TCP connection to the relay with a small receive buffer, sends head (an
// HTTP request or upgrade), and returns the connection, which the case then does not read.
func dialStopped(t testing.TB, relay *harness.Relay, head string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: patience, Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, smallReceiveBuffer)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(relay.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	return conn
}

// endsWithin reads conn until the relay closes it, and reports whether it did within patience
// (a stream the relay still writes to never ends).
func endsWithin(conn net.Conn) bool {
	conn.SetReadDeadline(time.Now().Add(patience))
	_, err := io.Copy(io.Discard, conn)
	return err == nil // io.Copy returns nil at EOF; a deadline is an error
}

// openStoppedMCPSession initializes an MCP session with a raw request (protocol 2025-06-18, so
// list_changed goes on the session's standalone stream), opens that stream on a socket of its
// own and never reads it. It returns the session id and the socket.
func openStoppedMCPSession(t testing.TB, relay *harness.Relay, bearer string) (string, net.Conn) {
	t.Helper()
	post := func(session, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, relay.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+bearer)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", mcpInit)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize answered %d with session %q", resp.StatusCode, session)
	}
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	conn := dialStopped(t, relay, "GET /mcp HTTP/1.1\r\nHost: "+strings.TrimPrefix(relay.URL, "http://")+
		"\r\nAuthorization: Bearer "+bearer+"\r\nAccept: text/event-stream\r\nMcp-Session-Id: "+session+
		"\r\nMcp-Protocol-Version: 2025-06-18\r\n\r\n")
	return session, conn
}

// slowReaderLogged waits until the relay's log has named slow-reader at least n times.
func slowReaderLogged(t testing.TB, relay *harness.Relay, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("the relay to log %d streams closed slow-reader", n), func() bool {
		return strings.Count(relay.Stderr(), "slow-reader") >= n
	})
}

// TestAStoppedMCPReaderCannotStallTheOthers: eight MCP sessions open their notification stream
// and never read it, while the page's tools change listChanges times; after each change a
// healthy session is sent its list_changed before the next change is made. Every one of them
// arrives (on main the fan-out wrote to each session in turn and waited on the first full
// socket for ever). The stopped sessions are closed slow-reader: their streams end, the log
// names the rule, their session ids are unknown after, and the relay serves on.
func TestAStoppedMCPReaderCannotStallTheOthers(t *testing.T) {
	t.Parallel()
	const listChanges = 3000
	relay := harness.StartRelay(t)
	page := dialChannel(t, relay, "127.0.0.1", relay.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 4*patience)
	defer cancel()
	if err := page.Write(ctx, websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"workspace"}`)); err != nil {
		t.Fatal(err)
	}
	// The stopped sessions open first: the SDK notifies sessions in the order they opened.
	stalled := relay.MintMCPBearer(t, "stalled")
	sessions, conns := make([]string, stoppedReaders), make([]net.Conn, stoppedReaders)
	for i := range stoppedReaders {
		sessions[i], conns[i] = openStoppedMCPSession(t, relay, stalled)
	}
	changed := make(chan struct{}, listChanges+16)
	c := mcp.NewClient(&mcp.Implementation{Name: "healthy", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	healthy, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: relay.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport(relay.MintMCPBearer(t, "healthy"))}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer healthy.Close()
	for i := range listChanges {
		tools := fmt.Sprintf(`{"type":"tools","tools":[{"name":"app_n%d","description":"Change %d","parameters":{"type":"object","properties":{}}}]}`, i, i)
		if err := page.Write(ctx, websocket.MessageText, []byte(tools)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changed:
		case <-time.After(patience):
			t.Fatalf("the healthy session was sent %d list_changed of %d: the stopped readers stalled it", i, listChanges)
		}
	}
	st := statsOf(t, relay.PID())
	t.Logf("after %d list_changed with %d stopped readers: the relay holds %d descriptors, %d KiB resident", listChanges, stoppedReaders, st.fds, st.rssKB)
	slowReaderLogged(t, relay, stoppedReaders)
	for i, conn := range conns {
		if !endsWithin(conn) {
			t.Errorf("stopped stream %d was never closed", i)
		}
		code, _, body := mcpRequest(t, relay, http.MethodPost, stalled, sessions[i], "application/json, text/event-stream", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if code != http.StatusNotFound || ruleOf(body) != "mcp-session-unknown" {
			t.Errorf("the closed session %d answered %d %.200s", i, code, body)
		}
	}
	if _, err := healthy.ListTools(ctx, nil); err != nil {
		t.Fatalf("the healthy session after the stopped ones: %v", err)
	}
	st = statsOf(t, relay.PID())
	t.Logf("once they were closed: the relay holds %d descriptors, %d KiB resident (%d KiB at the most)", st.fds, st.rssKB, st.peakKB)
	served(t, relay)
}

// TestAStoppedEventReaderIsClosedAndTheOthersServed: eight /api/events streams are opened and
// never read while the page's tools change; a healthy stream reads every tools event in order.
// The stopped streams are closed slow-reader (logged; they end), and the relay serves on.
func TestAStoppedEventReaderIsClosedAndTheOthersServed(t *testing.T) {
	t.Parallel()
	const changes = 600
	relay := harness.StartRelay(t)
	page := dialChannel(t, relay, "127.0.0.1", relay.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 4*patience)
	defer cancel()
	if err := page.Write(ctx, websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"workspace"}`)); err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, stoppedReaders)
	for i := range conns {
		conns[i] = dialStopped(t, relay, "GET /api/events HTTP/1.1\r\nHost: "+strings.TrimPrefix(relay.URL, "http://")+"\r\nAccept: text/event-stream\r\n\r\n")
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, relay.URL+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	tools := make(chan string, changes+16)
	go func() {
		defer close(tools)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			if e, ok := strings.CutPrefix(line, "event: "); ok {
				event = e
			} else if d, ok := strings.CutPrefix(line, "data: "); ok && event == "tools" {
				tools <- d
			}
		}
	}()
	// A long description makes each event large, so the stopped sockets fill within the run.
	pad := strings.Repeat("x", 900)
	for i := range changes {
		name := fmt.Sprintf("app_e%d", i)
		frame := fmt.Sprintf(`{"type":"tools","tools":[{"name":%q,"description":"%s","parameters":{"type":"object","properties":{}}}]}`, name, pad)
		if err := page.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
			t.Fatal(err)
		}
		select {
		case d, ok := <-tools:
			if !ok {
				t.Fatalf("the healthy event stream ended after %d of %d tools events", i, changes)
			}
			if !strings.Contains(d, `"`+name+`"`) {
				t.Fatalf("tools event %d was %.200s, want %s: out of order", i, d, name)
			}
		case <-time.After(patience):
			t.Fatalf("the healthy event stream was sent %d tools events of %d", i, changes)
		}
	}
	slowReaderLogged(t, relay, stoppedReaders)
	for i, conn := range conns {
		if !endsWithin(conn) {
			t.Errorf("stopped event stream %d was never closed", i)
		}
	}
	served(t, relay)
}

// TestAStoppedPageIsClosedAndItsCallsSettle: the page's /channel socket stops reading while
// calls that carry large contents are sent to it. The socket fills, the write bound closes it
// slow-reader (logged), every call is answered once, page-closed (no-page for one that comes
// after the socket closed), rather than waiting for its own deadline, and a page that connects
// next takes the root.
func TestAStoppedPageIsClosedAndItsCallsSettle(t *testing.T) {
	t.Parallel()
	const calls = 8
	relay := harness.StartRelay(t)
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) {
			syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, smallReceiveBuffer)
		})
	}}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	stopped, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(relay.URL, "http")+"/channel", &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {relay.URL}}, HTTPClient: &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}})
	if err != nil {
		t.Fatal(err)
	}
	defer stopped.CloseNow()
	if err := stopped.Write(ctx, websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"workspace"}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the page to hold the root", func() bool { return rootKind(t, relay) == "opfs" })
	// The socket is never read from here on: no Read is called on it.
	content := strings.Repeat("x", 48<<10)
	rules := make(chan string, calls)
	for i := range calls {
		go func() {
			a := relay.Call(t, "write_file", map[string]string{"path": fmt.Sprintf("f%d.txt", i), "content": content})
			if a.OK {
				rules <- "ok"
				return
			}
			rules <- a.Refused
		}()
	}
	closed := 0
	for range calls {
		select {
		case rule := <-rules:
			switch rule {
			case "page-closed":
				closed++
			case "no-page": // it reached the relay after the socket was closed
			default:
				t.Errorf("a call to the stopped page answered %q, want page-closed", rule)
			}
		case <-ctx.Done():
			t.Fatal("a call to the stopped page was never answered")
		}
	}
	if closed == 0 {
		t.Error("no call was under way when the stopped page was closed")
	}
	slowReaderLogged(t, relay, 1)
	next := dialChannel(t, relay, "127.0.0.1", relay.URL)
	if err := next.Write(context.Background(), websocket.MessageText, []byte(`{"type":"root","kind":"handle","name":"next"}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the next page to hold the root", func() bool { return rootKind(t, relay) == "handle" })
	served(t, relay)
}
