package fleet_test

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/session"

	"github.com/voicebox-go/voicebox/internal/door/extensionhost"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
	"github.com/voicebox-go/voicebox/internal/door/mcp"
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
// (two key-value reads: the bearer's record and its name's key), on one server and on a cluster
// of three with three replicas (each key read from the bucket stream's leader, which may be
// another node, while a current state of the stream was seen in the last 500 ms).
func BenchmarkMCPBearerLookup(b *testing.B) {
	for _, bc := range []struct {
		name string
		open func(b *testing.B) hoststate.MCPClientStore
	}{
		{"file", func(b *testing.B) hoststate.MCPClientStore {
			return mcp.NewFileClients(filepath.Join(b.TempDir(), mcp.ClientsFile))
		}},
		{"nats", func(b *testing.B) hoststate.MCPClientStore { return join(b, fleettest.Start(b), "bench").MCPClients() }},
		{"nats-3", func(b *testing.B) hoststate.MCPClientStore {
			nodes := fleettest.StartCluster(b, 3)
			f, err := fleet.Connect(fleet.Config{URL: nodes[0].URL(), Prefix: "bench", Replicas: 3})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(f.Close)
			s := f.MCPClients()
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) { // the cluster electing its leaders
				if _, err := s.Mint("client-0"); err == nil {
					return s
				} else if time.Now().After(deadline) {
					b.Fatal(err)
				}
			}
		}},
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

// BenchmarkExtensionStore: what the extension store costs where it is read, the state
// directory (a relay alone) against the fleet's store on an embedded NATS: a wasm tool's 64 KiB
// module, read afresh at every call of the tool, and a reload of the admitted set (the ledger
// and every descriptor; each relay does it after an admission, denial or revocation anywhere,
// and GET /api/extensions does it for its problems), 8 extensions admitted.
func BenchmarkExtensionStore(b *testing.B) {
	module := make([]byte, 64<<10)
	for _, bc := range []struct {
		name string
		open func(b *testing.B) extensionhost.Store
	}{
		{"file", func(b *testing.B) extensionhost.Store { return extensionhost.NewDirStore(b.TempDir()) }},
		{"nats", func(b *testing.B) extensionhost.Store { return join(b, fleettest.Start(b), "bench").Extensions() }},
	} {
		b.Run(bc.name+"/module", func(b *testing.B) {
			st := bc.open(b)
			s := extensionhost.NewAdmissionsIn(b.TempDir(), st, nil)
			if err := st.WriteFile("mods/tool.wasm", module); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if m, err := s.ReadModule("mods/tool.wasm", 1<<20); err != nil || len(m) != len(module) {
					b.Fatal(len(m), err)
				}
			}
		})
		b.Run(bc.name+"/reload", func(b *testing.B) {
			s := extensionhost.NewAdmissionsIn(b.TempDir(), bc.open(b), nil)
			for i := range 8 {
				id := fmt.Sprintf("ext-%d", i)
				if _, err := s.Stage(fmt.Appendf(nil, `{"id":%q,"name":"E","capabilities":["clock"],"tools":[{"name":"t%d","primitive":"now"}]}`, id, i)); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Decide(id, true, "host-token", nil); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if l, _, err := s.Load(); err != nil || len(l) != 8 {
					b.Fatal(len(l), err)
				}
			}
		})
	}
}

// BenchmarkExtensionListing: what the ledger costs a listing of the extensions (GET
// /api/extensions, and each reload), the fleet's store on an embedded NATS, 8 extensions
// admitted, the ledger holding besides them 0, 1,000 or 9,992 more lines (denials; the stream
// keeps 10,000, fleet.MaxLedgerLines), unchanged between listings.
func BenchmarkExtensionListing(b *testing.B) {
	for _, more := range []int{0, 1000, fleet.MaxLedgerLines - 8} {
		b.Run(fmt.Sprintf("lines=%d", more+8), func(b *testing.B) {
			srv := fleettest.Start(b)
			s := extensionhost.NewAdmissionsIn(b.TempDir(), join(b, srv, "list").Extensions(), nil)
			for i := range 8 {
				id := fmt.Sprintf("ext-%d", i)
				if _, err := s.Stage(fmt.Appendf(nil, `{"id":%q,"name":"E","capabilities":["clock"],"tools":[{"name":"t%d","primitive":"now"}]}`, id, i)); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Decide(id, true, "host-token", nil); err != nil {
					b.Fatal(err)
				}
			}
			nc, err := nats.Connect(srv.URL())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(256))
			for i := range more {
				if _, err := js.PublishAsync("list.ledger", fmt.Appendf(nil, `{"action":"deny","id":"other-%d","hash":"%064x","by":"host-token","at":"2026-12-06T12:00:00Z"}`, i, i)); err != nil {
					b.Fatal(err)
				}
			}
			<-js.PublishAsyncComplete()
			cpu := processCPU()
			for b.Loop() {
				if l, _, err := s.Load(); err != nil || len(l) != 8 {
					b.Fatal(len(l), err)
				}
			}
			// This process's CPU (the relay's side; NATS runs in a process of its own).
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU returns the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
