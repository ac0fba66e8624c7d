//go:build !js

package harness

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
)

// WorkerTag is the build tag of test files that must run in a dedicated worker (they use APIs the
// main thread lacks, such as OPFS sync access handles). wasmbrowsertest never sees them: it runs
// tests on the main thread.
const WorkerTag = "voicebox_worker"

// workerRunBound bounds one worker run, beyond the binary's own -test.timeout.
const workerRunBound = 5 * time.Minute

//go:embed workerrunner
var runnerFiles embed.FS

// WorkerResult is what a test binary did in the worker.
type WorkerResult struct {
	Exit  int          `json:"exit"`
	Lines []WorkerLine `json:"lines"`
}

// WorkerLine is one line the binary wrote, on fd 1 (stdout) or 2 (stderr).
type WorkerLine struct {
	FD   int    `json:"fd"`
	Text string `json:"text"`
}

// Output returns every line, stdout and stderr interleaved as written.
func (r WorkerResult) Output() string {
	var b strings.Builder
	for _, l := range r.Lines {
		b.WriteString(l.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// BuildWorkerTest compiles the tests of pkg (an import path or ./dir relative to the checkout)
// for GOOS=js with WorkerTag and returns the path of the test binary. A ./tests/... directory is
// built in the tests module, where it lives.
func BuildWorkerTest(t testing.TB, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "test.wasm")
	dir := RepoRoot()
	if rest, ok := strings.CutPrefix(pkg, "./tests/"); ok {
		dir, pkg = filepath.Join(dir, "tests"), "./"+rest
	}
	cmd := exec.Command("go", "test", "-c", "-tags", WorkerTag, "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("harness: build %s for the worker: %v\n%s", pkg, err, b)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("harness: %s has no tests to run in the worker", pkg)
	}
	return out
}

// WorkerRunner is a tab on the worker runner page, serving one test binary. Its Tab can also
// run JavaScript on that page's main thread, for measurements beside the worker's.
type WorkerRunner struct {
	Tab  *Tab
	t    testing.TB
	stop func()
}

// NewWorkerRunner serves the test binary at wasmPath on a runner page (cross-origin isolated)
// and opens it in a fresh tab. Everything stops when the test ends.
func NewWorkerRunner(t testing.TB, wasmPath string) *WorkerRunner {
	t.Helper()
	srv := httptest.NewServer(workerRunnerHandler(wasmPath))
	t.Cleanup(srv.Close)
	// The tab lives past one run's bound: a loaded machine takes minutes over the OPFS suites.
	tab := newTab(t, workerRunBound+time.Minute)
	tab.Navigate(srv.URL + "/runner.html")
	return &WorkerRunner{Tab: tab, t: t}
}

// Run runs the binary once in a fresh dedicated worker with the test flags given (for example
// "-test.v", "-test.run=TestX") and returns its exit code and output. It adds -test.timeout so a
// hung test ends, and gives the run its own deadline beyond that.
func (w *WorkerRunner) Run(args ...string) WorkerResult {
	w.t.Helper()
	args = append([]string{"-test.timeout=" + (workerRunBound - 15*time.Second).String()}, args...)
	argv, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(w.Tab.Ctx, workerRunBound)
	defer cancel()
	res, err := chromedp.Run(ctx, chromedp.Evaluate[WorkerResult](fmt.Sprintf(`runInWorker(%s, {})`, argv), chromedp.EvalAwaitPromise))
	if err != nil {
		lines, _ := chromedp.Run(w.Tab.Ctx, chromedp.Evaluate[[]WorkerLine](`window.workerLines`))
		w.t.Fatalf("harness: the worker run did not finish: %v\n%s", err, WorkerResult{Lines: lines}.Output())
	}
	return res
}

// RunInWorker runs the test binary at wasmPath once in a dedicated worker of a fresh tab (see
// WorkerRunner.Run).
func RunInWorker(t testing.TB, wasmPath string, args ...string) WorkerResult {
	t.Helper()
	return NewWorkerRunner(t, wasmPath).Run(args...)
}

func workerRunnerHandler(wasmPath string) http.Handler {
	files, _ := fs.Sub(runnerFiles, "workerrunner")
	static := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Cross-origin isolation gives performance.now() its fine resolution for benchmarks.
		w.Header().Set("Cross-Origin-Opener-Policy", "same-origin")
		w.Header().Set("Cross-Origin-Embedder-Policy", "require-corp")
		w.Header().Set("Cache-Control", "no-store")
		switch r.URL.Path {
		case "/test.wasm":
			w.Header().Set("Content-Type", "application/wasm")
			http.ServeFile(w, r, wasmPath)
		case "/wasm_exec.js":
			w.Header().Set("Content-Type", "text/javascript")
			http.ServeFile(w, r, filepath.Join(goRoot(), "lib", "wasm", "wasm_exec.js"))
		case "/echo":
			echoFrames(w, r)
		case "/engine-io.js": // the page's, which its worker.js loads beside the engine
			w.Header().Set("Content-Type", "text/javascript")
			http.ServeFile(w, r, filepath.Join(RepoRoot(), "public", "engine-io.js"))
		default:
			static.ServeHTTP(w, r)
		}
	})
}

// echoFrames is a WebSocket that sends each message it receives back, as a binary message, then
// as a text message too when it is UTF-8: the worker's tests of the page's socket
// (internal/engine) read both kinds of frame from it.
func echoFrames(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	for {
		_, msg, err := c.Read(r.Context())
		if err != nil {
			return
		}
		if c.Write(r.Context(), websocket.MessageBinary, msg) != nil {
			return
		}
		if utf8.Valid(msg) && c.Write(r.Context(), websocket.MessageText, msg) != nil {
			return
		}
	}
}

func goRoot() string {
	if b, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		return strings.TrimSpace(string(b))
	}
	return os.Getenv("GOROOT")
}
