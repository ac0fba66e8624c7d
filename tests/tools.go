//go:build tools

package tests

// The NATS server the fleet's tests run (internal/door/fleet/fleettest builds it from this module): only
// this module's go.mod requires it, so the relay's module never carries a NATS server.
import _ "github.com/nats-io/nats-server/v2"
