package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/shared/pace"
)

// While a NATS cluster elects a leader (its JetStream meta group's, or a bucket's after the
// server that led it died), JetStream may refuse a request at once: "JetStream system
// temporarily unavailable" (error code 10008) from a server that knows it has no leader, or no
// responders while the subjects' interest moves. Nothing was done then, and a leader usually
// comes within seconds, so an operation on a bucket asks again until its deadline (OpTimeout)
// rather than refusing the person fleet-unavailable in a millisecond.

// errCodeNoLeader is JetStream's "JetStream system temporarily unavailable".
const errCodeNoLeader = 10008

// Pauses between the tries of an operation refused for want of a leader.
const (
	firstRetryWait = 20 * time.Millisecond
	maxRetryWait   = 250 * time.Millisecond
)

// steadyPace paces those tries.
var steadyPace = pace.Backoff{First: firstRetryWait, Max: maxRetryWait}

// noLeader reports whether err is JetStream's refusal of a request it did not take for want of a
// leader or a responder (so asking again may succeed, and changes nothing twice).
func noLeader(err error) bool {
	if err == nil {
		return false
	}
	var legacy nats.JetStreamError
	if errors.As(err, &legacy) && legacy.APIError() != nil && legacy.APIError().ErrorCode == errCodeNoLeader {
		return true
	}
	var js jetstream.JetStreamError
	if errors.As(err, &js) && js.APIError() != nil && js.APIError().ErrorCode == errCodeNoLeader {
		return true
	}
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, errNotCurrent)
}

// A stream's state (its info) is answered by its group's leader, but also by a member of the
// group that knows it has none (nats-server's stream info handler: "isGroupLeaderless"), from its
// own copy, naming no leader; and a leader cut off from the others answers as leader until it
// finds it lost its quorum (lostQuorumInterval, 10 s), while the others may have elected another
// and taken writes. Either answers a state that may be behind the fleet's: a relay on the
// minority side of a partition would take a ledger missing a revocation made on the other side
// for current. So a stream's info counts only when it names a leader that heard from a majority
// of the group within leaseBound (currentInfo); otherwise it is refused as a leader's absence is,
// and steadily asks again within the operation's deadline.

// leaseBound is how recently a stream's leader must have heard from each follower it counts
// towards a majority: NATS's own bound for a follower's "recent contact" with its leader (three
// heartbeat intervals: a leader sends one after a full idle second), under its least election
// timeout (4 s), before which no follower that heard the leader then can have helped elect another.
const leaseBound = 3 * time.Second

// errNotCurrent is a stream's info that currentInfo does not take for current.
var errNotCurrent = errors.New("the stream's state came from a member without a leader, or from a leader that has not heard from a majority of its group lately: it may be behind")

// currentInfo returns info, or errNotCurrent when it names no leader, or its leader has not heard
// from enough of the group's other members within leaseBound to make a majority with it. An
// info without a group (a server of its own, a stream of one replica) names its server as leader.
func currentInfo(info *jetstream.StreamInfo) (*jetstream.StreamInfo, error) {
	c := info.Cluster
	if c == nil {
		return info, nil
	}
	if c.Leader == "" {
		return nil, fmt.Errorf("%w (no leader named)", errNotCurrent)
	}
	heard := 0
	for _, p := range c.Replicas {
		// An Active of 0 is a peer never heard from.
		if p != nil && !p.Offline && p.Active > 0 && p.Active <= leaseBound {
			heard++
		}
	}
	if size := len(c.Replicas) + 1; heard+1 <= size/2 {
		return nil, fmt.Errorf("%w (leader %s heard from %d of the %d others within %v)", errNotCurrent, c.Leader, heard, size-1, leaseBound)
	}
	return info, nil
}

// streamInfo is st's state, current (currentInfo), asking again within ctx while it is not.
func streamInfo(ctx context.Context, st jetstream.Stream) (*jetstream.StreamInfo, error) {
	return steadily(ctx, func() (*jetstream.StreamInfo, error) {
		info, err := st.Info(ctx)
		if err != nil {
			return nil, err
		}
		return currentInfo(info)
	})
}

