//go:build linux

package wasmtool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/voicebox-go/voicebox/catalogue"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi/wasmabitest"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// spinnerEnv marks a run of this test binary as a spinner of loadMachine.
const spinnerEnv = "VOICEBOX_WASMTOOL_TEST_SPINNER"

// spinnerLife bounds a spinner's life should its test never stop it.
const spinnerLife = 5 * time.Minute

func TestMain(m *testing.M) {
	if os.Getenv(spinnerEnv) != "" {
		go func() { // the test closes the pipe (or dies): the spinner ends
			io.Copy(io.Discard, os.Stdin)
			os.Exit(0)
		}()
		for end := time.Now().Add(spinnerLife); time.Now().Before(end); {
			burn(100_000)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// loadMachine starts n processes (this test binary as a spinner) that keep the CPU busy until the
// test ends: the load of a busy machine, which the kernel's scheduler shares out.
func loadMachine(t *testing.T, n int) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), spinnerEnv+"=1", "GOMAXPROCS=1")
		cmd.Stdin = r
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
	t.Cleanup(func() { w.Close() })
}

// cpuOf is the CPU time the calling thread spends in f.
func cpuOf(t testing.TB, f func()) time.Duration {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	read := func() time.Duration {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ts.Nano())
	}
	start := read()
	f()
	return read() - start
}

// TestLoadOnTheMachineDoesNotCountAgainstTheBudget: the sample shelf's diff of two 64 KiB texts,
// under a budget of three times the CPU time the call takes, passes while 4 x GOMAXPROCS processes
// spin on the CPU and make the call take longer than its budget of wall clock; a module that loops
// forever under the same load is still stopped, time-exceeded, past its CPU budget.
func TestLoadOnTheMachineDoesNotCountAgainstTheBudget(t *testing.T) {
	module, err := fs.ReadFile(catalogue.Files, "shelf/diff.wasm")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(module)
	tool := extensions.WasmTool{Module: "diff.wasm", SHA256: hex.EncodeToString(sum[:]), Export: "diff", ABI: wasmabi.ABIDiff}
	a, b := wasmabitest.BigTexts()
	diff := func(r *Runner) (*wasmabi.Output, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard only
		defer cancel()
		return r.Call(ctx, module, tool, [][]byte{a, b})
	}

	probe := New(Limits{})
	defer probe.Close(context.Background())
	if _, err := diff(probe); err != nil { // compiles the module: not part of the measure
		t.Fatal(err)
	}
	alone := cpuOf(t, func() {
		if _, err := diff(probe); err != nil {
			t.Fatal(err)
		}
	})
	// The backstop is far from the budget here: the machine running the tests is busy already.
	budget := 3 * alone
	r := New(Limits{Timeout: budget, Backstop: time.Minute})
	defer r.Close(context.Background())
	if _, err := diff(r); err != nil {
		t.Fatalf("without load, under a budget of %v (3 x the call's CPU): %v", budget, err)
	}

	loadMachine(t, 4*runtime.GOMAXPROCS(0))
	slowed := false
	for i := 0; i < 5 && !slowed; i++ {
		start := time.Now()
		out, err := diff(r)
		wall := time.Since(start)
		if err != nil {
			t.Fatalf("call %d under load, %v of wall clock for a budget of %v: %v", i, wall, budget, err)
		}
		if len(out.Blocks) == 0 {
			t.Fatalf("call %d under load answered no diff", i)
		}
		slowed = wall > budget
		t.Logf("call %d under load: %v of wall clock for a budget of %v of CPU (alone: %v)", i, wall, budget, alone)
	}
	if !slowed {
		t.Fatalf("the spinners never made a call take more wall clock than its budget of %v: the test proves nothing", budget)
	}
	start := time.Now()
	_, err = call(t, r, fixture(t, "loop"), "run", []byte("x"))
	t.Logf("the loop under load stopped after %v: %v", time.Since(start), err)
	if refusal.RuleOf(err) != refusal.TimeExceeded || !strings.Contains(err.Error(), "ms of CPU while running run, past its budget") {
		t.Fatalf("a loop under load: %v", err)
	}
}
