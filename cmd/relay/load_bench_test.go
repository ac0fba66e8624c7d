package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The load BenchmarkLoadMachineRoot puts on one relay and its machine root (issue 33, item 9,
// measured 152 + 48 clients for 2 minutes; this is the same mix in about a minute).
const (
	// loadTurnClients post typed actions to /api/turn, each one request at a time.
	loadTurnClients = 152
	// loadMCPClients call tools over /mcp, each its own session, one call at a time.
	loadMCPClients = 48
	// loadDuration is how long the clients run.
	loadDuration = 45 * time.Second
	// loadPace is how often each client calls: one call a second, 200 calls a second in all,
	// half of them writes (a client whose call takes longer calls again at once). The clients
	// start spread over the first loadPace.
	loadPace = time.Second
	// loadWarmup is the start of the load whose calls are not measured (their errors count):
	// 200 clients making their connections, sessions and files at once.
	loadWarmup = 5 * time.Second
	// loadSharedFiles are the files every client also writes (one write in loadSharedEvery), so
	// writes of one name from many clients meet in the root's history.
	loadSharedFiles = 4
	loadSharedEvery = 4
	// loadCallBound is a call's hang guard; a call past it counts as an error.
	loadCallBound = 30 * time.Second
)

// loadStats collects one kind of call's latencies and errors.
type loadStats struct {
	mu      sync.Mutex
	samples []float64 // milliseconds
	errors  int
	first   string // the first error, for the log
	served  int    // the calls answered, warm-up included
}

// add counts a call that started at t0 and took d; measured says whether it started after the
// warm-up (only its errors count otherwise).
func (s *loadStats) add(d time.Duration, err error, measured bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errors++
		if s.first == "" {
			s.first = err.Error()
		}
		return
	}
	if s.served++; !measured {
		return
	}
	s.samples = append(s.samples, float64(d.Microseconds())/1000)
}

func (s *loadStats) quantile(q float64) float64 {
	if len(s.samples) == 0 {
		return 0
	}
	v := slices.Clone(s.samples)
	slices.Sort(v)
	return v[min(len(v)-1, int(float64(len(v))*q))]
}

