package hoststate

// The MCP clients' bearers are the MCP door's (internal/door/mcp keeps them in the state
// directory); their store's contract is here, where the door and a fleet that shares the store
// (core.Shared.MCPClients) both see it.

import (
	"errors"
	"fmt"
	"time"
)

// MCPBearerPrefix starts every MCP client's bearer, so it is told apart from a pairing's.
const MCPBearerPrefix = "vbm_"

// MaxMCPClients bounds the clients with a live bearer; minting one more is refused with
// ErrTooManyClients until one is revoked.
const MaxMCPClients = 64

// MaxRevokedMCPClients bounds the revoked records kept (so a revoked bearer is told "revoked"
// rather than "unknown"); past it the oldest revocations are forgotten.
const MaxRevokedMCPClients = 256

// ErrTooManyClients is returned by a store's Mint when MaxMCPClients clients hold a live bearer.
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
// default (internal/door/mcp.FileClients), or a fleet's shared bucket (internal/door/fleet), so a bearer minted through
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

// NewMCPBearer mints an MCP client's bearer: MCPBearerPrefix and 32 random bytes in hex.
// HashBearer is what a store keeps of it.
func NewMCPBearer() string { return MCPBearerPrefix + randomHex() }
