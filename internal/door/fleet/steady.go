package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
// leader for them (steadily). The fleet hands out its buckets as these.
type steadyKV struct{ jetstream.KeyValue }

func (kv steadyKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	return steadily(ctx, func() (jetstream.KeyValueEntry, error) { return kv.KeyValue.Get(ctx, key) })
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
	return steadily(ctx, func() (jetstream.KeyValueStatus, error) { return kv.KeyValue.Status(ctx) })
}
