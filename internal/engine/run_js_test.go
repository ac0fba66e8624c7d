package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/jsutil"
)

// TestServeOverAMessagePort runs the worker's message loop over a real MessageChannel on the
// page's main thread: a call queued before Go started is answered, Go says ready, a later call
// gets its answer, and a call with bytes beside its text ({call, bytes}, as worker-client.js
// wraps one) reaches its method, all through the browser's structured clone, every message the
// worker posts being its JSON text.
func TestServeOverAMessagePort(t *testing.T) {
	channel := must(must(jsutil.Global().Get("MessageChannel")).New())
	port1 := must(channel.Get("port1"))
	port2 := must(channel.Get("port2"))

	inbox := must(jsutil.Global().Get("JSON"))
	queued := must(inbox.Call("parse", `["{\"type\":\"call\",\"id\":1,\"method\":\"status\"}"]`))
	if err := port1.Set("voiceboxInbox", queued); err != nil {
		t.Fatal(err)
	}

	received := make(chan string, 8)
	onMessage, err := jsutil.FuncOf(func(_ jsutil.Value, args []jsutil.Value) any {
		data := must(args[0].Get("data"))
		if data.Type() != jsutil.TypeString {
			received <- "not text"
			return nil
		}
		s, _ := data.String()
		received <- s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer onMessage.Release()
	if err := port2.Set("onmessage", onMessage.Value()); err != nil {
		t.Fatal(err)
	}

	out, _ := newPoster(port1)
	if err := serve(port1, newEngine(time.Now(), nil), out); err != nil {
		t.Fatal(err)
	}
	if undefined := must(port1.Get("voiceboxInbox")); !undefined.IsUndefined() {
		t.Error("serve left the inbox in place")
	}
	if _, err := port2.Call("postMessage", `{"type":"call","id":2,"method":"nope"}`); err != nil {
		t.Fatal(err)
	}
	// A chunk of no upload begun: read from its text beside its bytes, refused by the method.
	bytes := must(must(jsutil.Global().Get("Uint8Array")).New(3))
	withBytes := map[string]any{"call": `{"type":"call","id":3,"method":"files.upload.chunk","params":{"uploadId":"up999"}}`, "bytes": bytes}
	if _, err := port2.Call("postMessage", withBytes); err != nil {
		t.Fatal(err)
	}

	seen := map[string]map[string]any{}
	for len(seen) < 4 {
		select {
		case s := <-received:
			var m map[string]any
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				t.Fatalf("message %q: %v", s, err)
			}
			key, _ := m["type"].(string)
			if id, ok := m["id"].(float64); ok {
				key += "-" + string(rune('0'+int(id)))
			}
			seen[key] = m
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of 4 messages arrived: %v", len(seen), seen)
		}
	}
	if seen["ready"]["build"] != "dev" {
		t.Errorf("ready = %v", seen["ready"])
	}
	if seen["result-1"]["ok"] != true {
		t.Errorf("the queued status call answered %v", seen["result-1"])
	}
	if seen["result-2"]["ok"] != false || seen["result-2"]["refused"] != "unknown-method" {
		t.Errorf("the later call answered %v", seen["result-2"])
	}
	if seen["result-3"]["ok"] != false || seen["result-3"]["refused"] != "invalid-argument" {
		t.Errorf("the call with bytes answered %v", seen["result-3"])
	}
	port1.Call("close")
	port2.Call("close")
}

// must returns v, or panics (failing the test with a stack) when a JavaScript call failed.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
