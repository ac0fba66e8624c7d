package hub

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/hub/hubtest"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/core/session"
	"github.com/voicebox-go/voicebox/internal/core/session/sessiontest"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// liveLike is a socket route built the way /live is meant to use the session package: it admits
// each socket with session.Sockets and echoes text frames until the socket ends.
func liveLike(gate *server.Gate, limiter *session.Limiter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ready := make(chan *websocket.Conn, 1)
		refuse := func(ws *websocket.Conn, why *refusal.Refusal) {
			b, _ := json.Marshal(map[string]string{"type": "refused", "refused": string(why.Rule), "why": why.Why})
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			ws.Write(ctx, websocket.MessageText, b)
			ws.Close(websocket.StatusPolicyViolation, string(why.Rule))
		}
		release, rf := session.Sockets{Limiter: limiter, Store: gate.Store()}.Admit(gate.SessionID(r), func(why *refusal.Refusal) {
			go func() {
				if ws := <-ready; ws != nil {
					refuse(ws, why)
				}
			}()
		})
		if release != nil {
			defer release()
		}
		ws, err := websocket.Accept(w, r, nil)
		ready <- ws
		if err != nil {
			return
		}
		defer ws.CloseNow()
		if rf != nil {
			refuse(ws, rf)
			return
		}
		for {
			typ, b, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			ws.Write(context.Background(), typ, b)
		}
	})
}

// signIn redeems a fresh ticket over HTTP and returns the Cookie header of the session.
func signIn(t *testing.T, r *testRelay, gate *server.Gate) http.Header {
	t.Helper()
	resp, err := (&http.Transport{}).RoundTrip(mustRequest(t, r.url+"/?bootstrap="+newTicket(t, gate)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("redeem: %d %v", resp.StatusCode, cookies)
	}
	return http.Header{"Cookie": {cookies[0].Name + "=" + cookies[0].Value}}
}

func dialPath(t *testing.T, r *testRelay, path, origin string, header http.Header) *websocket.Conn {
	t.Helper()
	h := header.Clone()
	h.Set("Origin", origin)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.url, "http")+path, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	return ws
}

// echoes reports whether ws still answers a frame.
func echoes(t *testing.T, ws *websocket.Conn) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := ws.Write(ctx, websocket.MessageText, []byte("ping")); err != nil {
		return false
	}
	_, b, err := ws.Read(ctx)
	return err == nil && string(b) == "ping"
}

// TestSessionEndClosesItsSockets: when a session expires, or the host revokes it, its /channel
// socket (the executor, with a call in flight) and its socket on another route that uses the same
// hook are sent the reason and closed 1008; the call settles page-closed; another session's socket
// keeps working; the ended session's cookie opens nothing any more.
func TestSessionEndClosesItsSockets(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		rule refusal.Rule
	}{{"expiry", refusal.SessionExpired}, {"revocation", refusal.SessionRevoked}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := sessiontest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			store := session.NewStore(session.Options{Lifetime: time.Hour, Clock: clock})
			gate := server.NewGateFor(store)
			r := startRelay(t, Options{PageSession: gate.Session, SessionOf: gate.SessionID, Sessions: store}, server.Config{Gate: gate})
			// The test route is added after Register, the way /live is.
			r.srv.Handle("GET /test-live", liveLike(gate, session.NewLimiter(0, 0)))
			own := r.origin("127.0.0.1")

			a := signIn(t, r, gate)
			clock.Advance(30 * time.Minute)
			b := signIn(t, r, gate)
			page := hubtest.Serve(r.dial(t, own, a.Clone()), nil)
			r.waitRootWith(t, a, connected)
			liveA := dialPath(t, r, "/test-live", own, a)
			liveB := dialPath(t, r, "/test-live", own, b)
			if !echoes(t, liveA) || !echoes(t, liveB) {
				t.Fatal("the test route does not echo")
			}
			if got := listSessions(t, r); len(got) != 2 || got[0].Sockets != 2 || got[1].Sockets != 1 {
				t.Fatalf("sessions %+v, want 2 sockets for the first and 1 for the second", got)
			}
			pending := r.asyncCall(t, "now")
			awaitCall(t, page)

			switch tt.rule {
			case refusal.SessionExpired:
				clock.Advance(30 * time.Minute) // the first session's hour is up
			case refusal.SessionRevoked:
				status, m := r.post(t, http.MethodDelete, "/api/sessions/"+listSessions(t, r)[0].ID, nil, true)
				if status != 200 || m["sockets"] != float64(2) {
					t.Fatalf("DELETE /api/sessions/ID: %d %v", status, m)
				}
			}
			if code := page.End(t, patience); code != websocket.StatusPolicyViolation {
				t.Fatalf("the executor closed %v, want 1008", code)
			}
			if ctl := withoutHolding(page.Controls()); len(ctl) != 1 || ctl[0]["refused"] != string(tt.rule) {
				t.Fatalf("the executor was told %v, want %s", ctl, tt.rule)
			}
			if got := await(t, pending); refused(got) != refusal.PageClosed {
				t.Fatalf("the call in flight answered %v, want page-closed", got)
			}
			readRefusal(t, liveA, tt.rule)
			if !echoes(t, liveB) {
				t.Fatal("the other session's socket stopped working")
			}
			if got := listSessions(t, r); len(got) != 1 || got[0].Sockets != 1 {
				t.Fatalf("sessions after the end %+v", got)
			}
			// The ended session opens nothing: not the API, not a new socket.
			req := mustRequest(t, r.url+"/api/root")
			req.Header = a
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("the ended session's cookie got %d", resp.StatusCode)
			}
			checkRefused(t, hubtest.Serve(r.dial(t, own, a.Clone()), nil), refusal.LoopbackUnauthenticated)
			h := a.Clone()
			h.Set("Origin", own)
			if _, resp, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(r.url, "http")+"/test-live", &websocket.DialOptions{HTTPHeader: h}); err == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("the ended session on the other route: %v, want the gate's 401", err)
			}
		})
	}
}

