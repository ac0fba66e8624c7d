package channel

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/wire"
)

var benchObserved = json.RawMessage(`{"bytes":12,"text":"hello, world"}`)

func benchExec(context.Context, wire.Call) (json.RawMessage, error) { return benchObserved, nil }

// BenchmarkDoorServe measures the executing side for one typical call: parse the frame,
// re-verify attribution, run a trivial executor, marshal the answer.
func BenchmarkDoorServe(b *testing.B) {
	d := NewDoor(ExecutorFunc(benchExec), admitted, DoorOptions{})
	frame := []byte(doorCall)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d.Serve(ctx, frame) == nil {
			b.Fatal("no answer")
		}
	}
}

// BenchmarkCallRoundTrip measures a whole in-process round trip: the broker marshals and sends the
// call, the door parses, verifies, runs and answers, the broker parses the answer and settles.
func BenchmarkCallRoundTrip(b *testing.B) {
	p := &loopPeer{door: NewDoor(ExecutorFunc(benchExec), admitted, DoorOptions{})}
	p.broker = New(Page, p, Options{})
	call := testCall("c1")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if a := p.broker.Ask(ctx, call); !a.OK {
			b.Fatalf("answer %+v", a)
		}
	}
}
