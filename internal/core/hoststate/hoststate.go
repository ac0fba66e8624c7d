// Package hoststate keeps the host's secrets on disk: the host token and the pairings of machine
// environments, in one directory only the host's user can read.
//
// The directory is created 0700. It holds:
//
//	.host-token      the host token: 32 random bytes as hex, 0600, made on first start
//	.pairings.json   one record per paired environment: its name, the SHA-256 of its bearer and
//	                 when it was paired, 0600; the bearer itself is never stored
//
// Every file is written to a temporary file beside it and renamed into place, so a reader sees the
// old content or the new, never half of one. Secrets are compared in constant time. Nothing in
// this package logs.
//
// Pairings are read from disk at every Lookup, so a `relay pair` run while the relay serves takes
// effect at the next hello. Changes from one process are serialized; two processes changing the
// pairings at the same instant may lose one of the two changes (the file is never torn). A fleet
// keeps the pairings in NATS instead (Dir.UsePairings); the host token stays in the directory.
// The MCP door keeps its clients' bearers in the directory too (internal/door/mcp); the contract
// of their store, which a fleet may supply, is MCPClientStore.
package hoststate

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/durable"
	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The names of the files in the state directory.
const (
	HostTokenFile = ".host-token"
	PairingsFile  = ".pairings.json"
)

// BearerPrefix starts every bearer, so one is recognizable in a file or a paste.
const BearerPrefix = "vbx_"

// secretBytes is the entropy of the host token and of each bearer.
const secretBytes = 32

// MaxNameBytes bounds a pairing's name.
const MaxNameBytes = 64

// maxPairingsBytes bounds what is read of .pairings.json.
const maxPairingsBytes = 1 << 20

// ErrBadName is returned for a pairing name that is empty, too long, or has characters other than
// letters, digits, '.', '_' and '-'.
var ErrBadName = errors.New("hoststate: a pairing name is 1 to 64 letters, digits, '.', '_' or '-'")

// ErrNotPaired is returned when revoking a name that has no pairing.
var ErrNotPaired = errors.New("hoststate: no environment is paired under that name")

// Pairing is one paired environment as the pairings file keeps it.
type Pairing struct {
	Name string `json:"name"`
	// BearerSHA256 is the hex SHA-256 of the bearer.
	BearerSHA256 string    `json:"bearerSha256"`
	Created      time.Time `json:"created"`
}

// PairingStore keeps the pairings: the pairings file of the state directory by default
// (FilePairings), or a fleet's shared bucket (internal/door/fleet), so a machine paired through one relay
// is admitted by every relay and a revocation through one is seen by all. Both are held to one
// conformance suite (hoststatetest.RunPairings). Implementations are safe for concurrent use
// and keep only the SHA-256 of a bearer.
type PairingStore interface {
	// Pair mints a bearer for name (ErrBadName when the name is not ValidName) and records its
	// hash, replacing any earlier pairing of that name.
	Pair(name string) (bearer string, err error)
	// Revoke removes name's pairing; ErrNotPaired when there is none.
	Revoke(name string) error
	// List returns the pairings, oldest first.
	List() ([]Pairing, error)
	// Lookup returns the name paired with bearer, comparing hashes in constant time.
	Lookup(bearer string) (name string, ok bool, err error)
	// Paired reports whether name has a pairing now.
	Paired(name string) (bool, error)
}

// Dir is an open state directory. It is safe for concurrent use.
type Dir struct {
	path     string
	token    []byte
	pairings PairingStore
}

// DefaultPath returns the per-user default state directory: the user's configuration directory
// joined with "voicebox".
func DefaultPath() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("hoststate: no per-user configuration directory: %w", err)
	}
	return filepath.Join(base, "voicebox"), nil
}