// BenchmarkLoadMachineRoot runs loadTurnClients /api/turn clients and loadMCPClients /mcp clients
// against one relay whose root is a machine environment (relay serve and relay env in process, a
// real directory, real fsync), for loadDuration, each calling once every loadPace, half writes
// and half reads; the calls of the first loadWarmup are not measured. Each client writes
// its own file, and every loadSharedEvery-th write one of loadSharedFiles shared ones. It reports
// the p50 and p99 (ms) of the writes of a client's own file, of the shared files' (which queue
// behind each other: the changes of one file happen one at a time) and of the reads, the
// errors, and the most goroutines seen; then it
// checks that nothing was lost: each client's file holds its last answered write, and the root's
// history lists its newest changes in order.
//
//	go test -run '^$' -bench LoadMachineRoot -benchtime 1x ./relay/
func BenchmarkLoadMachineRoot(b *testing.B) {
	url, stateDir, root := machineRelay(b)
	tr := &http.Transport{MaxIdleConns: 4 * (loadTurnClients + loadMCPClients), MaxIdleConnsPerHost: 4 * (loadTurnClients + loadMCPClients)}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: loadCallBound}

	sessions := make([]*sdk.ClientSession, loadMCPClients)
	for i := range sessions {
		// A bearer each: one client's calls are bounded (MaxCallsPerClient), and these are 48 clients.
		bearer := mintMCP(b, stateDir, fmt.Sprintf("load-%d", i))
		c := sdk.NewClient(&sdk.Implementation{Name: fmt.Sprintf("load-%d", i), Version: "1"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), loadCallBound)
		s, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: bearerOn{bearer, tr}}}, nil)
		cancel()
		if err != nil {
			b.Fatalf("MCP client %d: %v", i, err)
		}
		b.Cleanup(func() { s.Close() })
		sessions[i] = s
	}

	for b.Loop() {
		var writes, shared, reads loadStats
		last := make([]string, loadTurnClients+loadMCPClients) // each client's last answered write
		var peak atomic.Int64
		start := time.Now()
		stop := start.Add(loadDuration)
		done := make(chan struct{})
		go func() { // the most goroutines seen, sampled
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				if n := int64(runtime.NumGoroutine()); n > peak.Load() {
					peak.Store(n)
				}
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		}()
		cpu0 := processCPU()
		var wg sync.WaitGroup
		for i := range loadTurnClients + loadMCPClients {
			wg.Go(func() {
				own := fmt.Sprintf("load/c%03d.txt", i)
				next := time.Now().Add(loadPace * time.Duration(i) / (loadTurnClients + loadMCPClients))
				for n := 0; ; n++ {
					time.Sleep(time.Until(next))
					now := time.Now()
					if !now.Before(stop) {
						break
					}
					if next = next.Add(loadPace); next.Before(now) {
						next = now
					}
					var call func(tool string, args map[string]string) error
					if i < loadTurnClients {
						call = func(tool string, args map[string]string) error { return turnCall(client, url, tool, args) }
					} else {
						s := sessions[i-loadTurnClients]
						call = func(tool string, args map[string]string) error { return mcpCall(s, tool, args) }
					}
					if n%2 == 1 {
						t0 := time.Now()
						err := call("read_file", map[string]string{"name": own})
						reads.add(time.Since(t0), err, t0.Sub(start) >= loadWarmup)
						continue
					}
					name, content := own, fmt.Sprintf("client %d write %d\n", i, n)
					if (n/2)%loadSharedEvery == loadSharedEvery-1 {
						name = fmt.Sprintf("load/shared-%d.txt", (i+n)%loadSharedFiles)
					}
					t0 := time.Now()
					err := call("write_file", map[string]string{"name": name, "content": content})
					if name != own {
						shared.add(time.Since(t0), err, t0.Sub(start) >= loadWarmup)
						continue
					}
					writes.add(time.Since(t0), err, t0.Sub(start) >= loadWarmup)
					if err == nil {
						last[i] = content
					}
				}
			})
		}
		wg.Wait()
		close(done)
		calls := writes.served + shared.served + reads.served
		// The process's CPU time (relay, environment and clients, all in this process) per call
		// answered: what the load costs, whatever else the machine runs.
		b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/1000/float64(max(calls, 1)), "cpu-ms/call")

		b.ReportMetric(writes.quantile(0.5), "write-ms-p50")
		b.ReportMetric(writes.quantile(0.99), "write-ms-p99")
		b.ReportMetric(shared.quantile(0.5), "shared-write-ms-p50")
		b.ReportMetric(shared.quantile(0.99), "shared-write-ms-p99")
		b.ReportMetric(reads.quantile(0.5), "read-ms-p50")
		b.ReportMetric(reads.quantile(0.99), "read-ms-p99")
		b.ReportMetric(float64(len(writes.samples)), "writes")
		b.ReportMetric(float64(len(shared.samples)), "shared-writes")
		b.ReportMetric(float64(len(reads.samples)), "reads")
		b.ReportMetric(float64(writes.errors+shared.errors+reads.errors), "errors")
		b.ReportMetric(float64(peak.Load()), "goroutines-max")
		if writes.errors+shared.errors+reads.errors > 0 {
			b.Logf("first errors: write %q, shared write %q, read %q", writes.first, shared.first, reads.first)
		}
		for i, want := range last {
			if want == "" {
				continue
			}
			got, err := os.ReadFile(filepath.Join(root, fmt.Sprintf("load/c%03d.txt", i)))
			if err != nil || string(got) != want {
				b.Fatalf("client %d's file holds %q (%v), not its last answered write %q", i, got, err, want)
			}
		}
		checkHistoryOrder(b, url, hostToken(b, stateDir))
	}
}

// checkHistoryOrder asks the root for its history and checks it lists its changes newest first,
// numbered without repeats.
func checkHistoryOrder(b *testing.B, url, token string) {
	b.Helper()
	out := rootCall(b, url, token, "list-history", map[string]any{})
	res, _ := out["observed"].(map[string]any)
	entries, _ := res["entries"].([]any)
	if len(entries) == 0 {
		b.Fatalf("the history lists nothing after the load: %v", out)
	}
	prev := uint64(1 << 63)
	for _, e := range entries {
		seq := uint64(e.(map[string]any)["seq"].(float64))
		if seq >= prev {
			b.Fatalf("the history lists %d after %d: not newest first: %v", seq, prev, entries)
		}
		prev = seq
	}
}

// processCPU is the user and system CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bearerOn sends every request with an MCP bearer over a shared transport.
type bearerOn struct {
	bearer string
	rt     http.RoundTripper
}

func (b bearerOn) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.bearer)
	return b.rt.RoundTrip(r)
}

// turnCall posts {"action": {"verb": tool, ...args}} to /api/turn; an answer that is not ok is
// an error.
func turnCall(client *http.Client, url, tool string, args map[string]string) error {
	action := map[string]string{"verb": tool}
	for k, v := range args {
		action[k] = v
	}
	body, _ := json.Marshal(map[string]any{"action": action})
	resp, err := client.Post(url+"/api/turn", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var turn struct {
		OK bool `json:"ok"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &turn) != nil || !turn.OK {
		return fmt.Errorf("%s: %d %s", tool, resp.StatusCode, raw)
	}
	return nil
}

// mcpCall calls tool over an MCP session; a tool error is an error.
func mcpCall(s *sdk.ClientSession, tool string, args map[string]string) error {
	ctx, cancel := context.WithTimeout(context.Background(), loadCallBound)
	defer cancel()
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError {
		raw, _ := json.Marshal(res.Content)
		return fmt.Errorf("%s: %s", tool, raw)
	}
	return nil
}
