package fleet

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/core/session"
)

// The buckets of the gate's tickets and sessions.
const (
	ticketsBucket  = "tickets"
	sessionsBucket = "sessions"
)

// minKeyTTL is the shortest per-key TTL NATS takes; a shorter one is rounded up (expiry is
// checked against the record's own deadline as well, so nothing lives longer for it).
const minKeyTTL = time.Second

// SessionGrace is how long a relay keeps admitting, while the fleet's shared state (NATS) does
// not answer, the sessions it had itself checked against it: a page signed in before NATS went
// away keeps working through the relay it reached, for this long after the sessions bucket last
// answered this relay. A session this relay never checked is refused fleet-unavailable, as is
// every session once the grace has passed. A revocation made through another relay meanwhile is
// heard when NATS is back (every session is then checked again), so it wins at the latest then;
// within the grace, a partitioned relay may admit a session revoked elsewhere.
const SessionGrace = 5 * time.Minute

// Records are the gate's tickets and sessions in JetStream key-value buckets: a session minted
// on one relay passes on every relay of the fleet, a ticket is spent once across all of them
// (deleted on the revision that was read, so of two relays redeeming it at once one wins), and a
// revocation is heard by every relay (WatchEnds). Keys are hashes and IDs, never a token.
//
// The sessions this relay checked are kept in its memory (seen) so that they pass while NATS is
// away, within SessionGrace (see there). What the watch hears removed leaves seen at once, and
// seen is emptied each time the watch is made again (NATS came back), so nothing removed while
// this relay could not hear it passes from memory after that.
type Records struct {
	f *Fleet

	mu       sync.Mutex
	seen     map[string]session.Record // sessions the bucket confirmed, by ID
	answered time.Time                 // when the sessions bucket last answered this relay
}

// Records returns the fleet's session records, for session.Options.Records.
func (f *Fleet) Records() *Records { return &Records{f: f, seen: map[string]session.Record{}} }

// remember records that the bucket answered now, with rec found (ok) or not.
func (r *Records) remember(id string, rec session.Record, ok bool) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answered = now
	if !ok {
		delete(r.seen, id)
		return
	}
	if _, known := r.seen[id]; !known {
		for k, old := range r.seen { // sessions past their lifetime leave as new ones come
			if !now.Before(old.Info.Expires) {
				delete(r.seen, k)
			}
		}
	}
	r.seen[id] = rec
}

// fallback answers a session check the bucket could not: the session as this relay last saw it,
// within SessionGrace of the bucket's last answer, else err.
func (r *Records) fallback(id string, now time.Time, err error) (session.Record, bool, error) {
	r.mu.Lock()
	rec, known := r.seen[id]
	fresh := time.Since(r.answered) < SessionGrace
	r.mu.Unlock()
	if !known || !fresh || !now.Before(rec.Info.Expires) {
		return session.Record{}, false, err
	}
	return rec, true, nil
}

// forget drops id from the sessions kept in memory; "" drops them all.
func (r *Records) forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id == "" {
		clear(r.seen)
		return
	}
	delete(r.seen, id)
}

var _ interface {
	session.Records
	session.EndWatcher
} = (*Records)(nil)

type ticketValue struct {
	Deadline time.Time `json:"deadline,omitzero"`
}

type sessionValue struct {
	Hash    string    `json:"hash"` // hex SHA-256 of the token
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	Client  string    `json:"client,omitempty"`
}

func ttlUntil(deadline, now time.Time) time.Duration {
	if deadline.IsZero() {
		return 0
	}
	return max(deadline.Sub(now), minKeyTTL)
}

// AddTicket implements session.Records.
func (r *Records) AddTicket(hash [32]byte, deadline time.Time) error {
	ctx, cancel, kv, err := r.f.op(ticketsBucket)
	if err != nil {
		return err
	}
	defer cancel()
	b, _ := json.Marshal(ticketValue{Deadline: deadline})
	var opts []jetstream.KVCreateOpt
	if ttl := ttlUntil(deadline, time.Now()); ttl > 0 {
		opts = append(opts, jetstream.KeyTTL(ttl))
	}
	if _, err := kv.Create(ctx, hex.EncodeToString(hash[:]), b, opts...); err != nil {
		return r.f.unavailable(err)
	}
	return nil
}

// TakeTicket implements session.Records: the ticket is deleted on the revision read, so only one
// taker's delete succeeds.
func (r *Records) TakeTicket(hash [32]byte, now time.Time) (bool, error) {
	ctx, cancel, kv, err := r.f.op(ticketsBucket)
	if err != nil {
		return false, err
	}
	defer cancel()
	key := hex.EncodeToString(hash[:])
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, r.f.unavailable(err)
	}
	var v ticketValue
	if json.Unmarshal(e.Value(), &v) != nil {
		return false, nil
	}
	err = kv.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return false, nil // another relay took it first
	}
	if err != nil {
		return false, r.f.unavailable(err)
	}
	return v.Deadline.IsZero() || now.Before(v.Deadline), nil
}

