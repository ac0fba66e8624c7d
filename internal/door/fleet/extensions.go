package fleet

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// The names of the extension store in the fleet.
const (
	// extFilesBucket is the object store of proposals, admitted descriptors and their modules,
	// by their names in the store (proposals/<id>.json, <id>.json, the modules' paths).
	extFilesBucket = "extfiles"
	// extLedgerStream is the stream of the ledger, one message per line, on <prefix>.ledger.
	extLedgerStream = "ledger"
	// extCodesBucket holds the approval codes' document under the key extCodesKey.
	extCodesBucket = "extcodes"
	extCodesKey    = "codes"
	// extChangedSubject is published on after every ledger line: every other relay reloads its
	// admitted set.
	extChangedSubject = "extensions"
)

// extChangedPendingMsgs and extChangedPendingBytes bound what a relay holds of the messages on
// extChangedSubject not yet handled; past either, NATS's client drops what arrives.
const (
	extChangedPendingMsgs  = 64
	extChangedPendingBytes = 16 << 10
)

// MaxLedgerLineBytes bounds one line of the fleet's ledger (a ledger line is an action, an id,
// a hash, who and when: under 300 bytes); the stream refuses a longer message.
const MaxLedgerLineBytes = 4 << 10

// MaxLedgerLines and MaxLedgerBytes bound the fleet's ledger stream: past either, the stream
// drops its oldest lines (a limit NATS keeps, so every reload reads at most this much, and so does
// a revocation's check). A person's ledger line is under 300 bytes, so the bound holds over
// ten thousand of their admissions, denials and revocations; only a flood reaches it (whoever
// holds the fleet's NATS credentials can append lines of MaxLedgerLineBytes). Dropping the oldest
// keeps each extension's latest line while any of its lines is kept (a reload reads each id's
// latest line): an extension whose every line was dropped is no longer admitted
// (present-not-admitted, never run) until it is admitted again. ReadLedger says when lines were
// dropped.
const (
	MaxLedgerLines = 10000
	MaxLedgerBytes = 4 << 20
)

// ledgerFetchBatch is how many ledger lines one fetch asks for.
const ledgerFetchBatch = 512

// ExtensionStore is the fleet's extension store (the extension door's Store, internal/door/extensionhost,
// which this package need not import): what is proposed, admitted, denied or revoked through one
// relay is what every relay loads, and an approval code
// issued on one relay is taken once across all of them (compare-and-set on the codes' key).
// Proposals, descriptors and modules are objects of <prefix>_extfiles (an object store, so a
// module of up to wasmtool's bound is chunked below NATS's payload limit); the ledger is the
// append-only stream <prefix>_ledger; the codes' document is the key "codes" of
// <prefix>_extcodes. Outstanding codes are held there in clear, as .pending-approval.json holds
// them in a state directory: whoever reads NATS reads them.
type ExtensionStore struct {
	f *Fleet

	mu      sync.Mutex
	objects jetstream.ObjectStore
	ledger  jetstream.Stream
	back    <-chan struct{} // the handles above were made before this closed

	readMu sync.Mutex // one ReadLedger at a time takes and keeps kept
	kept   keptLedger
}

// Extensions returns the fleet's extension store.
func (f *Fleet) Extensions() *ExtensionStore { return &ExtensionStore{f: f} }

// handles returns the object store and the ledger's stream, made on first use and again after
// NATS reconnected (a NATS that came back empty has them made again).
func (s *ExtensionStore) handles(ctx context.Context) (jetstream.ObjectStore, jetstream.Stream, error) {
	if !s.f.Connected() {
		return nil, nil, s.f.unavailable(nats.ErrDisconnected)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.objects != nil {
		select {
		case <-s.back:
		default:
			return s.objects, s.ledger, nil
		}
	}
	back := s.f.reconnected()
	obj, err := steadily(ctx, func() (jetstream.ObjectStore, error) {
		return s.f.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: s.f.name(extFilesBucket), Storage: jetstream.FileStorage, Replicas: s.f.cfg.Replicas})
	})
	if err != nil {
		return nil, nil, s.f.unavailable(err)
	}
	st, err := steadily(ctx, func() (jetstream.Stream, error) {
		return s.f.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: s.f.name(extLedgerStream), Subjects: []string{s.f.subject(extLedgerStream)},
			Storage: jetstream.FileStorage, MaxMsgSize: MaxLedgerLineBytes, MaxMsgs: MaxLedgerLines, MaxBytes: MaxLedgerBytes, Discard: jetstream.DiscardOld,
			DenyDelete: true, DenyPurge: true, Replicas: s.f.cfg.Replicas})
	})
	if err != nil {
		return nil, nil, s.f.unavailable(err)
	}
	s.objects, s.ledger, s.back = obj, st, back
	return obj, st, nil
}

