package fleet

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
)

// natsLostQuorum is how long a NATS server's JetStream meta group must have run before the
// server, finding itself without a leader, refuses requests at once "JetStream system
// temporarily unavailable" rather than leaving them unanswered (nats-server's
// lostQuorumInterval).
const natsLostQuorum = 10 * time.Second

// syncBuffer is a log a relay writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAnOperationWaitsForALeaderWithinItsDeadline: a relay on a three-node NATS cluster, its
// buckets kept with three replicas, on the first node. The other two die (SIGKILL), so the
// first has no JetStream leader and, once it knows, refuses every request at once "temporarily
// unavailable", as a server does while its cluster elects a leader. A listing of the MCP clients
// then asks again until its OpTimeout (a leader elected meanwhile would answer it) and only then
// is refused fleet-unavailable. On main it was refused in a millisecond, at the first refusal.
func TestAnOperationWaitsForALeaderWithinItsDeadline(t *testing.T) {
	t.Parallel()
	nodes := fleettest.StartCluster(t, 3)
	started := time.Now()
	var log syncBuffer
	f, err := Connect(Config{URL: nodes[0].URL(), Prefix: "leader", Replicas: 3, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.MCPClients()
	until(t, "the cluster taking a mint", func() bool { _, err := s.Mint("desk"); return err == nil })
	if got, err := s.List(); err != nil || len(got) != 1 {
		t.Fatalf("the clients before the fault: %v %v", got, err)
	}

	time.Sleep(time.Until(started.Add(natsLostQuorum + time.Second)))
	nodes[1].Kill()
	nodes[2].Kill()
	until(t, "the first node refusing at once for want of a leader", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), OpTimeout)
		defer cancel()
		_, err := f.js.AccountInfo(ctx)
		return noLeader(err)
	})

	from := len(log.String())
	_, err = s.List()
	if !Unavailable(err) {
		t.Fatalf("a listing without a leader answered %v; want fleet-unavailable", err)
	}
	said := log.String()[from:]
	if !strings.Contains(said, "no leader while the operation lasted") {
		t.Fatalf("the listing was refused for %q; want it to ask again until its deadline (OpTimeout)", said)
	}
}
