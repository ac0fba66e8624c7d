// Package fleet runs several relays as one behind a load balancer, on NATS with JetStream: the
// state every relay must agree on lives in JetStream key-value buckets, calls reach the executor
// on whichever relay holds it by NATS request/reply, and the page's events fan out on NATS
// subjects. No cluster protocol of our own: NATS is the one engine for all three.
//
// A relay without --nats uses none of this: its stores stay in files and memory (internal/core/session's
// MemoryRecords, internal/core/hoststate's files). docs/scaling.md is the operator's side of this page.
//
// # What is shared, and where
//
//	<prefix>_tickets    bootstrap tickets by SHA-256, single use (delete on the revision read), per-key TTL
//	<prefix>_sessions   sessions by ID with the SHA-256 of their token, per-key TTL = the lifetime
//	<prefix>_pairings   paired machines: name and the SHA-256 of the bearer, never the bearer
//	<prefix>_files      small state files the relays share (the agent settings)
//	<prefix>_executor   "slot": the executor lease (which relay holds the page or machine, renewed
//	                    by heartbeat); "offer": what that page offers the model (Router)
//	<prefix>.exec.<lease>     request/reply subject of the executor under one lease
//	<prefix>.events           the page's event stream, every relay's /api/events
//	<prefix>.approvals        a person's decision on an approval, to the relay whose call waits for it
//	<prefix>.watching         answered by every relay whose event stream a page follows now
//	<prefix>.presence         every relay's heartbeat, so the others end its approvals once it
//	                          falls silent (Events)
//	<prefix>_mcpclients       the MCP clients' bearers: records by the bearer's SHA-256, and the
//	                          live bearer's hash of each name (moved by compare-and-set)
//	<prefix>_extfiles   (object store) extension proposals, admitted descriptors, WASM modules
//	<prefix>_ledger     (stream on <prefix>.ledger) the extension ledger, append only
//	<prefix>_extcodes   "codes": the console approval codes' document, by compare-and-set
//	<prefix>.extensions       after each ledger line: every other relay reloads its extensions
//
// Vendor API keys are never written to NATS: in a fleet they come from each relay's environment
// (or the deployment's secret store, mounted as the environment), as .vendor-keys.json stays in
// each relay's own state directory. The host token is each relay's own as well; give every relay
// the same one by copying the state directory's .host-token.
//
// # When NATS cannot be reached
//
// The connection reconnects by itself, forever. Meanwhile everything that needs shared state is
// refused fleet-unavailable at once (a session check answers 503 with it, a routed call is
// refused with it), and what does not is served: the page's files, /api/health, calls to an
// executor attached to this relay, and the sessions this relay checked itself, for SessionGrace. Whoever can publish on the fleet's subjects is trusted like a
// relay (it can call the executor and decide approvals): NATS credentials are as precious as the
// host token. Events taken from the fleet are checked to be one event each (ValidEventFrame).
package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// DefaultPrefix starts every bucket and subject name of a fleet; Config.Prefix sets another, so
// several fleets can share one NATS account.
const DefaultPrefix = "voicebox"

// MaxReplicas is the most JetStream replicas NATS keeps of a stream or bucket.
const MaxReplicas = 5

// OpTimeout bounds one key-value operation or publish; past it the operation fails
// fleet-unavailable. Within it, an operation JetStream refuses for want of a leader (a cluster
// electing one) is asked again (steadily).
const OpTimeout = 2 * time.Second

// markerTTL is how long a bucket keeps the marker of a key its TTL removed, so watchers hear of
// it. NATS requires at least a second.
const markerTTL = 10 * time.Second

// reconnectWait is how long the connection waits between attempts to reach NATS again.
const reconnectWait = 250 * time.Millisecond

// Config is how a relay joins a fleet.
type Config struct {
	// URL is the NATS server, or several separated by commas (nats://host:4222, tls://...).
	URL string
	// Credentials is a NATS credentials file (.creds: a user JWT and its nkey seed); "" for none.
	Credentials string
	// CA is a PEM file of the CAs the NATS server's certificate is checked against; "" uses the
	// system's. Cert and Key are a client certificate for servers that verify clients.
	CA, Cert, Key string
	// Prefix names the fleet's buckets and subjects; "" means DefaultPrefix. Letters, digits,
	// '-' and '_' only.
	Prefix string
	// RelayID names this relay in leases, routed call ids and logs: 1 to 64 letters, digits, '-'
	// or '_', unique in the fleet; "" draws a random one.
	RelayID string
	// LeaseTTL is how long an executor lease lasts without a heartbeat; zero means
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Replicas is how many servers of a NATS cluster keep each of the fleet's buckets, its
	// object store and its ledger stream (JetStream replicas): 3 on a three-node cluster, so
	// losing one node loses nothing; zero means 1 (a single server). At most MaxReplicas.
	Replicas int
	// Log receives connection events; nil discards.
	Log *slog.Logger

	// callTimeout replaces channel.DefaultTimeout, the wait of a routed call whose caller asked
	// none, for this package's tests only (as the hub's Options.callTimeout; WithCallTimeout).
	callTimeout time.Duration
	// opTimeout replaces OpTimeout for the operations on the buckets and the extension store, for
	// this package's tests only (the leader case's nine operations each wait it out).
	opTimeout time.Duration
}

