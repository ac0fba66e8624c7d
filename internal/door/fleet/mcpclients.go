package fleet

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
)

// mcpClientsBucket holds the MCP clients' bearers under two kinds of keys:
//
//	b.<SHA-256 of a bearer>  its record (hoststate.MCPClient: name, hash, created, revoked)
//	n.<hex of a name>        the hash of the name's live bearer; absent when it holds none
//
// The name key decides: a bearer is live only while its name's key holds its hash, and a mint
// or a revocation moves that key by compare-and-set on the revision it read, so of two relays
// minting one name at once exactly one bearer stays live. The record's Revoked time is written
// after, for the list and the refusal's wording. A bearer is never stored.
const mcpClientsBucket = "mcpclients"

// The key prefixes of mcpClientsBucket.
const (
	mcpRecordKey = "b."
	mcpNameKey   = "n."
)

// maxMintTries bounds how often a mint or a revocation reads the name's key again after another
// relay moved it between the read and the write; past it the change fails fleet-unavailable.
const maxMintTries = 8

// MCPClients are the fleet's MCP clients' bearers (a hoststate.MCPClientStore): a bearer minted
// through one relay is admitted by every relay's /mcp, and one revoked (or replaced) through any
// is refused by all at its next request. MaxMCPClients is counted on the names the minting relay
// reads: two mints of new names through two relays at the same instant may pass it by one.
type MCPClients struct{ f *Fleet }

// MCPClients returns the fleet's MCP clients, for core.Shared.MCPClients (the MCP door's store).
func (f *Fleet) MCPClients() *MCPClients { return &MCPClients{f: f} }

var _ hoststate.MCPClientStore = (*MCPClients)(nil)

func mcpNameKeyOf(name string) string { return mcpNameKey + hex.EncodeToString([]byte(name)) }

// Mint implements hoststate.MCPClientStore.
func (s *MCPClients) Mint(name string) (string, error) {
	if !hoststate.ValidName(name) {
		return "", hoststate.ErrBadName
	}
	ctx, cancel, kv, err := s.f.op(mcpClientsBucket)
	if err != nil {
		return "", err
	}
	defer cancel()
	for range maxMintTries {
		prev, rev, err := s.current(ctx, kv, name)
		if err != nil {
			return "", err
		}
		if prev == "" {
			names, err := s.liveNames(ctx, kv)
			if err != nil {
				return "", err
			}
			if names >= hoststate.MaxMCPClients {
				return "", hoststate.ErrTooManyClients
			}
		}
		bearer := hoststate.NewMCPBearer()
		hash := hoststate.HashBearer(bearer)
		rec, _ := json.Marshal(hoststate.MCPClient{Name: name, BearerSHA256: hash, Created: time.Now().UTC().Truncate(time.Second)})
		if _, err := kv.Put(ctx, mcpRecordKey+hash, rec); err != nil {
			return "", s.f.unavailable(err)
		}
		if rev == 0 {
			_, err = kv.Create(ctx, mcpNameKeyOf(name), []byte(hash))
		} else {
			_, err = kv.Update(ctx, mcpNameKeyOf(name), []byte(hash), rev)
		}
		if moved(err) {
			// Another relay minted or revoked the name meanwhile: this bearer was never handed
			// out; forget it and read the name again.
			kv.Purge(ctx, mcpRecordKey+hash, jetstream.PurgeTTL(markerTTL))
			continue
		}
		if err != nil {
			return "", s.f.unavailable(err)
		}
		if prev != "" {
			s.markRevoked(ctx, kv, prev)
		}
		s.prune(ctx, kv)
		return bearer, nil
	}
	return "", s.f.unavailable(errors.New("the name's key kept moving"))
}

// Revoke implements hoststate.MCPClientStore.
func (s *MCPClients) Revoke(name string) error {
	if !hoststate.ValidName(name) {
		return hoststate.ErrNoClient
	}
	ctx, cancel, kv, err := s.f.op(mcpClientsBucket)
	if err != nil {
		return err
	}
	defer cancel()
	for range maxMintTries {
		prev, rev, err := s.current(ctx, kv, name)
		if err != nil {
			return err
		}
		if prev == "" {
			return hoststate.ErrNoClient
		}
		err = kv.Purge(ctx, mcpNameKeyOf(name), jetstream.LastRevision(rev), jetstream.PurgeTTL(markerTTL))
		if moved(err) {
			continue
		}
		if err != nil {
			return s.f.unavailable(err)
		}
		s.markRevoked(ctx, kv, prev)
		return nil
	}
	return s.f.unavailable(errors.New("the name's key kept moving"))
}

