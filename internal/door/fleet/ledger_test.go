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
	t.Parallel()
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

// TestTheKeptLedgerFollowsTheStream: relay A reads the ledger again after each change made
// through relay B (lines appended, a flood that drops some of what A kept, one that drops all of
// it), and reads what a store that kept nothing reads (the stream whole), each time; a read that
// finds the stream unchanged hands back the very bytes it kept.
func TestTheKeptLedgerFollowsTheStream(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	a, b := join(t, srv, "kept").Extensions(), join(t, srv, "kept")
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(256))
	n := 0
	appendLines := func(k int) {
		for range k {
			if _, err := js.PublishAsync("kept.ledger", fmt.Appendf(nil, `{"action":"deny","id":"line-%d"}`, n)); err != nil {
				t.Fatal(err)
			}
			n++
		}
		<-js.PublishAsyncComplete()
	}
	check := func(what string) []byte {
		t.Helper()
		got, err := a.ReadLedger()
		if err != nil {
			t.Fatal(err)
		}
		want, err := b.Extensions().ReadLedger() // a store of its own: it kept nothing
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the kept ledger read %d bytes unlike the %d the stream holds", what, len(got), len(want))
		}
		return got
	}
	check("empty")
	if err := b.Extensions().AppendLedger([]byte(`{"action":"admit","id":"first"}`)); err != nil {
		t.Fatal(err)
	}
	check("one line")
	appendLines(3)
	kept := check("three more")
	if again := check("unchanged"); &again[0] != &kept[0] {
		t.Fatal("a read of an unchanged stream read it again")
	}
	appendLines(fleet.MaxLedgerLines - 2) // the first lines A kept are dropped, the rest kept
	check("some kept lines dropped")
	appendLines(fleet.MaxLedgerLines + 5) // every line A kept is dropped
	check("every kept line dropped")
	appendLines(1)
	check("one more")
	// The stream made again (as by a NATS that came back empty), numbering its lines from 1
	// again, past the last sequence A kept.
	ctx := context.Background()
	st, err := js.Stream(ctx, "kept_ledger")
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if err := js.DeleteStream(ctx, "kept_ledger"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for from := n; n-from <= int(fleet.KeptLast(a)); {
		appendLines(fleet.MaxLedgerLines)
	}
	check("the stream made again, past what was kept")
}
