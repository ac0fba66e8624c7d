//go:build !js

package hostile

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// soakConns is how many stalled connections the soak opens at once, half with a stalled body
// and half with an unfinished header.
const soakConns = 2000

// rssSlackKB is how far above its resident memory before the soak the relay's may stay after it
// (the code and data paged in to serve the attack, never the attack's connections).
const rssSlackKB = 16 << 10

// soakPerAddress is how many of them come from one loopback address (under the relay's
// per-client bound, so the deadlines are what ends them).
const soakPerAddress = 200

// maxConnsPerClient is the relay's bound of connections from one address
// (internal/core/server.MaxConnsPerClient).
const maxConnsPerClient = 256

// procStats is what /proc says of a process: its open file descriptors, its resident memory and
// the most it has held.
type procStats struct {
	fds    int
	rssKB  int
	peakKB int
}

func statsOf(t testing.TB, pid int) procStats {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	st := procStats{fds: len(entries)}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			st.rssKB, _ = strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			st.peakKB, _ = strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
	return st
}

// raiseNoFile raises this process's own soft RLIMIT_NOFILE to hold need descriptors, up to its
// hard limit, or skips the case when even that is too few.
func raiseNoFile(t testing.TB, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("RLIMIT_NOFILE: %v", err)
	}
	if lim.Cur >= need {
		return
	}
	if lim.Max < need {
		t.Skipf("this process may open %d files; the case needs %d", lim.Max, need)
	}
	lim.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("raise RLIMIT_NOFILE: %v", err)
	}
}

// staller is one attacking connection.
type staller struct {
	conn net.Conn
	body bool // a stalled body (else an unfinished header)
}

// stall opens n connections to relay from loopback addresses 127.0.0.first onwards, perAddress
// from each: each sends a whole header and one byte of a 1000-byte body (with halfHeaders, every
// other one sends half a header instead); then they all say nothing more.
func stall(t testing.TB, relay *harness.Relay, n, perAddress, first int, halfHeaders bool) []staller {
	t.Helper()
	return openStallers(t, relay, n, perAddress, first, func(i int) bool { return !halfHeaders || i%2 == 0 }, true)
}

// openStallers opens n connections to relay from loopback addresses 127.0.0.first onwards,
// perAddress from each; the i-th sends a whole header and one byte of a 1000-byte body when
// body(i), else half a header, and then nothing more. With strict, a write the relay cut short
// fails the case; without, it is part of the outcome (a connection closed to make room).
func openStallers(t testing.TB, relay *harness.Relay, n, perAddress, first int, body func(i int) bool, strict bool) []staller {
	t.Helper()
	addr := strings.TrimPrefix(relay.URL, "http://")
	out := make([]staller, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for a := 0; a*perAddress < n; a++ {
		ip := net.IPv4(127, 0, 0, byte(first+a))
		wg.Go(func() {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: patience}
			for i := a * perAddress; i < min(n, (a+1)*perAddress); i++ {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					errs <- err
					return
				}
				s := staller{conn: c, body: body(i)}
				head := "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: "
				if s.body {
					head = "POST /api/extensions/approve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
				}
				if _, err := io.WriteString(c, head); err != nil && strict {
					errs <- err
					return
				}
				out[i] = s
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("opening a stalled connection: %v", err)
	}
	return out
}

// ended waits for the relay to end every staller by itself (a hang guard of twice patience, far
// past its bounds) and checks how: a stalled body is told 408 body-timeout, an unfinished header
// is closed.
func ended(t testing.TB, stallers []staller) {
	t.Helper()
	var wg sync.WaitGroup
	bad := make(chan string, len(stallers))
	for _, s := range stallers {
		wg.Go(func() {
			defer s.conn.Close()
			s.conn.SetReadDeadline(time.Now().Add(2 * patience))
			br := bufio.NewReader(s.conn)
			if !s.body {
				if _, err := io.Copy(io.Discard, br); err != nil {
					bad <- fmt.Sprintf("an unfinished header was not closed: %v", err)
				}
				return
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				bad <- fmt.Sprintf("a stalled body got no answer: %v", err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), `"refused":"body-timeout"`) {
				bad <- fmt.Sprintf("a stalled body was answered %d %s", resp.StatusCode, b)
			}
			if _, err := io.Copy(io.Discard, br); err != nil {
				bad <- fmt.Sprintf("a stalled body's connection was not closed: %v", err)
			}
		})
	}
	wg.Wait()
	close(bad)
	n := 0
	for b := range bad {
		if n++; n <= 5 {
			t.Error(b)
		}
	}
	if n > 5 {
		t.Errorf("... and %d more", n-5)
	}
}

// TestStalledRequestsCannotStopTheRelay is review item 2: clients that send a header and one
// byte of a body, or half a header, held their connections forever; 20,000 of them exhausted the
// relay's descriptors and /api/health stopped answering. Thousands at once now leave it
// answering; one address gets at most its bound and then 429 too-many-connections; each stalled
// connection is ended by the relay within its read bounds; and its descriptors come back.
func TestStalledRequestsCannotStopTheRelay(t *testing.T) {
	// Not parallel: it raises the test binary's descriptor limit and holds hundreds of stalled sockets: alone, so no other test's sockets count against either.
	raiseNoFile(t, 3*soakConns)
	relay := harness.StartRelay(t)
	served(t, relay)
	before := statsOf(t, relay.PID())

	stallers := stall(t, relay, soakConns, soakPerAddress, 2, true)
	// One address past its bound: the first maxConnsPerClient are held, the next is told 429.
	crowd := stall(t, relay, maxConnsPerClient, maxConnsPerClient, 100, true)
	c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 100)}}).Dial("tcp", strings.TrimPrefix(relay.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(patience))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the connection past its address's bound got no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	c.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(b), `"refused":"too-many-connections"`) {
		t.Fatalf("the connection past its address's bound was answered %d %s", resp.StatusCode, b)
	}

	// Meanwhile the relay answers everyone else.
	for range 20 {
		served(t, relay)
	}
	during := statsOf(t, relay.PID())
	if during.fds < before.fds+soakConns/2 {
		t.Fatalf("the relay holds %d descriptors with %d connections open (%d before): the attack did not land", during.fds, soakConns, before.fds)
	}

	ended(t, append(stallers, crowd...))
	// The relay closed them all: its descriptors come back to where they were.
	waitFor(t, "the relay's descriptors to come back", func() bool { return statsOf(t, relay.PID()).fds <= before.fds+8 })
	// And the memory they took (it hands it back once the flood has settled).
	waitFor(t, "the relay's memory to come back near where it was", func() bool { return statsOf(t, relay.PID()).rssKB <= before.rssKB+rssSlackKB })
	after := statsOf(t, relay.PID())
	t.Logf("relay: %d descriptors and %d KiB resident before, %d and %d KiB with %d stalled connections, %d and %d KiB after (%d KiB at the most)",
		before.fds, before.rssKB, during.fds, during.rssKB, soakConns+maxConnsPerClient, after.fds, after.rssKB, after.peakKB)
	served(t, relay)
}
