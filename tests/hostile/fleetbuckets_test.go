//go:build !js

package hostile

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// The attack on the fleet's buckets: bucketFloodHuge values of bucketFloodHugeBytes into each
// bucket a relay watches, bucketFloodRecords into the MCP clients' (which every listing reads
// whole; bucketFloodListings at once), and bucketFloodSmall small keys into the executor's.
const (
	bucketFloodHuge      = 100
	bucketFloodHugeBytes = 900 << 10
	bucketFloodRecords   = 250
	bucketFloodListings  = 4
	bucketFloodSmall     = 20000
)

// bucketFloodRSSSlackKB is how far above its resident memory before the attack a relay's may
// reach: the collector's headroom (core.TuneCollector, 32 MiB) and the buffers of what the
// watches still hear (the lease and the offer, each bounded by the executor bucket's value size).
const bucketFloodRSSSlackKB = 48 << 10

// TestLargeAndManyValuesInTheFleetsBucketsCostBoundedMemory: relays A and B of a fleet, the page
// on A. A NATS client with the fleet's credentials writes into the buckets every relay watches or
// lists: 20,000 made-up keys and 100 of 900 KB into the executor's (whose every entry every
// relay's watch heard), 100 offers of 900 KB, 100 made-up bearer records of 900 KB into the MCP
// clients' (which every listing reads whole), and sessions of 900 KB, then deleted (whose every
// value the revocation watch heard). Each bucket takes values no larger than its own records
// (the offer's bound is the page's frame), so the large ones are refused by NATS; the executor's
// watch hears only its two keys. The relays' memory stays bounded; the listings answer; calls
// through B keep reaching the page.
func TestLargeAndManyValuesInTheFleetsBucketsCostBoundedMemory(t *testing.T) {
	t.Parallel()
	f := harness.StartFleet(t, harness.FleetOptions{Prefix: "buckets", Named: true})
	a, b := f.Relays[0], f.Relays[1]
	f.GoPage(a)
	list := func(relay *harness.Relay) (int, string) {
		r := send(t, nil, http.MethodGet, relay.URL+"/api/mcp/clients", map[string]string{"Origin": relay.URL}, "")
		return r.status, string(r.body)
	}
	a.MintMCPBearer(t, "desk")
	if status, body := list(a); status != http.StatusOK || !strings.Contains(body, "desk") {
		t.Fatalf("the MCP clients before the attack: %d %s", status, body)
	}

	js, err := jetstream.New(f.Client())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	beforeA, beforeB := statsOf(t, a.PID()), statsOf(t, b.PID())
	refused, written := 0, 0
	var pending []jetstream.PubAckFuture
	settle := func() {
		for _, p := range pending {
			select {
			case <-p.Ok():
				written++
			case err := <-p.Err():
				var apiErr *jetstream.APIError
				if errors.As(err, &apiErr) || strings.Contains(err.Error(), "maximum") {
					refused++
				} else {
					t.Logf("a write failed: %v", err)
				}
			case <-ctx.Done():
				t.Fatal("the writes were never acknowledged")
			}
		}
		pending = pending[:0]
	}
	put := func(bucket, key string, value []byte) {
		t.Helper()
		f, err := js.PublishAsync("$KV.buckets_"+bucket+"."+key, value)
		if err != nil {
			if strings.Contains(err.Error(), "maximum payload") {
				refused++
				return
			}
			t.Fatal(err)
		}
		pending = append(pending, f)
		if len(pending) >= 64 {
			settle()
		}
	}
	// The sessions' bucket is made by a relay with the gate on only; made here, it is as a
	// relay would make it the first time it is used.
	_, sessionsErr := js.KeyValue(ctx, "buckets_sessions")
	t.Logf("the sessions' bucket: %v", sessionsErr)
	huge := []byte(strings.Repeat("x", bucketFloodHugeBytes))
	for i := range bucketFloodHuge {
		put("executor", fmt.Sprintf("junk-%d", i), huge)
		put("executor", "offer", huge)
		if sessionsErr == nil {
			put("sessions", hex.EncodeToString([]byte(fmt.Sprintf("made-up-session-%d", i)))[:32], huge)
		}
	}
	for i := range bucketFloodRecords {
		put("mcpclients", "b."+hex.EncodeToString([]byte(fmt.Sprintf("made-up-%d", i))), huge)
	}
	for i := range bucketFloodSmall {
		put("executor", fmt.Sprintf("small-%d", i), []byte("{}"))
	}
	settle()
	if kv, err := js.KeyValue(ctx, "buckets_sessions"); err == nil {
		for i := range bucketFloodHuge {
			kv.Delete(ctx, hex.EncodeToString([]byte(fmt.Sprintf("made-up-session-%d", i)))[:32])
		}
	}
	t.Logf("the attacker's writes: %d taken, %d refused", written, refused)

	var wg sync.WaitGroup
	for range bucketFloodListings {
		wg.Go(func() {
			if status, body := list(a); status != http.StatusOK || !strings.Contains(body, "desk") {
				t.Errorf("the MCP clients listed during the attack: %d %.200s", status, body)
			}
		})
	}
	wg.Wait()
	if ans := b.Call(t, "now", map[string]string{}); !ans.OK {
		t.Fatalf("a call through B after the attack answered %s", ans.Raw)
	}
	time.Sleep(2 * time.Second) // what the watches still hear
	for _, r := range []struct {
		name          string
		relay         *harness.Relay
		before, after procStats
	}{
		{"A", a, beforeA, statsOf(t, a.PID())},
		{"B", b, beforeB, statsOf(t, b.PID())},
	} {
		t.Logf("relay %s: rss %d KB before, %d after (peak %d); fds %d, %d",
			r.name, r.before.rssKB, r.after.rssKB, r.after.peakKB, r.before.fds, r.after.fds)
		if r.after.peakKB > r.before.rssKB+bucketFloodRSSSlackKB {
			t.Errorf("relay %s held %d KB at its peak, %d before the attack", r.name, r.after.peakKB, r.before.rssKB)
		}
	}
	if ans := b.Call(t, "now", map[string]string{}); !ans.OK {
		t.Fatalf("a call through B after the attack answered %s", ans.Raw)
	}
	served(t, a)
	served(t, b)
}