// opContext returns a context bounded by OpTimeout.
func (f *Fleet) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), f.opTimeout())
}

func storeName(name string) error {
	if err := fsroot.Check(name); err != nil {
		return errors.New("fleet: " + err.Error())
	}
	return nil
}

// ReadFile is the extension door's Store method.
func (s *ExtensionStore) ReadFile(name string, max int64) ([]byte, error) {
	if err := storeName(name); err != nil {
		return nil, err
	}
	ctx, cancel := s.f.opContext()
	defer cancel()
	obj, _, err := s.handles(ctx)
	if err != nil {
		return nil, err
	}
	r, err := steadily(ctx, func() (jetstream.ObjectResult, error) { return obj.Get(ctx, name) })
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fs.ErrNotExist
	}
	if err != nil {
		return nil, s.f.unavailable(err)
	}
	defer r.Close()
	if info, err := r.Info(); err == nil && int64(info.Size) > max {
		return nil, hoststate.ErrFileTooLarge
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, s.f.unavailable(err)
	}
	if int64(len(b)) > max {
		return nil, hoststate.ErrFileTooLarge
	}
	return b, nil
}

// WriteFile is the extension door's Store method: the object store swaps the new object in once all of
// it is stored.
func (s *ExtensionStore) WriteFile(name string, data []byte) error {
	if err := storeName(name); err != nil {
		return err
	}
	ctx, cancel := s.f.opContext()
	defer cancel()
	obj, _, err := s.handles(ctx)
	if err != nil {
		return err
	}
	if _, err := steadily(ctx, func() (*jetstream.ObjectInfo, error) { return obj.PutBytes(ctx, name, data) }); err != nil {
		return s.f.unavailable(err)
	}
	return nil
}

// Remove is the extension door's Store method.
func (s *ExtensionStore) Remove(name string) error {
	if err := storeName(name); err != nil {
		return err
	}
	ctx, cancel := s.f.opContext()
	defer cancel()
	obj, _, err := s.handles(ctx)
	if err != nil {
		return err
	}
	// Delete of an object already deleted succeeds: ask first, so a second removal is told.
	if _, err = steadily(ctx, func() (*jetstream.ObjectInfo, error) { return obj.GetInfo(ctx, name) }); err == nil {
		_, err = steadily(ctx, func() (struct{}, error) { return struct{}{}, obj.Delete(ctx, name) })
	}
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return fs.ErrNotExist
	}
	if err != nil {
		return s.f.unavailable(err)
	}
	return nil
}

// List is the extension door's Store method.
func (s *ExtensionStore) List(dir string) ([]string, error) {
	if err := fsroot.CheckDir(dir); err != nil {
		return nil, errors.New("fleet: " + err.Error())
	}
	ctx, cancel := s.f.opContext()
	defer cancel()
	obj, _, err := s.handles(ctx)
	if err != nil {
		return nil, err
	}
	infos, err := steadily(ctx, func() ([]*jetstream.ObjectInfo, error) { return obj.List(ctx) })
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, s.f.unavailable(err)
	}
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	var names []string
	for _, info := range infos {
		rest, ok := strings.CutPrefix(info.Name, prefix)
		if ok && !info.Deleted && fsroot.ValidName(rest) {
			names = append(names, rest)
		}
	}
	sort.Strings(names)
	return names, nil
}