// opTimeout bounds one operation on a bucket or the extension store: OpTimeout.
func (f *Fleet) opTimeout() time.Duration {
	if f.cfg.opTimeout > 0 {
		return f.cfg.opTimeout
	}
	return OpTimeout
}

// defaultWait is how long a routed call whose caller asked no wait of its own may wait: the
// broker's, channel.DefaultTimeout.
func (f *Fleet) defaultWait() time.Duration {
	if f.cfg.callTimeout > 0 {
		return f.cfg.callTimeout
	}
	return channel.DefaultTimeout
}

// Fleet is one relay's connection to the fleet. It is safe for concurrent use.
type Fleet struct {
	cfg Config
	nc  *nats.Conn
	js  jetstream.JetStream
	log *slog.Logger

	mu      sync.Mutex
	buckets map[string]jetstream.KeyValue
	back    chan struct{} // closed when NATS (re)connects
	joined  time.Time     // when NATS last (re)connected
	down    chan struct{} // closed when the connection to NATS drops, made anew when it is back
	isDown  bool          // down is closed

	saidMu sync.Mutex
	said   map[string]time.Time // when each line sayOnce keys was last said
}

// sayEvery bounds how often the relay says one thing of the fleet's that a flood can repeat (a
// subscription past its bounds, a leave of a live run not believed): one line per subject or run
// per period.
const sayEvery = 10 * time.Second

// maxSaid bounds the keys whose last line is remembered; past it the memory starts over.
const maxSaid = 64

// sayOnce reports whether the line keyed key may be said now: not said within sayEvery.
func (f *Fleet) sayOnce(key string) bool {
	f.saidMu.Lock()
	defer f.saidMu.Unlock()
	if f.said == nil || len(f.said) >= maxSaid {
		f.said = map[string]time.Time{}
	}
	now := time.Now()
	if last, ok := f.said[key]; ok && now.Sub(last) < sayEvery {
		return false
	}
	f.said[key] = now
	return true
}

// asyncError says what NATS's client reports out of band: a subscription past its bounds (a
// flood; what arrives meanwhile is dropped) at most once per subject per sayEvery.
func (f *Fleet) asyncError(_ *nats.Conn, sub *nats.Subscription, err error) {
	if !errors.Is(err, nats.ErrSlowConsumer) || sub == nil {
		f.log.Warn("fleet: NATS reported an error", "err", err)
		return
	}
	if f.sayOnce("dropped " + sub.Subject) {
		dropped, _ := sub.Dropped()
		f.log.Warn("fleet: messages past a subscription's bounds were dropped (a flood on the fleet's subjects)", "subject", sub.Subject, "dropped", dropped)
	}
}

// Connect joins the fleet at cfg.URL. It returns at once even when NATS cannot be reached yet:
// the connection keeps trying, and shared state is refused fleet-unavailable until it succeeds.
// It fails only for a configuration that can never work (a bad URL or prefix, unreadable files).
func Connect(cfg Config) (*Fleet, error) {
	if cfg.URL == "" {
		return nil, errors.New("fleet: no NATS URL")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if !validName(cfg.Prefix, maxPrefixBytes) {
		return nil, fmt.Errorf("fleet: the prefix %q must be 1 to 32 letters, digits, '-' or '_'", cfg.Prefix)
	}
	if cfg.RelayID == "" {
		cfg.RelayID = "relay-" + randomHex(6)
	}
	if !validName(cfg.RelayID, maxRelayIDBytes) {
		return nil, fmt.Errorf("fleet: the relay id %q must be 1 to %d letters, digits, '-' or '_'", cfg.RelayID, maxRelayIDBytes)
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.Replicas < 1 || cfg.Replicas > MaxReplicas {
		return nil, fmt.Errorf("fleet: replicas must be 1 to %d, not %d", MaxReplicas, cfg.Replicas)
	}
	f := &Fleet{cfg: cfg, log: cfg.Log, buckets: map[string]jetstream.KeyValue{}, back: make(chan struct{}), down: make(chan struct{})}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	opts := []nats.Option{
		nats.Name("voicebox " + cfg.RelayID),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(reconnectWait),
		// Nothing is buffered while disconnected: a publish fails at once, and is refused
		// fleet-unavailable, instead of reaching NATS late.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			f.log.Warn("fleet: NATS disconnected; shared state is refused until it is back", "err", err)
			f.dropped()
		}),
		nats.ErrorHandler(f.asyncError),
		nats.ReconnectHandler(func(*nats.Conn) {
			f.log.Info("fleet: NATS reconnected")
			f.connectedAgain()
		}),
		nats.ConnectHandler(func(*nats.Conn) {
			f.log.Info("fleet: NATS connected", "relay", cfg.RelayID)
			f.connectedAgain()
		}),
	}
	if cfg.Credentials != "" {
		opts = append(opts, nats.UserCredentials(cfg.Credentials))
	}
	if cfg.CA != "" {
		opts = append(opts, nats.RootCAs(cfg.CA))
	}
	if cfg.Cert != "" || cfg.Key != "" {
		opts = append(opts, nats.ClientCert(cfg.Cert, cfg.Key))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("fleet: %w", err)
	}
	f.nc, f.js = nc, js
	return f, nil
}

