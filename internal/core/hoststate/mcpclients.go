package hoststate

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/durable"
)

// MCPClientsFile holds the MCP clients' records: one per bearer the host minted, 0600.
const MCPClientsFile = ".mcp-clients.json"

// MCPBearerPrefix starts every MCP client's bearer, so it is told apart from a pairing's.
const MCPBearerPrefix = "vbm_"

// MaxMCPClients bounds the clients with a live bearer; minting one more is refused with
// ErrTooManyClients until one is revoked.
const MaxMCPClients = 64

// MaxRevokedMCPClients bounds the revoked records kept (so a revoked bearer is told "revoked"
// rather than "unknown"); past it the oldest revocations are forgotten.
const MaxRevokedMCPClients = 256

// ErrTooManyClients is returned by MintMCPClient when MaxMCPClients clients hold a live bearer.
var ErrTooManyClients = fmt.Errorf("hoststate: %d MCP clients hold a bearer already; revoke one first", MaxMCPClients)

// ErrNoClient is returned when revoking a name that holds no live bearer.
var ErrNoClient = errors.New("hoststate: no MCP client holds a live bearer under that name")

// MCPClient is one bearer minted for an MCP client, as the clients file keeps it: never the
// bearer itself, only its SHA-256.
type MCPClient struct {
	Name string `json:"name"`
	// BearerSHA256 is the hex SHA-256 of the bearer.
	BearerSHA256 string    `json:"bearerSha256"`
	Created      time.Time `json:"created"`
	// Revoked is when the host revoked the bearer (or minted a newer one for the name); zero
	// while it is live.
	Revoked time.Time `json:"revoked,omitzero"`
}

// Live reports whether the bearer still admits its client.
func (c MCPClient) Live() bool { return c.Revoked.IsZero() }

// MCPClientStore keeps the MCP clients' bearers: the state directory's .mcp-clients.json by
// default (FileMCPClients), or a fleet's shared bucket (internal/door/fleet), so a bearer minted through
// one relay is admitted by every relay and one revoked through any is refused by all at its next
// request. Both are held to one conformance suite (hoststatetest.RunMCPClients).
// Implementations are safe for concurrent use and keep only the SHA-256 of a bearer.
type MCPClientStore interface {
	// Mint mints a bearer for name (ErrBadName when it is not ValidName), revoking the live
	// bearer the name held before; ErrTooManyClients past MaxMCPClients live ones. The bearer is
	// returned once and kept nowhere.
	Mint(name string) (bearer string, err error)
	// Revoke revokes the live bearer of name; ErrNoClient when it holds none.
	Revoke(name string) error
	// List returns the clients with a live bearer, oldest first.
	List() ([]MCPClient, error)
	// Lookup finds the record of bearer: ok is false for a bearer never minted (or whose
	// revocation was forgotten past MaxRevokedMCPClients); a revoked one comes back with ok and
	// its Revoked time set.
	Lookup(bearer string) (c MCPClient, ok bool, err error)
}

// UseMCPClients makes s the store of the MCP clients' bearers from now on (a fleet's); call it
// before the relay serves.
func (d *Dir) UseMCPClients(s MCPClientStore) { d.mcpClients = s }

// MintMCPClient mints a bearer for the MCP client name and records its hash. A live bearer the
// name held before is revoked. The bearer is returned once and kept nowhere.
func (d *Dir) MintMCPClient(name string) (bearer string, err error) { return d.mcpClients.Mint(name) }

// RevokeMCPClient revokes the live bearer of name; ErrNoClient when it holds none.
func (d *Dir) RevokeMCPClient(name string) error { return d.mcpClients.Revoke(name) }

// MCPClients returns the clients with a live bearer, oldest first.
func (d *Dir) MCPClients() ([]MCPClient, error) { return d.mcpClients.List() }

// LookupMCPClient finds the record of bearer, reading the store afresh, so a revocation by
// `relay mcp-token --revoke` (or through another relay of a fleet) takes effect at the next
// request. ok is false for a bearer the host never minted (or whose revocation was forgotten);
// a revoked one comes back with ok and its Revoked time set.
func (d *Dir) LookupMCPClient(bearer string) (c MCPClient, ok bool, err error) {
	return d.mcpClients.Lookup(bearer)
}

