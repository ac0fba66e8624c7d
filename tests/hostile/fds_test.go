//go:build !js

package hostile

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// relayNoFile is the descriptor limit the descriptor cases start the relay with: low, so a
// flood that passes it stays small and quick.
const relayNoFile = 512

// fdReserve is the relay's reserve of descriptors never given to client connections
// (internal/core/server.FDReserve); the flood must leave at least half of it free.
const fdReserve = 128

// floodConns is how many stalled connections the descriptor flood opens: past the relay's
// limit, from several loopback addresses, each under its own per-address bound.
const (
	floodConns      = 640
	floodPerAddress = 160
)

// flood opens n stalled connections to relay from loopback addresses 127.0.0.first onwards,
// perAddress from each, as stall does (every other one half a header, the others, with bodies, a
// header and one byte of a body), except that a connection the relay closes to make room while
// it is being opened is counted in, not a failure.
func flood(t testing.TB, relay *harness.Relay, n, perAddress, first int, bodies bool) []staller {
	t.Helper()
	return openStallers(t, relay, n, perAddress, first, func(i int) bool { return bodies && i%2 == 0 }, false)
}

// mintTicket mints a sign-in address with the host token and returns its ticket.
func mintTicket(t testing.TB, relay *harness.Relay) string {
	t.Helper()
	r := send(t, nil, http.MethodPost, relay.URL+"/api/bootstrap", map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}, "{}")
	url, _ := r.m["url"].(string)
	_, ticket, ok := strings.Cut(url, "bootstrap=")
	if r.status != http.StatusOK || !ok {
		t.Fatalf("mint a ticket: %d %s", r.status, r.body)
	}
	return ticket
}

// signInFrom redeems ticket from the loopback address ip and returns the session cookie as a
// Cookie header carries it (name=value; the name is the relay's deployment's).
func signInFrom(t testing.TB, relay *harness.Relay, ip, ticket string) string {
	t.Helper()
	client := clientFrom(ip)
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Get(relay.URL + "/?bootstrap=" + ticket)
	if err != nil {
		t.Fatalf("sign in from %s: %v", ip, err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if strings.HasPrefix(c.Name, "vb_session_") {
			if resp.StatusCode != http.StatusSeeOther {
				break
			}
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("sign in from %s: %d, no session", ip, resp.StatusCode)
	return ""
}

// withSession reads GET /api/extensions from ip with the session cookie.
func withSession(t testing.TB, relay *harness.Relay, ip, cookie string) reply {
	t.Helper()
	return send(t, clientFrom(ip), http.MethodGet, relay.URL+"/api/extensions", map[string]string{"Cookie": cookie}, "")
}

// release closes the stallers from the client's side and waits until ip is served health again.
func release(t testing.TB, relay *harness.Relay, stallers []staller, ip string) {
	t.Helper()
	var wg sync.WaitGroup
	for _, s := range stallers {
		wg.Go(func() { s.conn.Close() })
	}
	wg.Wait()
	waitFor(t, "health from "+ip+" once the flood has gone", func() bool {
		return send(t, clientFrom(ip), http.MethodGet, relay.URL+"/api/health", nil, "").status == http.StatusOK
	})
}

// TestAStalledFloodCannotLockOutSignedInClients is issue 32 item 6: with the gate on, 80 loopback
// addresses x 256 stalled connections reached the relay's descriptor limit, and for ~50 s health
// and sign-in timed out; and on a laptop, where the page and every local process share
// 127.0.0.1, a local process holding 256 stalled connections locked the page out. Now every
// client's connections together stay below the descriptor limit less a reserve, with a share kept
// for connections that show a credential; room is made by closing connections of the address that
// holds the most; a connection past its address's bound is judged at its header, and one with a
// session is served. The flood here is more stalled connections than the relay (started with
// RLIMIT_NOFILE 512) has descriptors: its descriptors stay under the limit, and health, sign-in
// and a signed-in client from a crowded address are served while the flood is held; then 300
// stalled connections from 127.0.0.1 itself: a request from there with the session is served, a
// stranger's is refused too-many-connections.
func TestAStalledFloodCannotLockOutSignedInClients(t *testing.T) {
	// Not parallel: it raises the test binary's descriptor limit and floods the relay past its own: alone, so no other test's sockets count against either.
	raiseNoFile(t, 4*floodConns)
	relay := harness.StartRelayNoFile(t, relayNoFile, "VOICEBOX_LOOPBACK_AUTH=1")
	cookie := signInFrom(t, relay, "127.0.0.1", mintTicket(t, relay))
	ticket := mintTicket(t, relay)

	// 1. The flood, from 127.0.0.2 to 127.0.0.5, past the relay's descriptors.
	statsOf(t, relay.PID()) // skips where there is no /proc
	// The relay's descriptors are sampled from before the flood until health is answered.
	var peak atomic.Int64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", relay.PID())); err == nil && int64(len(entries)) > peak.Load() {
				peak.Store(int64(len(entries)))
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	stallers := flood(t, relay, floodConns, floodPerAddress, 2, true)
	waitFor(t, "the relay to take the flood in", func() bool {
		return send(t, nil, http.MethodGet, relay.URL+"/api/health", nil, "").status == http.StatusOK
	})
	close(stop)
	<-sampled
	if peak, limit := int(peak.Load()), relayNoFile-fdReserve/2; peak >= limit {
		t.Fatalf("the relay held %d descriptors under the flood, past %d (its limit is %d)", peak, limit, relayNoFile)
	}
	if got := signInFrom(t, relay, "127.0.0.1", ticket); got == "" {
		t.Fatal("sign-in under the flood gave no session")
	}
	if r := withSession(t, relay, "127.0.0.2", cookie); r.status != http.StatusOK {
		t.Fatalf("a signed-in client from the crowded 127.0.0.2: %d %s", r.status, r.body)
	}
	// The flood is still held (what was closed made room): not every staller was ended.
	open := 0
	for _, s := range stallers {
		s.conn.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := s.conn.Read(make([]byte, 1)); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				open++
			}
		}
	}
	if open == 0 {
		t.Fatal("no stalled connection is held any more: the case tested nothing")
	}
	release(t, relay, stallers, "127.0.0.1")

	// 2. A local process holds 300 stalled connections from 127.0.0.1, the page's address. They
	// stall in their headers: with the gate on, a stranger's body is refused by its headers and
	// its connection closed at once, so only a header can hold a connection.
	local := flood(t, relay, 300, 300, 1, false)
	if r := withSession(t, relay, "127.0.0.1", cookie); r.status != http.StatusOK {
		t.Fatalf("the session from 127.0.0.1 behind 300 strangers there: %d %s", r.status, r.body)
	}
	r := send(t, clientFrom("127.0.0.1"), http.MethodGet, relay.URL+"/api/extensions", nil, "")
	if !r.refused(http.StatusTooManyRequests, "too-many-connections") {
		t.Fatalf("a stranger from 127.0.0.1 past its bound: %d %s", r.status, r.body)
	}
	release(t, relay, local, "127.0.0.1")
	served(t, relay)
}
