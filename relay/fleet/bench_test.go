package fleet_test

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/relay/fleet/fleettest"
	"github.com/voicebox-go/voicebox/relay/hoststate"
	"github.com/voicebox-go/voicebox/relay/session"
)

// BenchmarkSessionLookup: what the gate's check of a session cookie costs, the session kept in
// this process's memory (a relay alone) and in the fleet's bucket on an embedded NATS (one
// key-value read per gated request).
func BenchmarkSessionLookup(b *testing.B) {
	h := sha256.Sum256([]byte("token"))
	now := time.Now()
	rec := session.Record{Hash: h, Info: session.Info{ID: "0123456789abcdef", Created: now, Expires: now.Add(time.Hour)}}
	for _, bc := range []struct {
		name string
		open func(b *testing.B) session.Records
	}{
		{"memory", func(*testing.B) session.Records { return session.NewMemoryRecords() }},
		{"nats", func(b *testing.B) session.Records { return join(b, fleettest.Start(b), "bench").Records() }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := bc.open(b)
			if err := r.AddSession(rec); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, ok, err := r.Session(rec.Info.ID, now); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// BenchmarkMCPBearerLookup: what /mcp's check of a bearer costs at every request, the bearers
// in the state directory's file (a relay alone) and in the fleet's bucket on an embedded NATS
// (two key-value reads: the bearer's record and its name's key).
func BenchmarkMCPBearerLookup(b *testing.B) {
	for _, bc := range []struct {
		name string
		open func(b *testing.B) hoststate.MCPClientStore
	}{
		{"file", func(b *testing.B) hoststate.MCPClientStore {
			return hoststate.NewFileMCPClients(filepath.Join(b.TempDir(), hoststate.MCPClientsFile))
		}},
		{"nats", func(b *testing.B) hoststate.MCPClientStore { return join(b, fleettest.Start(b), "bench").MCPClients() }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := bc.open(b)
			for i := range 16 { // a few clients, as a team would have
				s.Mint(fmt.Sprintf("client-%d", i))
			}
			bearer, err := s.Mint("desktop")
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if c, ok, err := s.Lookup(bearer); !ok || err != nil || !c.Live() {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