// Open opens the state directory at path, creating it 0700 (and its host token) when missing.
// An existing directory that others can read or write is tightened to 0700.
func Open(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("hoststate: create the state directory: %w", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("hoststate: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("hoststate: %s is not a directory", path)
	}
	if info.Mode().Perm() != 0o700 {
		if err := os.Chmod(path, 0o700); err != nil {
			return nil, fmt.Errorf("hoststate: restrict the state directory: %w", err)
		}
	}
	d := &Dir{path: path}
	d.pairings = &FilePairings{path: filepath.Join(path, PairingsFile)}
	if d.token, err = d.loadOrMakeToken(); err != nil {
		return nil, err
	}
	return d, nil
}

// Path returns the directory's path.
func (d *Dir) Path() string { return d.path }

func (d *Dir) loadOrMakeToken() ([]byte, error) {
	p := filepath.Join(d.path, HostTokenFile)
	b, err := os.ReadFile(p)
	if err == nil {
		tok := []byte(strings.TrimSpace(string(b)))
		if len(tok) == 0 {
			return nil, fmt.Errorf("hoststate: %s is empty; remove it to make a new host token", HostTokenFile)
		}
		return tok, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("hoststate: read the host token: %w", err)
	}
	tok := []byte(randomHex())
	if err := durable.WriteFile(p, append(tok, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("hoststate: write the host token: %w", err)
	}
	return tok, nil
}

// CheckHostToken reports, in constant time, whether s is the host token.
func (d *Dir) CheckHostToken(s string) bool {
	return s != "" && subtle.ConstantTimeCompare([]byte(s), d.token) == 1
}

// UsePairings makes p the store of the pairings from now on (a fleet's); call it before the
// relay serves.
func (d *Dir) UsePairings(p PairingStore) { d.pairings = p }

// Pair mints a bearer for name and records its hash, replacing any earlier pairing of that name
// (whose bearer then stops working). The bearer is returned once and kept nowhere.
func (d *Dir) Pair(name string) (bearer string, err error) { return d.pairings.Pair(name) }

// Revoke removes name's pairing; ErrNotPaired when there is none.
func (d *Dir) Revoke(name string) error { return d.pairings.Revoke(name) }

// List returns the pairings, oldest first.
func (d *Dir) List() ([]Pairing, error) { return d.pairings.List() }

// Lookup returns the name paired with bearer, reading the pairings afresh.
func (d *Dir) Lookup(bearer string) (name string, ok bool, err error) {
	return d.pairings.Lookup(bearer)
}

// Paired reports whether name has a pairing now.
func (d *Dir) Paired(name string) (bool, error) { return d.pairings.Paired(name) }

// FilePairings are the pairings in the state directory's .pairings.json, read afresh at every
// call, so a `relay pair` run by another process takes effect at the next hello. Changes from one
// process are serialized; two processes changing the file at the same instant may lose one of
// the two changes (the file is never torn).
type FilePairings struct {
	path string
	mu   sync.Mutex // serializes changes to the file
}

// NewFilePairings returns the pairings kept in the file at path.
func NewFilePairings(path string) *FilePairings { return &FilePairings{path: path} }

// NewBearer mints a bearer: BearerPrefix and 32 random bytes in hex. HashBearer is what a store
// keeps of it.
func NewBearer() string { return BearerPrefix + randomHex() }

// HashBearer returns the hex SHA-256 of bearer, the form every PairingStore keeps.
func HashBearer(bearer string) string { return hashHex(bearer) }

// Pair implements PairingStore.
func (d *FilePairings) Pair(name string) (bearer string, err error) {
	if !ValidName(name) {
		return "", ErrBadName
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ps, err := d.read()
	if err != nil {
		return "", err
	}
	bearer = NewBearer()
	ps = slices.DeleteFunc(ps, func(p Pairing) bool { return p.Name == name })
	ps = append(ps, Pairing{Name: name, BearerSHA256: hashHex(bearer), Created: time.Now().UTC().Truncate(time.Second)})
	if err := d.write(ps); err != nil {
		return "", err
	}
	return bearer, nil
}

// Revoke implements PairingStore.
func (d *FilePairings) Revoke(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ps, err := d.read()
	if err != nil {
		return err
	}
	n := len(ps)
	ps = slices.DeleteFunc(ps, func(p Pairing) bool { return p.Name == name })
	if len(ps) == n {
		return ErrNotPaired
	}
	return d.write(ps)
}

// List implements PairingStore.
func (d *FilePairings) List() ([]Pairing, error) { return d.read() }

// Lookup implements PairingStore.
func (d *FilePairings) Lookup(bearer string) (name string, ok bool, err error) {
	ps, err := d.read()
	if err != nil {
		return "", false, err
	}
	name, ok = MatchBearer(ps, bearer)
	return name, ok, nil
}

// MatchBearer returns the name of the pairing in ps whose hash is bearer's, comparing every
// stored hash in constant time; a string that is not a bearer matches nothing.
func MatchBearer(ps []Pairing, bearer string) (name string, ok bool) {
	if !strings.HasPrefix(bearer, BearerPrefix) {
		return "", false
	}
	h := []byte(hashHex(bearer))
	for _, p := range ps {
		if subtle.ConstantTimeCompare(h, []byte(p.BearerSHA256)) == 1 {
			name, ok = p.Name, true
		}
	}
	return name, ok
}

// Paired implements PairingStore.
func (d *FilePairings) Paired(name string) (bool, error) {
	ps, err := d.read()
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(ps, func(p Pairing) bool { return p.Name == name }), nil
}

func (d *FilePairings) read() ([]Pairing, error) {
	f, err := os.Open(d.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hoststate: read the pairings: %w", err)
	}
	defer f.Close()
	var file struct {
		Pairings []Pairing `json:"pairings"`
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPairingsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("hoststate: read the pairings: %w", err)
	}
	if len(b) > maxPairingsBytes {
		return nil, fmt.Errorf("hoststate: %s is over %d bytes", PairingsFile, maxPairingsBytes)
	}
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("hoststate: %s is not valid: %w", PairingsFile, err)
	}
	return file.Pairings, nil
}

func (d *FilePairings) write(ps []Pairing) error {
	if ps == nil {
		ps = []Pairing{}
	}
	b, err := json.MarshalIndent(struct {
		Pairings []Pairing `json:"pairings"`
	}{ps}, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(d.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("hoststate: write the pairings: %w", err)
	}
	return nil
}

// CheckName returns nil when name can name a pairing or an MCP client (ValidName), else the
// refusal to answer with: invalid-name naming the character when it holds one that hides or
// reorders text (internal/shared/names), invalid-argument otherwise. what says whose name it is ("an
// environment", "a client").
func CheckName(what, name string) *refusal.Refusal {
	if r := names.Check("the name", name); r != nil {
		return r
	}
	if !ValidName(name) {
		return refusal.New(refusal.InvalidArgument, "name %s with 1 to %d letters, digits, '.', '_' or '-'", what, MaxNameBytes)
	}
	return nil
}

// ValidName reports whether name can name a pairing.
func ValidName(name string) bool {
	if name == "" || len(name) > MaxNameBytes {
		return false
	}
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

func randomHex() string {
	b := make([]byte, secretBytes)
	rand.Read(b) // never fails (crypto/rand's documented contract since Go 1.24)
	return hex.EncodeToString(b)
}

func hashHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