// NewMCPBearer mints an MCP client's bearer: MCPBearerPrefix and 32 random bytes in hex.
// HashBearer is what a store keeps of it.
func NewMCPBearer() string { return MCPBearerPrefix + randomHex() }

// FileMCPClients are the MCP clients in the state directory's .mcp-clients.json, read afresh at
// every call, so `relay mcp-token` run by another process takes effect at the next request.
// Changes from one process are serialized; the file is never torn.
type FileMCPClients struct {
	path string
	mu   sync.Mutex // serializes changes to the file
}

// NewFileMCPClients returns the MCP clients kept in the file at path.
func NewFileMCPClients(path string) *FileMCPClients { return &FileMCPClients{path: path} }

var _ MCPClientStore = (*FileMCPClients)(nil)

// Mint implements MCPClientStore.
func (d *FileMCPClients) Mint(name string) (bearer string, err error) {
	if !ValidName(name) {
		return "", ErrBadName
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	cs, err := d.readClients()
	if err != nil {
		return "", err
	}
	now := time.Now().UTC().Truncate(time.Second)
	live := 0
	for i := range cs {
		if cs[i].Live() && cs[i].Name == name {
			cs[i].Revoked = now
		}
		if cs[i].Live() {
			live++
		}
	}
	if live >= MaxMCPClients {
		return "", ErrTooManyClients
	}
	bearer = NewMCPBearer()
	cs = append(cs, MCPClient{Name: name, BearerSHA256: hashHex(bearer), Created: now})
	return bearer, d.writeClients(cs)
}

// Revoke implements MCPClientStore.
func (d *FileMCPClients) Revoke(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	cs, err := d.readClients()
	if err != nil {
		return err
	}
	found := false
	for i := range cs {
		if cs[i].Live() && cs[i].Name == name {
			cs[i].Revoked = time.Now().UTC().Truncate(time.Second)
			found = true
		}
	}
	if !found {
		return ErrNoClient
	}
	return d.writeClients(cs)
}

// List implements MCPClientStore.
func (d *FileMCPClients) List() ([]MCPClient, error) {
	cs, err := d.readClients()
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(cs, func(c MCPClient) bool { return !c.Live() }), nil
}

// Lookup implements MCPClientStore. Every stored hash is compared in constant time.
func (d *FileMCPClients) Lookup(bearer string) (c MCPClient, ok bool, err error) {
	if !strings.HasPrefix(bearer, MCPBearerPrefix) {
		return MCPClient{}, false, nil
	}
	cs, err := d.readClients()
	if err != nil {
		return MCPClient{}, false, err
	}
	h := []byte(hashHex(bearer))
	for _, rec := range cs {
		if subtle.ConstantTimeCompare(h, []byte(rec.BearerSHA256)) == 1 {
			c, ok = rec, true
		}
	}
	return c, ok, nil
}

func (d *FileMCPClients) readClients() ([]MCPClient, error) {
	f, err := os.Open(d.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hoststate: read the MCP clients: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPairingsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("hoststate: read the MCP clients: %w", err)
	}
	if len(b) > maxPairingsBytes {
		return nil, fmt.Errorf("hoststate: %s is over %d bytes", MCPClientsFile, maxPairingsBytes)
	}
	var file struct {
		Clients []MCPClient `json:"clients"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("hoststate: %s is not valid: %w", MCPClientsFile, err)
	}
	return file.Clients, nil
}

// writeClients writes cs, forgetting the oldest revocations past MaxRevokedMCPClients.
func (d *FileMCPClients) writeClients(cs []MCPClient) error {
	revoked := 0
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].Live() {
			continue
		}
		if revoked++; revoked > MaxRevokedMCPClients {
			cs = slices.Delete(cs, i, i+1)
		}
	}
	if cs == nil {
		cs = []MCPClient{}
	}
	b, err := json.MarshalIndent(struct {
		Clients []MCPClient `json:"clients"`
	}{cs}, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(d.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("hoststate: write the MCP clients: %w", err)
	}
	return nil
}
