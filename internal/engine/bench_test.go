package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// BenchmarkEngineReadsAFile is one files.read of a 4 KiB file through the Engine's call path
// (decode the params, check the path, read through the executor, shape the view) on a memory
// root: the engine's own cost, without the worker's postMessage or OPFS.
func BenchmarkEngineReadsAFile(b *testing.B) {
	a, _ := memoryAPI(b)
	mustDo(b, a, "root.open", `{"kind":"opfs"}`, nil)
	content, _ := json.Marshal(strings.Repeat("x", 4<<10))
	mustDo(b, a, "files.write", `{"path":"note.txt","content":`+string(content)+`}`, nil)
	req := request{Method: "files.read", Params: json.RawMessage(`{"path":"note.txt"}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ans, _ := a.call(ctx, 1, req); !ans.OK {
			b.Fatalf("files.read refused: %s", ans.Why)
		}
	}
}

// BenchmarkPeerAnswersARead is one read-file call of a 4 KiB file through the page's side of
// /channel, as the relay sends it: the peer tells calls from control frames, the door parses and
// verifies the call, the workspace's executor reads (a memory root; audit and history on, as in
// the page) and the answer frame is built and handed to the socket. The browser's WebSocket and
// OPFS are left out (the end-to-end BenchmarkRoundTripRelayPageRelay has them).
func BenchmarkPeerAnswersARead(b *testing.B) {
	mem := fsroot.NewMemory()
	ctx := context.Background()
	if err := mem.WriteFile(ctx, "note.txt", []byte(strings.Repeat("x", 4<<10))); err != nil {
		b.Fatal(err)
	}
	ws := newExecutor(ctx, mem, nil, nil)
	defer ws.close()
	p := newPeer("ws://relay/channel", nil, func(PeerState) {})
	p.SetRoot(channel.NewDoor(ws, p.Admitted(), channel.DoorOptions{}), RootInfo{Kind: "opfs", Name: "Memory"})
	c := newFakeConn()
	done := make(chan PeerState, 1)
	go func() { done <- p.serve(ctx, c) }()
	<-c.sent // the root frame
	const call = `{"v":1,"callId":"c1","tool":"read-file","descriptorId":"voicebox.builtin","args":{"path":"note.txt"},"boundsEcho":{}}`
	b.ReportAllocs()
	for b.Loop() {
		c.in <- call
		if ans := <-c.sent; !strings.Contains(ans, `"ok":true`) {
			b.Fatalf("answer %.200s", ans)
		}
	}
	b.StopTimer()
	c.closeWith(1000, "done")
	<-done
}