// steadily runs try until it succeeds, fails otherwise than noLeader, or ctx ends (then with the
// last refusal, saying so, also when ctx ended during a try after a refusal: a publish's own
// wait for a stream, a request left unanswered), pausing a little longer each time.
func steadily[T any](ctx context.Context, try func() (T, error)) (T, error) {
	var refused error
	for tries := 0; ; tries++ {
		v, err := try()
		if err != nil && refused != nil && !noLeader(err) && ctx.Err() != nil {
			return v, fmt.Errorf("no leader while the operation lasted (%w): %w (its last try: %v)", ctx.Err(), refused, err)
		}
		if !noLeader(err) {
			return v, err
		}
		refused = err
		if !pace.Sleep(ctx, steadyPace.Delay(tries)) {
			return v, fmt.Errorf("no leader while the operation lasted (%w): %w", ctx.Err(), err)
		}
	}
}

// steadyKV is a bucket whose operations ask again, within their context, while JetStream has no
// leader for them (steadily), and whose reads of a key are the leader's (Get). The fleet hands
// out its buckets as these.
type steadyKV struct {
	jetstream.KeyValue
	replicated bool // kept with more than one replica (Config.Replicas, which made it)
	nc         *nats.Conn
	lease      *readLease
}

// Get reads the key's value, of a replicated bucket from its stream's leader while it holds a
// lease (current): not by a direct get, which any member of the group answers from its own copy,
// also one cut off from the others, so that a key changed on the majority side of a partition (a
// bearer revoked, a session ended) is never read as it was before on the minority side. A bucket
// of one replica has one copy, on the server that leads it: a direct get is its leader's answer.
func (kv steadyKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if !kv.replicated {
		return steadily(ctx, func() (jetstream.KeyValueEntry, error) { return kv.KeyValue.Get(ctx, key) })
	}
	return steadily(ctx, func() (jetstream.KeyValueEntry, error) {
		if err := kv.current(ctx); err != nil {
			return nil, err
		}
		return kv.leaderGet(ctx, key)
	})
}

func (kv steadyKV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	return steadily(ctx, func() (uint64, error) { return kv.KeyValue.Put(ctx, key, value) })
}

func (kv steadyKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	return steadily(ctx, func() (uint64, error) { return kv.KeyValue.Create(ctx, key, value, opts...) })
}

func (kv steadyKV) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	return steadily(ctx, func() (uint64, error) { return kv.KeyValue.Update(ctx, key, value, revision) })
}

func (kv steadyKV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	_, err := steadily(ctx, func() (struct{}, error) { return struct{}{}, kv.KeyValue.Delete(ctx, key, opts...) })
	return err
}

func (kv steadyKV) Purge(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	_, err := steadily(ctx, func() (struct{}, error) { return struct{}{}, kv.KeyValue.Purge(ctx, key, opts...) })
	return err
}

func (kv steadyKV) WatchAll(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return steadily(ctx, func() (jetstream.KeyWatcher, error) { return kv.KeyValue.WatchAll(ctx, opts...) })
}

func (kv steadyKV) WatchFiltered(ctx context.Context, keys []string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return steadily(ctx, func() (jetstream.KeyWatcher, error) {
		return kv.KeyValue.WatchFiltered(ctx, slices.Clone(keys), opts...) // it writes the subjects over the keys
	})
}

func (kv steadyKV) ListKeysFiltered(ctx context.Context, filters ...string) (jetstream.KeyLister, error) {
	return steadily(ctx, func() (jetstream.KeyLister, error) { return kv.KeyValue.ListKeysFiltered(ctx, filters...) })
}

func (kv steadyKV) Status(ctx context.Context) (jetstream.KeyValueStatus, error) {
	return steadily(ctx, func() (jetstream.KeyValueStatus, error) { return kv.status(ctx) })
}

// status is the bucket's status, its stream's info current (currentInfo).
func (kv steadyKV) status(ctx context.Context) (jetstream.KeyValueStatus, error) {
	st, err := kv.KeyValue.Status(ctx)
	if err != nil {
		return nil, err
	}
	s, ok := st.(interface{ StreamInfo() *jetstream.StreamInfo })
	if !ok {
		return nil, errors.New("fleet: a bucket's status without its stream's info")
	}
	if _, err := currentInfo(s.StreamInfo()); err != nil {
		return nil, err
	}
	return st, nil
}