// ID returns this relay's name in the fleet.
func (f *Fleet) ID() string { return f.cfg.RelayID }

// Connected reports whether NATS is reachable now.
func (f *Fleet) Connected() bool { return f.nc.IsConnected() }

// Close leaves the fleet: the connection is closed without draining (what waits is answered by
// its own deadline or by the relays that hear this relay's lease end).
func (f *Fleet) Close() { f.nc.Close() }

// name returns the fleet's name for a bucket or a subject token.
// Prefix is the fleet's prefix (Config.Prefix, DefaultPrefix when it was ""): the relays of one
// fleet share it.
func (f *Fleet) Prefix() string { return f.cfg.Prefix }

func (f *Fleet) name(s string) string { return f.cfg.Prefix + "_" + s }

// subject returns the fleet's subject for the dot-separated tokens.
func (f *Fleet) subject(tokens string) string { return f.cfg.Prefix + "." + tokens }

// bucket returns the key-value bucket name, made on first use with TTL markers on (per-key TTL
// and watchers that hear expiries); its operations wait for a leader within their context
// (steadyKV).
func (f *Fleet) bucket(ctx context.Context, name string) (jetstream.KeyValue, error) {
	f.mu.Lock()
	kv := f.buckets[name]
	f.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	if !f.nc.IsConnected() {
		return nil, f.unavailable(nats.ErrConnectionClosed)
	}
	made, err := steadily(ctx, func() (jetstream.KeyValue, error) {
		return f.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: f.name(name), History: 1, LimitMarkerTTL: markerTTL, Replicas: f.cfg.Replicas,
			MaxValueSize: bucketValueBytes(name)})
	})
	if err != nil {
		return nil, f.unavailable(err)
	}
	kv = steadyKV{KeyValue: made, replicated: f.cfg.Replicas > 1, nc: f.nc, lease: &readLease{}}
	f.mu.Lock()
	f.buckets[name] = kv
	f.mu.Unlock()
	return kv, nil
}

// What one value of each bucket may hold (its MaxValueSize: NATS refuses a larger write, by a
// relay or by whoever else holds the fleet's credentials), so a watch or a listing reads no
// value larger than the bucket's own records. History is 1 everywhere: a key keeps its last value.
const (
	// recordValueBytes: a ticket, a session, a pairing, an MCP client's record or its name's
	// hash (each a few hundred bytes).
	recordValueBytes = 16 << 10
	// filesValueBytes: a shared state file (the agent settings, 16 KiB at most).
	filesValueBytes = 64 << 10
	// executorValueBytes: the lease, and what the holder's page offers (its declarations, bounded
	// as the page sent them by the wire's frame).
	executorValueBytes = wire.MaxFrameBytes + 16<<10
)

// bucketValueBytes returns MaxValueSize of the bucket name: 0 (NATS's max_payload) for the
// approval codes' document, read by one Get at a time and never watched.
func bucketValueBytes(name string) int32 {
	switch name {
	case ticketsBucket, sessionsBucket, pairingsBucket, mcpClientsBucket:
		return recordValueBytes
	case filesBucket:
		return filesValueBytes
	case executorBucket:
		return executorValueBytes
	}
	return 0
}

// op returns a context bounded by OpTimeout, and the bucket, or fleet-unavailable at once when
// NATS is not connected.
func (f *Fleet) op(name string) (context.Context, context.CancelFunc, jetstream.KeyValue, error) {
	if !f.nc.IsConnected() {
		return nil, nil, nil, f.unavailable(nats.ErrDisconnected)
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.opTimeout())
	kv, err := f.bucket(ctx, name)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, cancel, kv, nil
}