// AppendLedger is the extension door's Store method: once the stream holds the line, every other
// relay is told to reload (WatchExtensions).
func (s *ExtensionStore) AppendLedger(line []byte) error {
	ctx, cancel := s.f.opContext()
	defer cancel()
	if _, _, err := s.handles(ctx); err != nil {
		return err
	}
	if _, err := steadily(ctx, func() (*jetstream.PubAck, error) { return s.f.js.Publish(ctx, s.f.subject(extLedgerStream), line) }); err != nil {
		return s.f.unavailable(err)
	}
	m := &nats.Msg{Subject: s.f.subject(extChangedSubject), Header: nats.Header{}}
	m.Header.Set(relayHeader, s.f.ID())
	if err := s.f.nc.PublishMsg(m); err != nil {
		s.f.log.Warn("fleet: the other relays were not told to reload their extensions; they do when NATS reconnects", "err", err)
	}
	return nil
}

// ReadLedger is the extension door's Store method: the stream's lines, at most MaxLedgerLines,
// MaxLedgerBytes together (the stream dropped older ones, which is logged, once per 10 s). The
// store keeps what it read with the stream's first and last sequence then (keptLedger): a read
// that finds the stream's state unchanged reads nothing more (one request for the state), one
// after lines were appended reads only those from the kept last sequence on, letting go of the
// kept lines the stream dropped meanwhile, and one that finds the stream made again (its
// creation time changed) or its first sequence past the kept last reads the stream whole. The
// bytes returned are shared by every read until the stream changes: the caller does not change
// them.
func (s *ExtensionStore) ReadLedger() ([]byte, error) {
	ctx, cancel := s.f.opContext()
	defer cancel()
	_, st, err := s.handles(ctx)
	if err != nil {
		return nil, err
	}
	info, err := streamInfo(ctx, st)
	if err != nil {
		return nil, s.f.unavailable(err)
	}
	state := info.State
	// Nothing deletes a line (the stream denies deletes and purges) but its bound: what came
	// before its first line was dropped there.
	if dropped := state.FirstSeq - 1; state.Msgs > 0 && dropped > 0 && s.f.sayOnce("ledger dropped") {
		s.f.log.Warn("fleet: the extension ledger holds its newest lines only (said once per 10 s): an extension none of whose lines is kept is not admitted until it is admitted again",
			"dropped", dropped, "kept", state.Msgs, "maxLines", MaxLedgerLines, "maxBytes", MaxLedgerBytes)
	}
	s.readMu.Lock()
	defer s.readMu.Unlock()
	k := s.kept
	if !k.created.Equal(info.Created) || k.last > state.LastSeq {
		k = keptLedger{} // another stream: read it whole
	}
	if state.Msgs == 0 {
		s.kept = keptLedger{created: info.Created, first: state.FirstSeq, last: state.LastSeq}
		return nil, nil
	}
	if k.created.Equal(info.Created) && k.first == state.FirstSeq && k.last == state.LastSeq {
		return k.lines[:len(k.lines):len(k.lines)], nil
	}
	// The kept lines the stream still holds (none when its first sequence is past them all: the
	// stream is read whole then), then what was appended after them.
	keep := sort.Search(len(k.seqs), func(i int) bool { return k.seqs[i] >= state.FirstSeq })
	from, at := max(k.last+1, state.FirstSeq), 0
	if keep > 0 {
		at = k.ends[keep-1]
	}
	// One allocation of what the stream holds (its bound), not a doubling slice's garbage.
	still := k.lines[at:]
	next := keptLedger{created: info.Created, first: state.FirstSeq, last: state.LastSeq,
		lines: append(make([]byte, 0, min(state.Bytes, MaxLedgerBytes)+min(state.Msgs, MaxLedgerLines)), still...),
		seqs:  append(make([]uint64, 0, min(state.Msgs, MaxLedgerLines)), k.seqs[keep:]...),
		ends:  make([]int, 0, min(state.Msgs, MaxLedgerLines))}
	for _, e := range k.ends[keep:] {
		next.ends = append(next.ends, e-at)
	}
	if from <= state.LastSeq {
		if err := s.readLines(ctx, st, from, state.LastSeq, &next); err != nil {
			return nil, s.f.unavailable(err)
		}
	}
	s.kept = next
	return next.lines[:len(next.lines):len(next.lines)], nil
}