// List implements hoststate.MCPClientStore.
func (s *MCPClients) List() ([]hoststate.MCPClient, error) {
	ctx, cancel, kv, err := s.f.op(mcpClientsBucket)
	if err != nil {
		return nil, err
	}
	defer cancel()
	live := map[string]bool{} // hashes the name keys hold
	recs := map[string]hoststate.MCPClient{}
	err = eachValue(ctx, kv, func(key string, b []byte) {
		switch {
		case strings.HasPrefix(key, mcpNameKey):
			live[string(b)] = true
		case strings.HasPrefix(key, mcpRecordKey):
			var c hoststate.MCPClient
			if json.Unmarshal(b, &c) == nil && hoststate.ValidName(c.Name) {
				recs[strings.TrimPrefix(key, mcpRecordKey)] = c
			}
		}
	})
	if err != nil {
		return nil, s.f.unavailable(err)
	}
	var out []hoststate.MCPClient
	for hash, c := range recs {
		if live[hash] {
			c.Revoked = time.Time{}
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b hoststate.MCPClient) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// Lookup implements hoststate.MCPClientStore: the record under the bearer's hash, live while its
// name's key holds that hash. A string that is not an MCP bearer is not looked up.
func (s *MCPClients) Lookup(bearer string) (hoststate.MCPClient, bool, error) {
	if !strings.HasPrefix(bearer, hoststate.MCPBearerPrefix) {
		return hoststate.MCPClient{}, false, nil
	}
	ctx, cancel, kv, err := s.f.op(mcpClientsBucket)
	if err != nil {
		return hoststate.MCPClient{}, false, err
	}
	defer cancel()
	hash := hoststate.HashBearer(bearer) // a hex digest: a key that holds no wildcard nor dot
	e, err := kv.Get(ctx, mcpRecordKey+hash)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return hoststate.MCPClient{}, false, nil
	}
	if err != nil {
		return hoststate.MCPClient{}, false, s.f.unavailable(err)
	}
	var c hoststate.MCPClient
	if json.Unmarshal(e.Value(), &c) != nil || c.BearerSHA256 != hash || !hoststate.ValidName(c.Name) {
		return hoststate.MCPClient{}, false, nil
	}
	cur, _, err := s.current(ctx, kv, c.Name)
	if err != nil {
		return hoststate.MCPClient{}, false, err
	}
	switch {
	case cur == hash:
		c.Revoked = time.Time{}
	case c.Revoked.IsZero():
		// Replaced or revoked, and the relay that did it stopped before it wrote the time.
		c.Revoked = e.Created().UTC().Truncate(time.Second)
	}
	return c, true, nil
}

// current returns the hash the name's key holds ("" when it holds none) and the key's revision
// (0 when there is no key).
func (s *MCPClients) current(ctx context.Context, kv jetstream.KeyValue, name string) (string, uint64, error) {
	e, err := kv.Get(ctx, mcpNameKeyOf(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, s.f.unavailable(err)
	}
	return string(e.Value()), e.Revision(), nil
}

// liveNames counts the names holding a live bearer.
func (s *MCPClients) liveNames(ctx context.Context, kv jetstream.KeyValue) (int, error) {
	keys, err := kv.ListKeysFiltered(ctx, mcpNameKey+">")
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return 0, nil
		}
		return 0, s.f.unavailable(err)
	}
	n := 0
	for range keys.Keys() {
		n++
	}
	return n, nil
}

// markRevoked writes the time of the revocation into the record of hash. The name's key moved
// already, so the bearer is refused whether or not this lands.
func (s *MCPClients) markRevoked(ctx context.Context, kv jetstream.KeyValue, hash string) {
	e, err := kv.Get(ctx, mcpRecordKey+hash)
	if err != nil {
		return
	}
	var c hoststate.MCPClient
	if json.Unmarshal(e.Value(), &c) != nil || !c.Revoked.IsZero() {
		return
	}
	c.Revoked = time.Now().UTC().Truncate(time.Second)
	b, _ := json.Marshal(c)
	kv.Update(ctx, mcpRecordKey+hash, b, e.Revision())
}

// prune forgets the oldest revocations (by the revision of their record's last change) past
// MaxRevokedMCPClients. It reads the whole bucket only when it holds more entries than that.
func (s *MCPClients) prune(ctx context.Context, kv jetstream.KeyValue) {
	st, err := kv.Status(ctx)
	if err != nil || st.Values() <= hoststate.MaxRevokedMCPClients {
		return
	}
	live := map[string]bool{}
	recs := map[string]uint64{} // hash: revision
	err = eachEntry(ctx, kv, func(e jetstream.KeyValueEntry) {
		switch key := e.Key(); {
		case strings.HasPrefix(key, mcpNameKey):
			live[string(e.Value())] = true
		case strings.HasPrefix(key, mcpRecordKey):
			recs[strings.TrimPrefix(key, mcpRecordKey)] = e.Revision()
		}
	})
	if err != nil {
		return
	}
	type rec struct {
		hash string
		rev  uint64
	}
	var revoked []rec
	for hash, rev := range recs {
		if !live[hash] {
			revoked = append(revoked, rec{hash, rev})
		}
	}
	if len(revoked) <= hoststate.MaxRevokedMCPClients {
		return
	}
	slices.SortFunc(revoked, func(a, b rec) int { return cmp.Compare(a.rev, b.rev) })
	for _, r := range revoked[:len(revoked)-hoststate.MaxRevokedMCPClients] {
		kv.Purge(ctx, mcpRecordKey+r.hash, jetstream.PurgeTTL(markerTTL))
	}
}

// moved reports whether err says a key changed since it was read (or was made meanwhile).
func moved(err error) bool {
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
}