// leaseHold is how long after a bucket's stream named a leader that had heard from a majority
// within leaseBound (asked before the answer came) a read from that leader is taken for current:
// no other leader can be elected until a follower that heard it waited NATS's least election
// timeout (4 s), at least 4 s - leaseBound after the info; half that leaves room for the
// messages' own travel.
const leaseHold = 500 * time.Millisecond

// readLease is when a bucket's reads from its leader stop being taken for current without asking
// for its stream's state again.
type readLease struct {
	mu    sync.Mutex
	until time.Time
}

// current returns nil while the bucket holds a lease, else asks for its stream's state and,
// current, takes one (leaseHold from when it asked).
func (kv steadyKV) current(ctx context.Context) error {
	kv.lease.mu.Lock()
	held := time.Now().Before(kv.lease.until)
	kv.lease.mu.Unlock()
	if held {
		return nil
	}
	asked := time.Now()
	if _, err := kv.status(ctx); err != nil {
		return err
	}
	kv.lease.mu.Lock()
	if until := asked.Add(leaseHold); until.After(kv.lease.until) {
		kv.lease.until = until
	}
	kv.lease.mu.Unlock()
	return nil
}

// JetStream's error code for a message get that found nothing.
const errCodeNoMessage = 10037

// msgGetResponse is JetStream's answer to a stream's message get ($JS.API.STREAM.MSG.GET), which
// only the stream's leader answers.
type msgGetResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs,omitempty"`
		Data     []byte    `json:"data,omitempty"`
		Time     time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// leaderGet is a key's latest value asked of the bucket stream's leader, read as the client's
// own Get reads it (a delete, a purge or a TTL's marker is a key not found).
func (kv steadyKV) leaderGet(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if !validKey(key) {
		return nil, jetstream.ErrInvalidKey
	}
	bucket := kv.Bucket()
	req, _ := json.Marshal(map[string]string{"last_by_subj": "$KV." + bucket + "." + key})
	m, err := kv.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+bucket, req)
	if err != nil {
		return nil, err
	}
	var resp msgGetResponse
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return nil, fmt.Errorf("fleet: a message get's answer: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == errCodeNoMessage:
		return nil, jetstream.ErrKeyNotFound
	case resp.Error != nil:
		return nil, resp.Error
	case resp.Message == nil:
		return nil, errors.New("fleet: a message get answered neither a message nor an error")
	}
	e := &leaderEntry{bucket: bucket, key: key, value: resp.Message.Data, revision: resp.Message.Sequence, created: resp.Message.Time}
	if len(resp.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(resp.Message.Header)
		if err != nil {
			return nil, fmt.Errorf("fleet: a message get's headers: %w", err)
		}
		if h.Get("KV-Operation") != "" || h.Get(jetstream.MarkerReasonHeader) != "" {
			return nil, jetstream.ErrKeyNotFound // deleted, purged or expired
		}
	}
	return e, nil
}

// validKey is the client's own rule for a key (letters, digits, "-/_=." and no dot at either
// end), so that a key is one subject's tail and never a wildcard.
func validKey(key string) bool {
	if key == "" || key[0] == '.' || key[len(key)-1] == '.' {
		return false
	}
	for _, c := range key {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("-/_=.", c)) {
			return false
		}
	}
	return true
}

// leaderEntry is a key's value as leaderGet read it.
type leaderEntry struct {
	bucket, key string
	value       []byte
	revision    uint64
	created     time.Time
}

func (e *leaderEntry) Bucket() string                  { return e.bucket }
func (e *leaderEntry) Key() string                     { return e.key }
func (e *leaderEntry) Value() []byte                   { return e.value }
func (e *leaderEntry) Revision() uint64                { return e.revision }
func (e *leaderEntry) Created() time.Time              { return e.created }
func (e *leaderEntry) Delta() uint64                   { return 0 }
func (e *leaderEntry) Operation() jetstream.KeyValueOp { return jetstream.KeyValuePut }
