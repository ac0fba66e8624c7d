package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
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
	hs := &http.Server{Handler: s, ReadHeaderTimeout: header, IdleTimeout: time.Second}
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
