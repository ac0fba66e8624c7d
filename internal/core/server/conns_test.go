package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// rawRequest writes head (and then body, if any) on a fresh connection to addr and returns the
// connection for the test to read the answer from.
func rawRequest(t *testing.T, addr, head, body string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head+body); err != nil {
		t.Fatal(err)
	}
	return c
}

// readAnswer reads one HTTP response from c, with a hang guard far past any bound under test.
func readAnswer(t *testing.T, c net.Conn) (int, string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// startBounded serves s on 127.0.0.1 through LimitConns with the given per-client bound and
// header timeout.
func startBounded(t *testing.T, s http.Handler, perClient int, exempt func(netip.Addr) bool, header time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: header, IdleTimeout: time.Second, ConnContext: ConnContext, ConnState: ConnState}
	go hs.Serve(LimitConns(ln, ConnLimits{PerClient: perClient, Exempt: exempt}))
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

func TestStalledBodiesAreBounded(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Public: t.TempDir(), Log: slog.New(slog.DiscardHandler), BodyIdleTimeout: 150 * time.Millisecond, BodyTimeout: 600 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle("POST /api/json", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v map[string]any
		if ReadJSON(w, r, 0, &v) {
			WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
		}
	}))
	// /api/slow reads its body, then takes longer than the idle bound to answer, as a call
	// waiting on its executor does: the lifted deadline must not cancel it.
	s.Handle("POST /api/slow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v map[string]any
		if !ReadJSON(w, r, 0, &v) {
			return
		}
		select {
		case <-time.After(400 * time.Millisecond):
			WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
		case <-r.Context().Done():
			WriteJSON(w, http.StatusOK, map[string]any{"ok": false, "cancelled": true})
		}
	}))
	addr := startBounded(t, s, 0, nil, 200*time.Millisecond)
	post := func(path string, length int) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, length)
	}
	t.Run("a body that stops after one byte", func(t *testing.T) {
		t.Parallel()
		c := rawRequest(t, addr, post("/api/json", 100), "{")
		if code, body := readAnswer(t, c); code != http.StatusRequestTimeout || !strings.Contains(body, `"refused":"body-timeout"`) {
			t.Fatalf("answered %d %s", code, body)
		}
	})
	t.Run("a body that never starts, on a route that reads none", func(t *testing.T) {
		t.Parallel()
		c := rawRequest(t, addr, fmt.Sprintf("GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n", 1000), "")
		code, _ := readAnswer(t, c)
		if code != http.StatusOK {
			t.Fatalf("answered %d", code)
		}
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("the connection stayed open with its body unread")
		}
	})
	t.Run("a body that trickles past the total bound", func(t *testing.T) {
		t.Parallel()
		c := rawRequest(t, addr, post("/api/json", 1000), "")
		go func() { // one byte per 50 ms: never idle for long, never done
			for range 1000 {
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		if code, body := readAnswer(t, c); code != http.StatusRequestTimeout || !strings.Contains(body, "body-timeout") {
			t.Fatalf("answered %d %s", code, body)
		}
	})
	t.Run("a handler slower than the bounds, after its whole body", func(t *testing.T) {
		t.Parallel()
		c := rawRequest(t, addr, post("/api/slow", 2), "{}")
		if code, body := readAnswer(t, c); code != http.StatusOK || !strings.Contains(body, `"ok":true`) {
			t.Fatalf("answered %d %s", code, body)
		}
	})
	t.Run("an unfinished header", func(t *testing.T) {
		t.Parallel()
		c := rawRequest(t, addr, "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Never: ", "")
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		io.Copy(io.Discard, c) // the server closes it (after a 408 of its own, or not)
	})
}

func TestConnectionsPerClientAreBounded(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Public: t.TempDir(), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	const bound = 3
	addr := startBounded(t, s, bound, nil, HeaderTimeout)
	var held []net.Conn
	for range bound {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	// A fourth from the same address: 429, then closed, before its request is read.
	c := rawRequest(t, addr, "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "")
	if code, body := readAnswer(t, c); code != http.StatusTooManyRequests || !strings.Contains(body, `"refused":"too-many-connections"`) {
		t.Fatalf("the connection over the bound answered %d %s", code, body)
	}
	// Another address is not held to this one's bound.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	other, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Skipf("cannot dial from 127.0.0.2: %v", err)
	}
	defer other.Close()
	io.WriteString(other, "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if code, _ := readAnswer(t, other); code != http.StatusOK {
		t.Fatalf("another address answered %d", code)
	}
	// Once one closes, the address is served again.
	held[0].Close()
	for attempt := 0; ; attempt++ {
		c := rawRequest(t, addr, "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "")
		code, _ := readAnswer(t, c)
		if code == http.StatusOK {
			break
		}
		if attempt > 1000 {
			t.Fatal("the address was never served again after a connection closed")
		}
		c.Close()
		time.Sleep(time.Millisecond) // the server notices the close on its own goroutine
	}
}

func TestTrustedProxiesAreNotBounded(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Public: t.TempDir(), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	addr := startBounded(t, s, 1, func(a netip.Addr) bool { return a.IsLoopback() }, HeaderTimeout)
	for range 3 {
		c := rawRequest(t, addr, "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "")
		if code, _ := readAnswer(t, c); code != http.StatusOK {
			t.Fatalf("a proxy's connection answered %d", code)
		}
	}
}

// startLimited serves s on 127.0.0.1 through LimitConns with lim, judged at each request's
// header as the relay does (ConnContext, ConnState).
func startLimited(t *testing.T, s http.Handler, lim ConnLimits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: HeaderTimeout, IdleTimeout: HeaderTimeout, ConnContext: ConnContext, ConnState: ConnState}
	go hs.Serve(LimitConns(ln, lim))
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// dialFrom opens a connection to addr from the loopback address ip, skipping the test where
// that address cannot be bound.
func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 30 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot dial from %s: %v", ip, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports whether the server closed c, waiting for it (hang guard) when wait.
func closedByServer(c net.Conn, wait bool) bool {
	d := time.Millisecond
	if wait {
		d = 30 * time.Second
	}
	c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func TestASignedInConnectionIsLetInPastItsAddressBound(t *testing.T) {
	t.Parallel()
	gate := NewGate()
	s, err := New(Config{Public: t.TempDir(), Log: slog.New(slog.DiscardHandler), Gate: gate, HostToken: func(v string) bool { return v == "host" }})
	if err != nil {
		t.Fatal(err)
	}
	addr := startLimited(t, s, ConnLimits{PerClient: 3})
	c := rawRequest(t, addr, "GET /?bootstrap="+newTicket(t, gate)+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "")
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || len(resp.Cookies()) != 1 {
		t.Fatalf("sign-in: %v %v", resp, err)
	}
	cookie := resp.Cookies()[0].Value
	c.Close()
	for range 3 { // strangers on the same address, stalled before their header
		dialFrom(t, "127.0.0.1", addr)
	}
	for _, tt := range []struct {
		name, header string
		status       int
	}{
		{"a stranger", "", http.StatusTooManyRequests},
		{"a forged session", "Cookie: " + SessionCookieName("") + "=" + strings.Repeat("0", 64) + "\r\n", http.StatusTooManyRequests},
		{"the session", "Cookie: " + SessionCookieName("") + "=" + cookie + "\r\n", http.StatusOK},
		{"the host token", HostTokenHeader + ": host\r\n", http.StatusOK},
	} {
		c := rawRequest(t, addr, "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n"+tt.header+"\r\n", "")
		if code, body := readAnswer(t, c); code != tt.status {
			t.Errorf("%s past the address's bound: %d %s, want %d", tt.name, code, body, tt.status)
		}
	}
}

func TestTheTotalBoundMakesTheCrowdedAddressPay(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Public: t.TempDir(), Log: slog.New(slog.DiscardHandler), HostToken: func(v string) bool { return v == "host" }})
	if err != nil {
		t.Fatal(err)
	}
	const total = 16 // 2 kept for connections with a credential
	addr := startLimited(t, s, ConnLimits{Total: total})
	// A client with the host token keeps its connection alive.
	signed := dialFrom(t, "127.0.0.4", addr)
	io.WriteString(signed, "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n"+HostTokenHeader+": host\r\n\r\n")
	signedR := bufio.NewReader(signed)
	if resp, err := http.ReadResponse(signedR, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the signed-in client: %v %v", resp, err)
	} else {
		io.ReadAll(resp.Body)
	}
	var crowd, few []net.Conn
	for range 3 {
		few = append(few, dialFrom(t, "127.0.0.3", addr))
	}
	for range 30 { // far past the bound, from one address, each stalled before its header
		crowd = append(crowd, dialFrom(t, "127.0.0.2", addr))
	}
	// Health from another address is served; so is the signed-in client, on its connection.
	c := dialFrom(t, "127.0.0.1", addr)
	io.WriteString(c, "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if code, body := readAnswer(t, c); code != 200 {
		t.Fatalf("health beside the crowd: %d %s", code, body)
	}
	io.WriteString(signed, "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	signed.SetReadDeadline(time.Now().Add(30 * time.Second))
	if resp, err := http.ReadResponse(signedR, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the signed-in client after the crowd: %v %v", resp, err)
	}
	// The crowded address paid: its oldest were closed; the newest and the few are held.
	if !closedByServer(crowd[0], true) {
		t.Fatal("the crowd's oldest connection was kept")
	}
	if closedByServer(crowd[len(crowd)-1], false) {
		t.Fatal("the crowd's newest connection was closed")
	}
	for i, f := range few {
		if closedByServer(f, false) {
			t.Fatalf("connection %d of the address with few was closed", i)
		}
	}
}

// sendBufferConn counts the send buffers set on it.
type sendBufferConn struct {
	net.Conn
	sets []int
}

func (c *sendBufferConn) SetWriteBuffer(n int) error {
	c.sets = append(c.sets, n)
	return nil
}

// TestASendBufferIsSetOncePerConnection: a connection kept for many requests has its send buffer
// set at the first stream's request, not again at each (a system call each); another size is
// set when asked.
func TestASendBufferIsSetOncePerConnection(t *testing.T) {
	conn := &sendBufferConn{}
	cc := &countedConn{Conn: conn}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r = r.WithContext(ConnContext(r.Context(), cc))
	for range 3 {
		if !SetSendBuffer(r, 64<<10) {
			t.Fatal("SetSendBuffer reported false on a connection that has a send buffer")
		}
	}
	SetSendBuffer(r, 32<<10)
	if want := []int{64 << 10, 32 << 10}; !slices.Equal(conn.sets, want) {
		t.Fatalf("send buffers set: %v; want %v (once per size, not once per request)", conn.sets, want)
	}
}
