//go:build !js

package hostile

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// framesQueryHugeBytes is the size of the huge queries: below net/http's bound on a request's
// header (1 MiB), so the hub reads them.
const framesQueryHugeBytes = 900 << 10

// TestTheFramesQueryChangesOnlyTheFrameType: /channel upgrades whose query asks for calls as
// binary messages (hub.FramesQuery) in every wrong way: other values and spellings, an empty
// and a bare key, repeated keys in both orders, escapes (good, bad, a NUL), a semicolon, more
// pairs than net/url parses, and queries of 900 KB; a paired machine asks for binary too
// (hub.FramesQuery). Each
// socket is admitted as it would be without a query, gets its calls as binary messages exactly
// when the first value of "frames" is "binary" (text otherwise), and answers them; a query past
// net/http's bound on a header is refused before any socket is made. The relay's descriptors and
// memory come back, and it serves on.
func TestTheFramesQueryChangesOnlyTheFrameType(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	served(t, relay)
	before := statsOf(t, relay.PID())
	huge := strings.Repeat("y", framesQueryHugeBytes)
	tooMany := "frames=binary" + strings.Repeat("&a", 10_000) // net/url parses at most 10,000 pairs
	for _, c := range []struct {
		query  string
		binary bool
	}{
		{"", false},
		{"frames=binary", true},
		{"frames=BINARY", false},
		{"frames=text", false},
		{"frames=", false},
		{"frames", false},
		{"Frames=binary", false},
		{"frames=binary&frames=text", true},
		{"frames=text&frames=binary", false},
		{"frames=binary&frames=binary&frames=binary", true},
		{"frames=%62inary", true},
		{"frames=%zzbinary", false},
		{"frames=binary%00", false},
		{"frames=binary;x=1", false},
		{"x=1;frames=binary", false},
		{"frames=binary&x=%zz", true},
		{"frames=bin%20ary", false},
		{"frames=binary&pad=" + huge, true},
		{"frames=" + huge, false},
		{"pad=" + huge + "&frames=binary", true},
		{"frames=binary" + strings.Repeat("&frames=x", 9_000), true},
		{tooMany, false},
	} {
		name := c.query
		if len(name) > 60 {
			name = name[:60] + "..."
		}
		got := pageFrames(t, relay, c.query)
		if got != c.binary {
			t.Errorf("?%s: calls came as binary %v, want %v", name, got, c.binary)
		}
	}

	// A paired machine that asks for binary gets binary, and is served as any machine.
	bearer := pairBearer(t, relay, "box")
	ws := dialWithQuery(t, relay, "frames=binary&frames=text", http.Header{"Authorization": {"Bearer " + bearer}})
	hello, _ := json.Marshal(map[string]string{"type": "hello", "role": "environment", "bearer": bearer})
	if err := ws.Write(context.Background(), websocket.MessageText, hello); err != nil {
		t.Fatal(err)
	}
	if typ := answerOneCall(t, relay, ws); typ != websocket.MessageBinary {
		t.Errorf("the machine that asked for binary got its call as %v", typ)
	}
	ws.Close(websocket.StatusNormalClosure, "")

	// Past net/http's bound on a header (1 MiB and 4 KiB), the upgrade is refused before any
	// socket is made (431, net/http's own answer: no handler of the relay runs).
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(relay.URL, "http")+"/channel?frames=binary&pad="+strings.Repeat("z", 2<<20), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Errorf("an upgrade with a query of 2 MiB: %d, %v; want 431", status, err)
	}

	waitFor(t, "the relay's descriptors to come back", func() bool { return statsOf(t, relay.PID()).fds <= before.fds+4 })
	after := statsOf(t, relay.PID())
	t.Logf("relay: fds %d before, %d after; rss %d KB before, %d after (peak %d)", before.fds, after.fds, before.rssKB, after.rssKB, after.peakKB)
	if after.peakKB > before.rssKB+(64<<10) {
		t.Errorf("the relay held %d KB at its peak, %d before", after.peakKB, before.rssKB)
	}
	// The machine held the slot last.
	if a := relay.Call(t, "now", map[string]string{}); a.OK || a.Refused != "machine-unreachable" {
		t.Errorf("with every socket closed a call answered %s, want machine-unreachable", a.Raw)
	}
	served(t, relay)
}

// dialWithQuery opens the relay's /channel with query and header, closed when the test ends.
func dialWithQuery(t testing.TB, relay *harness.Relay, query string, header http.Header) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(relay.URL, "http")+"/channel?"+query, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatalf("dial /channel?%.60s: %v", query, err)
	}
	ws.SetReadLimit(wire.MaxFrameBytes)
	t.Cleanup(func() { ws.CloseNow() })
	return ws
}

// pageFrames connects a page (the relay's own origin) with query, says its root, and reports
// whether the call the relay then sends it comes as a binary message; the page answers it, and
// goes away, leaving the slot empty.
func pageFrames(t *testing.T, relay *harness.Relay, query string) bool {
	t.Helper()
	ws := dialWithQuery(t, relay, query, http.Header{"Origin": {relay.URL}})
	if err := ws.Write(context.Background(), websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"Browser storage"}`)); err != nil {
		t.Fatal(err)
	}
	typ := answerOneCall(t, relay, ws)
	ws.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "the page's socket to leave the slot", func() bool { return rootKind(t, relay) == "" })
	return typ == websocket.MessageBinary
}

// answerOneCall waits for ws to hold the root, calls "now" through the relay, answers the call
// as it arrives on ws (over a memory root) and returns the message type it came as.
func answerOneCall(t *testing.T, relay *harness.Relay, ws *websocket.Conn) websocket.MessageType {
	t.Helper()
	door := channel.NewDoor(executor.New(fsroot.NewMemory(), executor.Options{}), executor.BuiltinAdmitted(), channel.DoorOptions{})
	types := make(chan websocket.MessageType, 1)
	go func() {
		for {
			typ, b, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			if _, err := wire.ParseCall(b); err != nil {
				continue
			}
			select {
			case types <- typ:
			default:
			}
			if a := door.Serve(context.Background(), b); a != nil {
				ws.Write(context.Background(), websocket.MessageText, a)
			}
		}
	}()
	waitFor(t, "the socket to hold the root", func() bool { return rootKind(t, relay) != "" })
	if a := relay.Call(t, "now", map[string]string{}); !a.OK {
		t.Fatalf("a call to the socket answered %s", a.Raw)
	}
	select {
	case typ := <-types:
		return typ
	default:
		t.Fatal("the call was answered without reaching the socket")
		return 0
	}
}
