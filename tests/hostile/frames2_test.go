//go:build !js

package hostile

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
	"github.com/voicebox-go/voicebox/internal/core/voice"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// The sockets' frames after their hello: a paired machine's /channel frames other than calls'
// answers, and the page's /live frames, malformed.

// TestAMachinesMalformedFramesSettleNothing: a paired machine, once admitted, sends control
// frames of every type the hub reads, malformed (a root of another kind, a name of 64 KB, a
// tools list that is no list, a second hello), and answers that are no envelope, name no call,
// carry another version or both a result and a refusal. None settles a call or changes the
// root; the machine keeps its one connection and the next call it answers is served.
func TestAMachinesMalformedFramesSettleNothing(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	bearer := pairBearer(t, relay, "box")
	ws := dialChannel(t, relay, "127.0.0.1", "", bearer)
	hello, _ := json.Marshal(map[string]string{"type": "hello", "role": "environment", "bearer": bearer})
	if err := ws.Write(context.Background(), websocket.MessageText, hello); err != nil {
		t.Fatal(err)
	}
	if _, ok := control(t, ws, "admitted"); !ok {
		t.Fatal("the paired machine was not admitted")
	}
	waitFor(t, "the machine to hold the root", func() bool { return rootKind(t, relay) == "machine" })
	big := strings.Repeat("x", 64<<10)
	for _, f := range []string{
		`{"type":"root","kind":"evil","name":"x"}`,
		`{"type":"root","kind":"opfs","name":"` + big + `"}`,
		`{"type":"root","kind":["opfs"],"name":{}}`,
		`{"type":"tools","tools":"all"}`,
		`{"type":"tools","tools":[{"name":` + strings.Repeat("[", 10000) + `}]}`,
		`{"type":"tools","tools":[{"name":"forged","description":"forged"}],"externalApps":"x"}`,
		string(hello),
		`{"type":"hello","role":"page"}`,
		`{"type":"admitted","extensions":{}}`,
		`{"type":"` + big + `"}`,
		`not json`, `[]`, `null`, "\x00\xff",
		`{"v":1,"callId":"nobody-asked","ok":true,"observed":{}}`,
		`{"v":2,"callId":"x","ok":true,"observed":{}}`,
		`{"v":1,"callId":"x","ok":true,"observed":{},"refused":"exec-threw","why":"both"}`,
		`{"v":1,"callId":{},"ok":"yes"}`,
		`{"v":1}`,
	} {
		if err := ws.Write(context.Background(), websocket.MessageText, []byte(f)); err != nil {
			t.Fatalf("the relay closed the machine's socket at %.60q: %v", f, err)
		}
	}
	// The machine now answers honestly: a call is served through its one connection.
	door := channel.NewDoor(executor.New(fsroot.NewMemory(), executor.Options{}), executor.BuiltinAdmitted(), channel.DoorOptions{})
	go func() {
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			if a := door.Serve(context.Background(), b); a != nil {
				ws.Write(context.Background(), websocket.MessageText, a)
			}
		}
	}()
	if a := relay.Call(t, "list-files", map[string]string{"dir": ""}); !a.OK {
		t.Fatalf("the call after the malformed frames answered %s", a.Raw)
	}
	if k := rootKind(t, relay); k != "machine" {
		t.Fatalf("the root is %q after the malformed frames", k)
	}
	r := send(t, nil, http.MethodGet, relay.URL+"/api/assistant", nil, "")
	if strings.Contains(r.body, "forged") {
		t.Fatalf("a machine's tools frame reached the catalogue: %s", r.body)
	}
	served(t, relay)
}

