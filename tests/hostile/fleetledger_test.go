//go:build !js

package hostile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// The attack on the fleet's ledger: ledgerFloodLines lines of ledgerFloodLineBytes (under the
// stream's bound of one line, fleet.MaxLedgerLineBytes), 80 MB in all.
const (
	ledgerFloodLines     = 20000
	ledgerFloodLineBytes = 4000
)

// ledgerFloodRSSSlackKB is how far above its resident memory before the attack a relay's may
// reach: the collector's headroom (core.TuneCollector, 32 MiB) and a reload's read of the
// ledger at its bound (fleet.MaxLedgerBytes, 4 MB, held as read and as scanned).
const ledgerFloodRSSSlackKB = 48 << 10

// TestAFloodOfLedgerLinesCostsBoundedMemory: relays A and B of a fleet; the person admits an
// extension. A NATS client with the fleet's credentials appends 20,000 lines of 4 KB to the
// ledger stream (80 MB) and tells the relays to reload. A reload, a listing or a revocation that
// finds the ledger changed reads what changed, here all of it: the stream keeps its newest
// fleet.MaxLedgerLines lines, fleet.MaxLedgerBytes in all, so the relays' memory stays bounded
// and their listings answer; the person's own ledger still reads: an extension admitted after the attack is admitted
// on both relays, and its revocation holds. The extension admitted before it, whose one line the
// flood pushed out, is no longer admitted (present-not-admitted, never run), as docs/scaling.md
// says. Before, the stream held all 80 MB, and each reload read all of it.
func TestAFloodOfLedgerLinesCostsBoundedMemory(t *testing.T) {
	t.Parallel()
	fl := harness.StartFleet(t, harness.FleetOptions{Prefix: "ledger49", Named: true})
	a, b := fl.Relays[0], fl.Relays[1]
	admit := func(id string) {
		t.Helper()
		raw := json.RawMessage(`{"id":"` + id + `","name":"N","capabilities":["clock"],"tools":[{"name":"` + id + `_now","primitive":"now"}]}`)
		if r := postJSON(t, a, "/api/extensions/sideload", raw, false); r.status != http.StatusOK {
			t.Fatalf("staging %s: %d %s", id, r.status, r.body)
		}
		if r := postJSON(t, b, "/api/extensions/approve", map[string]string{"id": id, "code": consoleCode(t, a, id)}, false); r.status != http.StatusOK {
			t.Fatalf("admitting %s: %d %s", id, r.status, r.body)
		}
	}
	type listing struct {
		Extensions struct {
			Admitted           []struct{ ID string }
			PresentNotAdmitted []struct{ ID string }
		}
	}
	list := func(relay *harness.Relay) (admitted []string, took time.Duration) {
		t.Helper()
		start := time.Now()
		r := send(t, nil, http.MethodGet, relay.URL+"/api/extensions", nil, "")
		took = time.Since(start)
		if r.status != http.StatusOK {
			t.Fatalf("the listing of %s: %d %.300s", relay.URL, r.status, r.body)
		}
		var l listing
		json.Unmarshal([]byte(r.body), &l)
		for _, e := range l.Extensions.Admitted {
			admitted = append(admitted, e.ID)
		}
		slices.Sort(admitted)
		return admitted, took
	}
	admits := func(want ...string) {
		t.Helper()
		for _, r := range []*harness.Relay{a, b} {
			waitFor(t, fmt.Sprintf("%s admitting %v", r.URL, want), func() bool {
				got, _ := list(r)
				return slices.Equal(got, want)
			})
		}
	}
	admit("before")
	admits("before")

	nc := fl.Client()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(256))
	if err != nil {
		t.Fatal(err)
	}
	beforeA, beforeB := statsOf(t, a.PID()), statsOf(t, b.PID())
	pad := strings.Repeat("x", ledgerFloodLineBytes-64)
	start := time.Now()
	for i := range ledgerFloodLines {
		line := fmt.Sprintf(`{"action":"deny","id":"junk-%d","pad":"%s"}`, i, pad)
		for {
			_, err := js.PublishAsync("ledger49.ledger", []byte(line))
			if err == nil {
				break
			}
			if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				t.Fatal(err)
			}
			// The server acknowledges slower than the attacker publishes (a loaded machine):
			// let the outstanding lines be acknowledged, then send this one again.
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(4 * patience):
				t.Fatal("the attacker's lines were never acknowledged")
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(4 * patience):
		t.Fatal("the attacker's lines were never acknowledged")
	}
	t.Logf("the attacker appended %d lines of %d bytes in %v", ledgerFloodLines, ledgerFloodLineBytes, time.Since(start).Round(time.Millisecond))
	for range 20 {
		nc.Publish("ledger49.extensions", []byte("reload"))
	}
	nc.Flush()

	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	st, err := js.Stream(ctx, "ledger49_ledger")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the ledger stream holds %d lines, %d bytes (lines %d to %d)", info.State.Msgs, info.State.Bytes, info.State.FirstSeq, info.State.LastSeq)
	if info.State.Msgs > fleet.MaxLedgerLines || info.State.Bytes > fleet.MaxLedgerBytes {
		t.Errorf("the ledger stream holds %d lines, %d bytes, past its bound (%d lines, %d bytes): every reload reads all of it",
			info.State.Msgs, info.State.Bytes, fleet.MaxLedgerLines, fleet.MaxLedgerBytes)
	}
	for range 3 {
		for _, r := range []*harness.Relay{a, b} {
			_, took := list(r)
			t.Logf("a listing of %s during the attack took %v", r.URL, took.Round(time.Millisecond))
		}
	}

	time.Sleep(2 * time.Second) // the reloads the kicks still make
	for _, r := range []struct {
		name          string
		relay         *harness.Relay
		before, after procStats
	}{
		{"A", a, beforeA, statsOf(t, a.PID())},
		{"B", b, beforeB, statsOf(t, b.PID())},
	} {
		t.Logf("relay %s: rss %d KB before, %d after (peak %d)", r.name, r.before.rssKB, r.after.rssKB, r.after.peakKB)
		if r.after.peakKB > r.before.rssKB+ledgerFloodRSSSlackKB {
			t.Errorf("relay %s held %d KB at its peak, %d before the attack", r.name, r.after.peakKB, r.before.rssKB)
		}
	}

	admit("after")
	admits("after") // "before"'s one line was pushed out of the stream
	if r := postJSON(t, a, "/api/extensions/revoke", map[string]string{"id": "after"}, false); r.status != http.StatusOK {
		t.Fatalf("revoking after: %d %s", r.status, r.body)
	}
	admits()

	served(t, a)
	served(t, b)
}
