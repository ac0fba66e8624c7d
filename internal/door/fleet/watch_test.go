package fleet

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
)

// TestAWatchHearsOnlyItsKeysAcrossARestart: a watch of the executor bucket's lease hears the
// lease, never the made-up keys a NATS client writes beside it (before, every key of the bucket,
// with its value), and goes on hearing only the lease once NATS restarts and the watch is made
// again.
func TestAWatchHearsOnlyItsKeysAcrossARestart(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	f, err := Connect(Config{URL: srv.URL(), Prefix: "watch48"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	var mu sync.Mutex
	var heard []string
	stop, _ := f.watch(executorBucket, []string{leaseKey}, func(e jetstream.KeyValueEntry) {
		if e != nil {
			mu.Lock()
			heard = append(heard, e.Key()+"="+string(e.Value()))
			mu.Unlock()
		}
	}, false, false)
	t.Cleanup(stop)
	nc, err := nats.Connect(srv.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	write := func(round string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		kv, err := js.KeyValue(ctx, "watch48_executor")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"junk", "slot2", "slot.x"} {
			if _, err := kv.Put(ctx, k, []byte(round)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := kv.Put(ctx, leaseKey, []byte(round)); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			got := strings.Join(heard, " ")
			mu.Unlock()
			if strings.HasSuffix(got, want) {
				for _, h := range strings.Fields(got) {
					if !strings.HasPrefix(h, leaseKey+"=") {
						t.Fatalf("the lease's watch heard %q (all: %s)", h, got)
					}
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the watch heard %q; want it to end with %q", got, want)
			}
		}
	}
	write("one")
	wait(leaseKey + "=one")
	srv.Restart()
	until(t, "the relay back on NATS", f.Connected)
	write("two")
	wait(leaseKey + "=two")
}

// TestABucketMadeBeforeTheValueBoundTakesIt: a bucket an older relay made, with no value bound
// and a record in it, is given its bound by the first relay that uses it now: the record stays,
// a value past the bound is refused, and one within it is taken.
func TestABucketMadeBeforeTheValueBoundTakesIt(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	old, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "older48_" + mcpClientsBucket, History: 1, LimitMarkerTTL: markerTTL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Put(ctx, "b.kept", []byte(strings.Repeat("k", 100<<10))); err != nil {
		t.Fatal(err)
	}
	f, err := Connect(Config{URL: srv.URL(), Prefix: "older48"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	opCtx, opCancel, kv, err := f.op(mcpClientsBucket)
	if err != nil {
		t.Fatalf("the older bucket: %v", err)
	}
	defer opCancel()
	if st, err := kv.Status(opCtx); err != nil || st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.MaxMsgSize != recordValueBytes {
		t.Fatalf("the older bucket's value bound after a relay used it: %v %+v", err, st)
	}
	if e, err := kv.Get(opCtx, "b.kept"); err != nil || len(e.Value()) != 100<<10 {
		t.Fatalf("the record made before the bound: %v", err)
	}
	if _, err := kv.Put(opCtx, "b.large", make([]byte, recordValueBytes+1)); err == nil {
		t.Fatal("a value past the bound was taken")
	}
	if _, err := kv.Put(opCtx, "b.small", make([]byte, recordValueBytes-64)); err != nil {
		t.Fatalf("a value within the bound: %v", err)
	}
}
