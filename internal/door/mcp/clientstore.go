package mcp

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
	"github.com/voicebox-go/voicebox/internal/core/hoststate"
)

// ClientsFile holds the MCP clients' records in the state directory: one per bearer the host
// minted (its name, the SHA-256 of the bearer, when it was minted and when revoked), 0600.
const ClientsFile = ".mcp-clients.json"

// MaxClientsFileBytes bounds what is read of ClientsFile.
const MaxClientsFileBytes = 1 << 20

// FileClients are the MCP clients in the state directory's .mcp-clients.json, looked at afresh
// at every call, so `relay mcp-token` run by another process takes effect at the next request.
// Changes from one process are serialized; the file is never torn.
//
// A lookup (every request to /mcp) reads and decodes the file only when it changed: every
// write replaces it by a rename (internal/core/durable), so the same file (device and inode),
// size and modification time mean the same records, and a stat is all the request costs.
type FileClients struct {
	path string
	mu   sync.Mutex // serializes changes to the file

	seenMu sync.Mutex
	seen   os.FileInfo // the file the records below were decoded from
	cached []hoststate.MCPClient
}

// NewFileClients returns the MCP clients kept in the file at path.
func NewFileClients(path string) *FileClients { return &FileClients{path: path} }

var _ hoststate.MCPClientStore = (*FileClients)(nil)

// Mint implements hoststate.MCPClientStore.
func (d *FileClients) Mint(name string) (bearer string, err error) {
	if !hoststate.ValidName(name) {
		return "", hoststate.ErrBadName
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
	if live >= hoststate.MaxMCPClients {
		return "", hoststate.ErrTooManyClients
	}
	bearer = hoststate.NewMCPBearer()
	cs = append(cs, hoststate.MCPClient{Name: name, BearerSHA256: hoststate.HashBearer(bearer), Created: now})
	return bearer, d.writeClients(cs)
}

// Revoke implements hoststate.MCPClientStore.
func (d *FileClients) Revoke(name string) error {
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
		return hoststate.ErrNoClient
	}
	return d.writeClients(cs)
}

// List implements hoststate.MCPClientStore.
func (d *FileClients) List() ([]hoststate.MCPClient, error) {
	cs, err := d.readClients()
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(cs, func(c hoststate.MCPClient) bool { return !c.Live() }), nil
}

// Lookup implements hoststate.MCPClientStore. Every stored hash is compared in constant time.
func (d *FileClients) Lookup(bearer string) (c hoststate.MCPClient, ok bool, err error) {
	if !strings.HasPrefix(bearer, hoststate.MCPBearerPrefix) {
		return hoststate.MCPClient{}, false, nil
	}
	cs, err := d.currentClients()
	if err != nil {
		return hoststate.MCPClient{}, false, err
	}
	h := []byte(hoststate.HashBearer(bearer))
	for _, rec := range cs {
		if subtle.ConstantTimeCompare(h, []byte(rec.BearerSHA256)) == 1 {
			c, ok = rec, true
		}
	}
	return c, ok, nil
}

// currentClients returns the records for a lookup: those decoded last while the file is the
// same, else the file's read afresh. The slice returned is shared: read it, never change it.
func (d *FileClients) currentClients() ([]hoststate.MCPClient, error) {
	fi, err := os.Stat(d.path)
	if err != nil {
		return d.readClients() // missing (no clients) or unreadable: readClients says which
	}
	d.seenMu.Lock()
	if d.seen != nil && os.SameFile(d.seen, fi) && d.seen.Size() == fi.Size() && d.seen.ModTime().Equal(fi.ModTime()) {
		cs := d.cached
		d.seenMu.Unlock()
		return cs, nil
	}
	d.seenMu.Unlock()
	cs, err := d.readClients()
	if err != nil {
		return nil, err
	}
	// fi was taken before the read: a write in between leaves a record older than the file,
	// which the next lookup's stat tells apart and reads again.
	d.seenMu.Lock()
	d.seen, d.cached = fi, cs
	d.seenMu.Unlock()
	return cs, nil
}

func (d *FileClients) readClients() ([]hoststate.MCPClient, error) {
	f, err := os.Open(d.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcp: read the MCP clients: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxClientsFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("mcp: read the MCP clients: %w", err)
	}
	if len(b) > MaxClientsFileBytes {
		return nil, fmt.Errorf("mcp: %s is over %d bytes", ClientsFile, MaxClientsFileBytes)
	}
	var file struct {
		Clients []hoststate.MCPClient `json:"clients"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("mcp: %s is not valid: %w", ClientsFile, err)
	}
	return file.Clients, nil
}

// writeClients writes cs, forgetting the oldest revocations past hoststate.MaxRevokedMCPClients.
func (d *FileClients) writeClients(cs []hoststate.MCPClient) error {
	revoked := 0
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].Live() {
			continue
		}
		if revoked++; revoked > hoststate.MaxRevokedMCPClients {
			cs = slices.Delete(cs, i, i+1)
		}
	}
	if cs == nil {
		cs = []hoststate.MCPClient{}
	}
	b, err := json.MarshalIndent(struct {
		Clients []hoststate.MCPClient `json:"clients"`
	}{cs}, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(d.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("mcp: write the MCP clients: %w", err)
	}
	return nil
}