// unavailable logs err and returns the refusal shared state is refused with.
func (f *Fleet) unavailable(err error) error {
	f.log.Warn("fleet: shared state unreachable", "err", err)
	return refusal.New(refusal.FleetUnavailable, "this relay cannot reach the fleet's shared state (NATS) now; it reconnects by itself, so try again in a moment")
}

// Unavailable reports whether err is the fleet's refusal for state it could not reach.
func Unavailable(err error) bool { return refusal.RuleOf(err) == refusal.FleetUnavailable }

// SafeName returns s with every character a NATS token cannot carry (anything but letters,
// digits, '-' and '_') replaced by '-', cut to 32 bytes: a host name made into a relay's id.
func SafeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	if len(b) > 32 {
		b = b[:32]
	}
	return string(b)
}

// RandomSuffix returns 6 random hex digits, to tell apart relays on one host.
func RandomSuffix() string { return randomHex(3) }

// The bounds of the names in a fleet's subjects and buckets.
const (
	maxPrefixBytes  = 32
	maxRelayIDBytes = 64
)

func validName(p string, max int) bool {
	if p == "" || len(p) > max {
		return false
	}
	for _, c := range p {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand's contract since Go 1.24)
	return hex.EncodeToString(b)
}

// watch calls fn with every entry of bucket under keys (from now on when updatesOnly, else the
// current values first; keys only, never their values, when metaOnly) until stop, and with nil
// each time a watch is made. When NATS comes back after a disconnection the watch is made again,
// so a watcher never silently stops; without updatesOnly it then starts with the current values.
// It returns once the first watch is in place (or after OpTimeout, while NATS is away), so what
// is changed after it returns is heard.
//
// Whoever holds the fleet's NATS credentials can write any key of a bucket: a watch hears only
// the keys it names, and the values it reads, so other keys cost it nothing, and what it reads
// is bounded by the bucket's value size (bucketValueBytes).
func (f *Fleet) watch(bucket string, keys []string, fn func(jetstream.KeyValueEntry), updatesOnly, metaOnly bool) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	ready := make(chan struct{})
	var readyOnce sync.Once
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			back := f.reconnected()
			if !f.nc.IsConnected() {
				select {
				case <-back:
				case <-ctx.Done():
				}
				continue
			}
			bctx, bcancel := context.WithTimeout(ctx, OpTimeout)
			kv, err := f.bucket(bctx, bucket)
			bcancel()
			var w jetstream.KeyWatcher
			if err == nil {
				var opts []jetstream.WatchOpt
				if updatesOnly {
					opts = append(opts, jetstream.UpdatesOnly())
				}
				if metaOnly {
					opts = append(opts, jetstream.MetaOnly())
				}
				w, err = kv.WatchFiltered(ctx, slices.Clone(keys), opts...) // it writes the subjects over the keys
			}
			if err != nil {
				select {
				case <-time.After(reconnectWait):
				case <-ctx.Done():
				}
				continue
			}
			readyOnce.Do(func() { close(ready) })
			fn(nil) // a new watch: what follows starts afresh (a NATS restarted empty starts its revisions again)
			f.pump(ctx, w, back, fn)
			w.Stop()
		}
	}()
	select {
	case <-ready:
	case <-time.After(OpTimeout):
	}
	return func() { cancel(); <-done }, nil
}

// pump hands w's entries to fn until ctx ends, NATS reconnects (back) or w ends.
func (f *Fleet) pump(ctx context.Context, w jetstream.KeyWatcher, back <-chan struct{}, fn func(jetstream.KeyValueEntry)) {
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil {
				fn(e)
			}
		case <-back:
			return
		case <-ctx.Done():
			return
		}
	}
}

// reconnected returns a channel closed the next time NATS (re)connects.
func (f *Fleet) reconnected() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.back
}

// connectedAgain wakes everything waiting for NATS, and forgets the buckets: a NATS that came
// back empty (no JetStream store kept) has them made again on first use.
func (f *Fleet) connectedAgain() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.buckets)
	close(f.back)
	f.back = make(chan struct{})
	f.joined = time.Now()
	if f.isDown {
		f.down, f.isDown = make(chan struct{}), false
	}
}

// dropped wakes everything that waits for a reply over the connection that dropped: no reply
// sent to it will come (NATS keeps no message for a connection that is gone).
func (f *Fleet) dropped() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.isDown {
		close(f.down)
		f.isDown = true
	}
}

// lost returns a channel closed the next time the connection to NATS drops (at once when it is
// down now).
func (f *Fleet) lost() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down
}

// joinedAt returns when NATS last (re)connected; zero before it first did.
func (f *Fleet) joinedAt() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.joined
}

// DefaultLeaseTTL is how long an executor lease lasts without a heartbeat: a relay that dies
// loses its executor's lease within this bound (plus one heartbeat), and calls routed to it are
// refused outcome-unknown by then at the latest.
const DefaultLeaseTTL = 5 * time.Second
