package fleet_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
)

// TestALedgerAnOlderRelayMadeTakesTheBound: the ledger stream as a relay before the bound made it
// (no limit on its lines), holding more lines than fleet.MaxLedgerLines, takes the bound from the
// first relay that uses it now: its oldest lines are dropped, the newest read, each once and in
// order, and nothing past the bound is read.
func TestALedgerAnOlderRelayMadeTakesTheBound(t *testing.T) {
	srv := fleettest.Start(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(256))
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "old49_ledger", Subjects: []string{"old49.ledger"},
		Storage: jetstream.FileStorage, MaxMsgSize: fleet.MaxLedgerLineBytes, DenyDelete: true, DenyPurge: true}); err != nil {
		t.Fatal(err)
	}
	total := fleet.MaxLedgerLines + 2000
	for i := range total {
		for {
			_, err := js.PublishAsync("old49.ledger", fmt.Appendf(nil, `{"action":"deny","id":"line-%d"}`, i))
			if err == nil {
				break
			}
			if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				t.Fatal(err)
			}
			<-js.PublishAsyncComplete() // acknowledged slower than published: let them settle, send again
		}
	}
	<-js.PublishAsyncComplete()

	f := join(t, srv, "old49")
	got, err := f.Extensions().ReadLedger()
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(got, []byte("\n")), []byte("\n"))
	if len(lines) != fleet.MaxLedgerLines {
		t.Fatalf("read %d lines of %d; want the newest %d", len(lines), total, fleet.MaxLedgerLines)
	}
	for i, l := range lines {
		if want := fmt.Sprintf(`{"action":"deny","id":"line-%d"}`, total-fleet.MaxLedgerLines+i); string(l) != want {
			t.Fatalf("line %d read %s; want %s", i, l, want)
		}
	}
	st, _ := js.Stream(ctx, "old49_ledger")
	if info, err := st.Info(ctx); err != nil || info.Config.MaxMsgs != fleet.MaxLedgerLines || info.Config.MaxBytes != fleet.MaxLedgerBytes || info.Config.Discard != jetstream.DiscardOld {
		t.Fatalf("the stream's config after a relay used it: %+v, %v", info.Config, err)
	}
}