// AddSession implements session.Records; the key lives until the session expires.
func (r *Records) AddSession(rec session.Record) error {
	ctx, cancel, kv, err := r.f.op(sessionsBucket)
	if err != nil {
		return err
	}
	defer cancel()
	b, _ := json.Marshal(sessionValue{Hash: hex.EncodeToString(rec.Hash[:]), ID: rec.Info.ID, Created: rec.Info.Created, Expires: rec.Info.Expires, Client: rec.Info.Client})
	var opts []jetstream.KVCreateOpt
	if ttl := ttlUntil(rec.Info.Expires, time.Now()); ttl > 0 {
		opts = append(opts, jetstream.KeyTTL(ttl))
	}
	if _, err := kv.Create(ctx, rec.Info.ID, b, opts...); err != nil {
		return r.f.unavailable(err)
	}
	r.remember(rec.Info.ID, rec, true)
	return nil
}

func decodeSession(b []byte) (session.Record, bool) {
	var v sessionValue
	if json.Unmarshal(b, &v) != nil {
		return session.Record{}, false
	}
	h, err := hex.DecodeString(v.Hash)
	if err != nil || len(h) != 32 {
		return session.Record{}, false
	}
	rec := session.Record{Info: session.Info{ID: v.ID, Created: v.Created, Expires: v.Expires, Client: v.Client}}
	copy(rec.Hash[:], h)
	return rec, true
}

// Session implements session.Records.
func (r *Records) Session(id string, now time.Time) (session.Record, bool, error) {
	if !hexID(id) {
		return session.Record{}, false, nil
	}
	ctx, cancel, kv, err := r.f.op(sessionsBucket)
	if err != nil {
		return r.fallback(id, now, err)
	}
	defer cancel()
	e, err := kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		r.remember(id, session.Record{}, false)
		return session.Record{}, false, nil
	}
	if err != nil {
		return r.fallback(id, now, r.f.unavailable(err))
	}
	rec, ok := decodeSession(e.Value())
	if !ok || rec.Info.ID != id || !now.Before(rec.Info.Expires) {
		r.remember(id, session.Record{}, false)
		return session.Record{}, false, nil
	}
	r.remember(id, rec, true)
	return rec, true, nil
}

// RemoveSession implements session.Records.
func (r *Records) RemoveSession(id string) (bool, error) {
	if !hexID(id) {
		return false, nil
	}
	ctx, cancel, kv, err := r.f.op(sessionsBucket)
	if err != nil {
		return false, err
	}
	defer cancel()
	e, err := kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, r.f.unavailable(err)
	}
	err = kv.Delete(ctx, id, jetstream.LastRevision(e.Revision()))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return false, nil
	}
	if err != nil {
		return false, r.f.unavailable(err)
	}
	r.forget(id)
	return true, nil
}

// Sessions implements session.Records.
func (r *Records) Sessions(now time.Time) ([]session.Record, error) {
	ctx, cancel, kv, err := r.f.op(sessionsBucket)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var out []session.Record
	err = eachValue(ctx, kv, func(_ string, b []byte) {
		if rec, ok := decodeSession(b); ok && now.Before(rec.Info.Expires) {
			out = append(out, rec)
		}
	})
	if err != nil {
		return nil, r.f.unavailable(err)
	}
	return out, nil
}

// WatchEnds implements session.EndWatcher: fn hears every session deleted or expired in the
// bucket, by any relay, and "" each time the watch is made again after NATS was away (what was
// removed meanwhile was not heard).
func (r *Records) WatchEnds(fn func(id string)) (stop func(), err error) {
	first := true
	return r.f.watch(sessionsBucket, []string{jetstream.AllKeys}, func(e jetstream.KeyValueEntry) {
		switch {
		case e == nil && first:
			first = false
		case e == nil:
			r.forget("") // removals may have been missed: what passes is asked of the bucket again
			go fn("")    // it reads the records: not on the watch's goroutine
		case e.Operation() != jetstream.KeyValuePut:
			r.forget(e.Key())
			fn(e.Key())
		}
	}, true, true) // a removal is all it hears: the values are not read
}

// eachValue calls fn with every live key and value in kv.
func eachValue(ctx context.Context, kv jetstream.KeyValue, fn func(key string, value []byte)) error {
	return eachEntry(ctx, kv, func(e jetstream.KeyValueEntry) { fn(e.Key(), e.Value()) })
}

// eachEntry calls fn with every entry of kv (deleted keys left out), until the current ones are
// done or ctx ends.
func eachEntry(ctx context.Context, kv jetstream.KeyValue, fn func(jetstream.KeyValueEntry)) error {
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case e := <-w.Updates():
			if e == nil {
				return nil // the initial values are done
			}
			fn(e)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func hexID(id string) bool {
	if len(id) != session.IDHexLen {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}