// keptLedger is the ledger as a store last read it.
type keptLedger struct {
	created     time.Time // the stream's creation: a stream made again numbers its lines anew
	first, last uint64    // the stream's first and last sequence then
	lines       []byte    // its lines, each ended by a newline; never changed once kept
	seqs        []uint64  // each line's sequence in the stream
	ends        []int     // where each line ends in lines
}

// readLines appends to k the stream's lines from sequence from to last, read by an ephemeral
// consumer, removed when it is done.
func (s *ExtensionStore) readLines(ctx context.Context, st jetstream.Stream, from, last uint64, k *keptLedger) error {
	c, err := steadily(ctx, func() (jetstream.Consumer, error) {
		return st.CreateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
			OptStartSeq: from, InactiveThreshold: s.f.opTimeout(), MemoryStorage: true})
	})
	if err != nil {
		return err
	}
	defer st.DeleteConsumer(context.Background(), c.CachedInfo().Name)
	for seen := from - 1; seen < last; {
		batch, err := steadily(ctx, func() (jetstream.MessageBatch, error) {
			return c.Fetch(ledgerFetchBatch, jetstream.FetchMaxWait(s.f.opTimeout()))
		})
		if err != nil {
			return err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return err
			}
			seen = md.Sequence.Stream
			if seen > last {
				break // appended after the state was read: the next read takes it
			}
			k.lines = append(append(k.lines, m.Data()...), '\n')
			k.seqs, k.ends = append(k.seqs, seen), append(k.ends, len(k.lines))
			if seen >= last {
				break
			}
		}
		if err := batch.Error(); err != nil && seen < last {
			return err
		}
		if n == 0 {
			return errors.New("the ledger stream sent nothing")
		}
	}
	return nil
}

// Codes is the extension door's Store method.
func (s *ExtensionStore) Codes() ([]byte, uint64, error) {
	ctx, cancel, kv, err := s.f.op(extCodesBucket)
	if err != nil {
		return nil, 0, err
	}
	defer cancel()
	e, err := kv.Get(ctx, extCodesKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, s.f.unavailable(err)
	}
	return e.Value(), e.Revision(), nil
}

// SwapCodes is the extension door's Store method: a put, or a delete, on the revision read, so of two
// relays changing the document at once one succeeds.
func (s *ExtensionStore) SwapCodes(doc []byte, rev uint64) (bool, error) {
	ctx, cancel, kv, err := s.f.op(extCodesBucket)
	if err != nil {
		return false, err
	}
	defer cancel()
	switch {
	case len(doc) == 0 && rev == 0:
		_, err = kv.Get(ctx, extCodesKey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return true, nil
		}
		if err == nil {
			return false, nil
		}
	case len(doc) == 0:
		err = kv.Delete(ctx, extCodesKey, jetstream.LastRevision(rev))
	case rev == 0:
		_, err = kv.Create(ctx, extCodesKey, doc)
	default:
		_, err = kv.Update(ctx, extCodesKey, doc, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return false, nil
	}
	if err != nil {
		return false, s.f.unavailable(err)
	}
	return true, nil
}

// WatchExtensions calls reload whenever another relay appended to the ledger (an admission,
// denial or revocation), and each time NATS (re)connects (what changed meanwhile was not heard),
// one call at a time, never on NATS's goroutine; several changes heard during one call make one
// more. It stops when stop returns.
func (f *Fleet) WatchExtensions(reload func()) (stop func(), err error) {
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	sub, err := f.nc.Subscribe(f.subject(extChangedSubject), func(m *nats.Msg) {
		if m.Header.Get(relayHeader) != f.ID() {
			poke()
		}
	})
	if err == nil {
		// A change's message carries nothing the reload needs: past a small queue a flood is
		// dropped. What is dropped arrived while that queue was full, and each message of
		// another relay in it makes a reload after it, which reads the store as it is then.
		if err = sub.SetPendingLimits(extChangedPendingMsgs, extChangedPendingBytes); err != nil {
			sub.Unsubscribe()
		}
	}
	if err != nil {
		return nil, err
	}
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		back := f.reconnected()
		for {
			select {
			case <-kick:
			case <-back:
				back = f.reconnected() // before reloading, so a reconnection during it is heard
			case <-quit:
				return
			}
			reload()
		}
	}()
	return func() { sub.Unsubscribe(); close(quit); <-done }, nil
}