// TestMalformedLiveFramesAreRefusedByName: on a live session, the page's socket is sent text
// frames that are no JSON object, of unknown types, with fields of the wrong type or beside the
// type that takes none, a text over voice.MaxTextBytes, and audio frames of odd length or
// none. Each is answered by a refused frame (live-message-invalid, live-audio-frame-invalid);
// the session goes on and the text typed next reaches the vendor.
func TestMalformedLiveFramesAreRefusedByName(t *testing.T) {
	t.Parallel()
	typed := make(chan string, 4)
	fx := vendorfixture.Start(t, vendorfixture.Options{Script: vendorfixture.Script{
		OnText: func(c *vendorfixture.Conn, text string) { typed <- text },
	}})
	relay := harness.StartRelay(t, "VOICEBOX_OPENAI_URL="+fx.OpenAIURL(), "OPENAI_API_KEY="+fx.Key(), "GEMINI_API_KEY=", "VOICEBOX_LIVE_PROVIDER=openai")
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(relay.URL, "http")+"/live", &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {relay.URL}}})
	if err != nil {
		t.Fatalf("dial /live: %v", err)
	}
	defer ws.CloseNow()
	if m, ok := control(t, ws, "rate", "refused"); !ok || m["type"] != "rate" {
		t.Fatalf("the live socket sent %v, not its rate", m)
	}
	for {
		m, ok := control(t, ws, "state")
		if !ok {
			t.Fatal("the live session never became ready")
		}
		if m["state"] == "ready" {
			break
		}
	}
	texts := []string{
		`not json`, `[]`, `null`, `"text"`, `{"type":"dance"}`, `{"type":"text"}`, `{"type":"text","text":""}`,
		`{"type":"text","text":5}`, `{"type":"text","text":"hi","playedMs":3}`, `{"type":"interrupt","playedMs":"x"}`,
		`{"type":"interrupt","text":"x"}`, `{"type":"close","playedMs":1}`, `{"type":"text","text":"hi","surprise":1}`,
		`{"type":"text","text":"` + strings.Repeat("x", voice.MaxTextBytes+1) + `"}`,
	}
	for _, f := range texts {
		ws.Write(ctx, websocket.MessageText, []byte(f))
		if m, ok := control(t, ws, "refused"); !ok || m["refused"] != "live-message-invalid" || m["why"] == "" {
			t.Fatalf("%.60q was answered %v, want refused live-message-invalid", f, m)
		}
	}
	for _, pcm := range [][]byte{{1}, {1, 2, 3}} {
		ws.Write(ctx, websocket.MessageBinary, pcm)
		if m, ok := control(t, ws, "refused"); !ok || m["refused"] != "live-audio-frame-invalid" {
			t.Fatalf("an audio frame of %d bytes was answered %v, want refused live-audio-frame-invalid", len(pcm), m)
		}
	}
	ws.Write(ctx, websocket.MessageText, []byte(`{"type":"text","text":"still here"}`))
	select {
	case got := <-typed:
		if got != "still here" {
			t.Fatalf("the vendor got %q", got)
		}
	case <-ctx.Done():
		t.Fatal("the text typed after the malformed frames never reached the vendor")
	}
	served(t, relay)
}

// TestAPagesMalformedFramesChangeNothing: the page's socket (its own origin, no hello) sends the
// control frames only a page may send, malformed: a root of another kind, with a name over
// hub.MaxRootNameBytes or of the wrong type, tools that are no list or nested past any bound, a
// hello, and no envelope at all. The root it declared stays as it was, no forged tool reaches the
// catalogue, the socket stays open, and the relay serves on.
func TestAPagesMalformedFramesChangeNothing(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	ws := dialChannel(t, relay, "127.0.0.1", relay.URL)
	if err := ws.Write(context.Background(), websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"workspace"}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the page to hold the root", func() bool { return rootKind(t, relay) == "opfs" })
	// Every root the relay takes is published on the event stream: read it from here on.
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, relay.URL+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	roots := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			if e, ok := strings.CutPrefix(line, "event: "); ok {
				event = e
			} else if d, ok := strings.CutPrefix(line, "data: "); ok && event == "root" {
				roots <- d
			}
		}
		close(roots)
	}()
	big := strings.Repeat("x", hub.MaxRootNameBytes+1)
	for _, f := range []string{
		`{"type":"root","kind":"evil","name":"x"}`,
		`{"type":"root","kind":"handle","name":"` + big + `"}`,
		`{"type":"root","kind":"handle","name":["x"]}`,
		`{"type":"root","kind":7}`,
		`{"type":"tools","tools":"all"}`,
		`{"type":"tools","tools":{"name":"forged"}}`,
		`{"type":"tools",` + strings.Repeat("[", 100000),
		`{"type":"hello","role":"environment","bearer":"vbx_forged"}`,
		`not json`, `[]`, `null`,
	} {
		if err := ws.Write(context.Background(), websocket.MessageText, []byte(f)); err != nil {
			t.Fatalf("the relay closed the page's socket at %.60q: %v", f, err)
		}
	}
	// A frame the hub takes in order after the malformed ones: once the root it names is seen,
	// every frame before it was read.
	ws.Write(context.Background(), websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"after"}`))
	for seen := false; !seen; {
		select {
		case d, ok := <-roots:
			if !ok {
				t.Fatal("the event stream ended before the page's next root")
			}
			if !strings.Contains(d, `"after"`) {
				t.Fatalf("a malformed frame changed the root: %.200s", d)
			}
			seen = true
		case <-ctx.Done():
			t.Fatal("the page's next root was never published")
		}
	}
	if r := send(t, nil, http.MethodGet, relay.URL+"/api/assistant", nil, ""); strings.Contains(r.body, "forged") {
		t.Fatalf("a malformed tools frame reached the catalogue: %s", r.body)
	}
	served(t, relay)
}