// readRefusal reads one refused frame with rule, then a 1008 close, from ws.
func readRefusal(t *testing.T, ws *websocket.Conn, rule refusal.Rule) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, b, err := ws.Read(ctx)
	if err != nil || !strings.Contains(string(b), `"refused":"`+string(rule)+`"`) {
		t.Fatalf("read %s, %v; want a %s refusal", b, err, rule)
	}
	if _, _, err := ws.Read(ctx); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("then %v, want a 1008 close", err)
	}
}

func listSessions(t *testing.T, r *testRelay) []session.Info {
	t.Helper()
	req := mustRequest(t, r.url+"/api/sessions")
	req.Header.Set(server.HostTokenHeader, r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		OK       bool           `json:"ok"`
		Sessions []session.Info `json:"sessions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || !got.OK {
		t.Fatalf("GET /api/sessions: %d %v", resp.StatusCode, err)
	}
	return got.Sessions
}

// TestSocketsWithoutASessionCannotStarveSignedInPages: with the gate on, anyone may open /channel
// sockets that hold a place until their hello bound; they stop at their own bound, and a signed-in
// page still takes the slot.
func TestSocketsWithoutASessionCannotStarveSignedInPages(t *testing.T) {
	t.Parallel()
	store := session.NewStore(session.Options{Lifetime: time.Hour})
	gate := server.NewGateFor(store)
	r := startRelay(t, Options{PageSession: gate.Session, SessionOf: gate.SessionID, Sessions: store,
		MaxSockets: 4, MaxSessionlessSockets: 2, Hellos: session.NewHelloLimiter(session.HelloBounds{Max: 2})}, server.Config{Gate: gate})
	r.dial(t, "", nil)
	r.dial(t, "", nil)
	over := r.dial(t, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if _, frame, err := over.Read(ctx); err != nil || !strings.Contains(string(frame), `"refused":"too-many-sockets"`) {
		t.Fatalf("the third socket without a session read %s, %v; want too-many-sockets", frame, err)
	}
	a := signIn(t, r, gate)
	hubtest.Serve(r.dial(t, r.origin("127.0.0.1"), a), nil)
	r.waitRootWith(t, a, connected)
}

// newTicket mints a ticket on gate or fails the test.
func newTicket(t testing.TB, gate *server.Gate) string {
	t.Helper()
	tk, err := gate.NewTicket()
	if err != nil {
		t.Fatal(err)
	}
	return tk
}
