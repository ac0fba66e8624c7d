package fleet

import (
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
)

// pairingsBucket holds one key per paired machine: the hex of its name (names may hold dots,
// which NATS keys give a meaning), and its value the name, the SHA-256 of its bearer and when it
// was paired. A bearer is never stored.
const pairingsBucket = "pairings"

// Pairings are the fleet's paired machines (a hoststate.PairingStore): a machine paired through
// one relay says hello to any, and a pairing revoked through one is refused by all; the relay
// holding its socket closes it at its next recheck of the pairing (internal/core/hub.DefaultRecheck).
type Pairings struct{ f *Fleet }

// Pairings returns the fleet's pairings, for hoststate.Dir.UsePairings.
func (f *Fleet) Pairings() *Pairings { return &Pairings{f: f} }

var _ hoststate.PairingStore = (*Pairings)(nil)

// Pair implements hoststate.PairingStore.
func (p *Pairings) Pair(name string) (string, error) {
	if !hoststate.ValidName(name) {
		return "", hoststate.ErrBadName
	}
	ctx, cancel, kv, err := p.f.op(pairingsBucket)
	if err != nil {
		return "", err
	}
	defer cancel()
	bearer := hoststate.NewBearer()
	b, _ := json.Marshal(hoststate.Pairing{Name: name, BearerSHA256: hoststate.HashBearer(bearer), Created: time.Now().UTC()})
	if _, err := kv.Put(ctx, hex.EncodeToString([]byte(name)), b); err != nil {
		return "", p.f.unavailable(err)
	}
	return bearer, nil
}

// Revoke implements hoststate.PairingStore.
func (p *Pairings) Revoke(name string) error {
	ctx, cancel, kv, err := p.f.op(pairingsBucket)
	if err != nil {
		return err
	}
	defer cancel()
	key := hex.EncodeToString([]byte(name))
	if name == "" {
		return hoststate.ErrNotPaired
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return hoststate.ErrNotPaired
	}
	if err != nil {
		return p.f.unavailable(err)
	}
	err = kv.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		// Paired again or revoked meanwhile: delete whatever is there now, which is what a
		// revocation asks for.
		err = kv.Delete(ctx, key)
	}
	if err != nil {
		return p.f.unavailable(err)
	}
	return nil
}

// List implements hoststate.PairingStore.
func (p *Pairings) List() ([]hoststate.Pairing, error) {
	ctx, cancel, kv, err := p.f.op(pairingsBucket)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var out []hoststate.Pairing
	err = eachValue(ctx, kv, func(_ string, b []byte) {
		var pr hoststate.Pairing
		if json.Unmarshal(b, &pr) == nil && hoststate.ValidName(pr.Name) {
			out = append(out, pr)
		}
	})
	if err != nil {
		return nil, p.f.unavailable(err)
	}
	slices.SortFunc(out, func(a, b hoststate.Pairing) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// Lookup implements hoststate.PairingStore, comparing every stored hash in constant time.
func (p *Pairings) Lookup(bearer string) (string, bool, error) {
	ps, err := p.List()
	if err != nil {
		return "", false, err
	}
	name, ok := hoststate.MatchBearer(ps, bearer)
	return name, ok, nil
}

// Paired implements hoststate.PairingStore.
func (p *Pairings) Paired(name string) (bool, error) {
	if name == "" {
		return false, nil
	}
	ctx, cancel, kv, err := p.f.op(pairingsBucket)
	if err != nil {
		return false, err
	}
	defer cancel()
	_, err = kv.Get(ctx, hex.EncodeToString([]byte(name)))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, p.f.unavailable(err)
	}
	return true, nil
}
