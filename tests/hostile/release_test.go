//go:build !js

package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// releaseChannel is the BroadcastChannel on which the origin's workers ask each other to let go
// of a file's sync access handles (internal/opfs: releaseChannel).
const releaseChannel = "voicebox-opfs-release"

// releaseHugeChars is the length of each huge string the attacker posts there, and
// releaseHugeCount how many it posts: copied into the worker's Go whole, they would grow its
// WebAssembly memory (which never shrinks) by about their size.
const (
	releaseHugeChars = 24 << 20
	releaseHugeCount = 4
)

// releaseMemorySlack is how far the worker's WebAssembly memory may grow during the attack (the
// calls it serves meanwhile), far below one huge string.
const releaseMemorySlack = 12 << 20

// releaseReaders and releaseReads: that many callers each read the hot file that many times
// through the relay during the flood.
const (
	releaseReaders = 4
	releaseReads   = 100
)

// TestAFloodOfReleaseAsksCostsTheWorkspaceNothing: the workspace tab serves calls from its
// browser storage while another page of the relay's origin posts on the channel on which the
// origin's workers ask each other to let go of a file (voicebox-opfs-release): values that are
// no path (numbers, null, objects, arrays, buffers), strings of 24 M characters, paths with
// ".." and NUL, and a flood of thousands of asks a second (up to 4,000) for the very file the
// calls read and for the whole workspace. Every call is answered, correctly; the worker's WebAssembly memory
// does not take in the huge strings; the worker does not close and reopen the file's handle at
// every read (at most opfs.releaseAsksPerSecond asks a second are heard, said once on the
// worker's console); a file outside the workspace and the workspace's files are unchanged.
func TestAFloodOfReleaseAsksCostsTheWorkspaceNothing(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	harness.OpenWorkspace(t, tab, relay.URL)
	const hot, content = "hot.txt", "read me again and again\n"
	if a := relay.Call(t, "write-file", map[string]string{"path": hot, "content": content}); !a.OK {
		t.Fatalf("write-file: %s", a.Raw)
	}
	w := attachWorker(t, tab, relay.URL+"/worker.js")
	// Count the sync access handles the worker opens, from here on.
	w.eval(t, `(() => {
		const p = FileSystemFileHandle.prototype, open = p.createSyncAccessHandle;
		self.__opens = 0;
		p.createSyncAccessHandle = function (...a) { self.__opens++; return open.apply(this, a); };
		return true;
	})()`)
	token := relay.HostToken(t)
	readHot := func() error {
		a, err := rootCall(relay, token, "read-file", map[string]string{"path": hot})
		if err != nil {
			return err
		}
		var got struct {
			Content string `json:"content"`
		}
		if !a.OK || json.Unmarshal(a.Observed, &got) != nil || got.Content != content {
			return fmt.Errorf("read-file %s answered %s", hot, harness.Clip(string(a.Raw)))
		}
		return nil
	}
	if err := readHot(); err != nil {
		t.Fatal(err)
	}

	// Another page of the origin: the relay's health answer, a document of its own.
	attacker := harness.NewTab(t)
	attacker.Allow(`favicon`) // a document of its own may ask for one
	attacker.Navigate(relay.URL + "/api/health")
	harness.Eval[bool](attacker, `(async () => {
		const root = await navigator.storage.getDirectory();
		const w = await (await root.getFileHandle('outside.txt', {create: true})).createWritable();
		await w.write('outside the workspace');
		await w.close();
		return true;
	})()`)
	memBefore := w.wasmMemory(t)

	// Values that are no path, and paths that lead nowhere or out.
	harness.Eval[bool](attacker, fmt.Sprintf(`(() => {
		const bc = new BroadcastChannel(%q);
		for (const v of [42, null, true, {path: 'workspace/hot.txt'}, ['workspace/hot.txt'], new ArrayBuffer(1 << 20),
				new Uint8Array(1 << 16), new Blob(['workspace/hot.txt'])]) bc.postMessage(v);
		for (const p of ['', '/', '..', '../..', 'workspace/..', 'workspace/../shelf', 'workspace/../outside.txt',
				'../outside.txt', 'workspace/hot.txt/../../outside.txt', 'workspace\u0000hot.txt', 'workspace//hot.txt',
				'shelf', 'workspace/.voicebox/../../outside.txt']) bc.postMessage(p);
		bc.close();
		return true;
	})()`, releaseChannel))
	// Huge strings, one at a time, each a path with the hot file's name in front.
	for range releaseHugeCount {
		harness.Eval[bool](attacker, fmt.Sprintf(`(() => {
			const bc = new BroadcastChannel(%q);
			bc.postMessage('workspace/hot.txt' + 'x'.repeat(%d));
			bc.close();
			return true;
		})()`, releaseChannel, releaseHugeChars))
		if err := readHot(); err != nil {
			t.Fatalf("among the huge asks: %v", err)
		}
	}

	// The flood, from the attacker's page, while callers read the hot file.
	harness.Eval[bool](attacker, fmt.Sprintf(`(() => {
		const bc = new BroadcastChannel(%q);
		self.__flood = setInterval(() => {
			for (let i = 0; i < 10; i++) { bc.postMessage('workspace/hot.txt'); bc.postMessage('workspace'); }
		}, 5);
		return true;
	})()`, releaseChannel))
	opensBefore := w.eval(t, `self.__opens`).(float64)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, releaseReaders)
	for range releaseReaders {
		wg.Go(func() {
			for range releaseReads {
				if err := readHot(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	opens := w.eval(t, `self.__opens`).(float64) - opensBefore
	harness.Eval[bool](attacker, `(clearInterval(self.__flood), true)`)
	close(errs)
	for err := range errs {
		t.Errorf("during the flood: %v", err)
	}
	reads := releaseReaders * releaseReads
	t.Logf("the worker opened %v handles for %d reads in %v under the flood", opens, reads, elapsed.Round(time.Millisecond))
	// At most opfs.asksPerSecond (32) asks a second are heard, each of which may close the hot
	// file's handle and the audit log's (an ask for the whole workspace): two reopens at most.
	if bound := 2*32*(elapsed.Seconds()+1) + 8; opens > bound || opens >= 0.75*float64(reads) {
		t.Errorf("the worker opened %v sync access handles for %d reads in %v under the flood: a reopen at (nearly) every read", opens, reads, elapsed.Round(time.Millisecond))
	}

	memAfter := w.wasmMemory(t)
	t.Logf("the worker's WebAssembly memory: %d MB before the attack, %d MB after", memBefore>>20, memAfter>>20)
	if memAfter > memBefore+releaseMemorySlack {
		t.Errorf("the worker's WebAssembly memory grew from %d to %d bytes: it took in the asks", memBefore, memAfter)
	}
	waitFor(t, "the worker saying once that it did not hear the flood", func() bool {
		return w.saidCount("asks to let go of files came faster than") >= 1
	})
	if n := w.saidCount("asks to let go of files came faster than"); n > 2 {
		t.Errorf("the worker said %d times that it did not hear the flood", n)
	}

	// Nothing else changed: the file outside the workspace, the workspace's listing and file.
	if got := harness.Eval[string](attacker, `(async () => {
		const root = await navigator.storage.getDirectory();
		return await (await (await root.getFileHandle('outside.txt')).getFile()).text();
	})()`); got != "outside the workspace" {
		t.Errorf("the file outside the workspace holds %q", got)
	}
	if err := readHot(); err != nil {
		t.Fatalf("after the flood: %v", err)
	}
	if a := relay.Call(t, "list-files", map[string]string{}); !a.OK || !strings.Contains(string(a.Observed), hot) {
		t.Errorf("list-files after the flood: %s", a.Raw)
	}
	if a := relay.Call(t, "write-file", map[string]string{"path": "after.txt", "content": "written"}); !a.OK {
		t.Errorf("a write after the flood: %s", a.Raw)
	}
	served(t, relay)
}

// rootCall is harness.Relay.Call for a goroutine other than the test's: it returns its error.
func rootCall(r *harness.Relay, token, tool string, args any) (harness.Answer, error) {
	body, _ := json.Marshal(map[string]any{"tool": tool, "args": args})
	req, _ := http.NewRequest(http.MethodPost, r.URL+"/api/root/call", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-voicebox-host-token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return harness.Answer{}, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a harness.Answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("%s answered %d %s", tool, resp.StatusCode, harness.Clip(string(raw)))
	}
	a.Raw = raw
	return a, nil
}

// workerTarget is a dedicated worker of a tab, attached to by DevTools: its console lines and a
// way to evaluate in it.
type workerTarget struct {
	ctx  context.Context
	mu   sync.Mutex
	said []string
}

// attachWorker attaches to the dedicated worker whose script is url (the relay's port makes it
// this test's own).
func attachWorker(t *testing.T, tab *harness.Tab, url string) *workerTarget {
	t.Helper()
	targets, err := chromedp.Targets(tab.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := &workerTarget{}
	for _, info := range targets {
		if info.Type != "worker" || info.URL != url {
			continue
		}
		ctx, cancel := chromedp.NewContext(tab.Ctx, chromedp.WithTargetID(info.TargetID), chromedp.WithDetachOnCancel(), chromedp.WithListener(w.onEvent))
		t.Cleanup(cancel)
		if err := chromedp.Do(ctx); err != nil {
			t.Fatalf("attach to the worker: %v", err)
		}
		w.ctx = ctx
		return w
	}
	t.Fatalf("no worker runs %s", url)
	return nil
}

func (w *workerTarget) onEvent(ev any) {
	if ev, ok := ev.(*runtime.EventConsoleAPICalled); ok {
		var line []string
		for _, a := range ev.Args {
			var s string
			if json.Unmarshal(a.Value, &s) == nil {
				line = append(line, s)
			}
		}
		w.mu.Lock()
		w.said = append(w.said, strings.Join(line, " "))
		w.mu.Unlock()
	}
}

// saidCount is how many of the worker's console lines contain s.
func (w *workerTarget) saidCount(s string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, l := range w.said {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// eval evaluates expr in the worker and returns its value.
func (w *workerTarget) eval(t *testing.T, expr string) any {
	t.Helper()
	var v any
	err := chromedp.Do(w.ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		byValue := true
		res, err := cdp.Call(ctx, target, runtime.Evaluate, runtime.EvaluateParams{Expression: expr, ReturnByValue: &byValue})
		if err != nil {
			return err
		}
		if res.ExceptionDetails != nil {
			return fmt.Errorf("%s", res.ExceptionDetails.Text)
		}
		return json.Unmarshal(res.Result.Value, &v)
	}))
	if err != nil {
		t.Fatalf("evaluate %q in the worker: %v", expr, err)
	}
	return v
}

// wasmMemory is the size of the largest WebAssembly memory in the worker (the engine's: Go's
// heap and stacks), found among the worker's objects by their prototype.
func (w *workerTarget) wasmMemory(t *testing.T) int64 {
	t.Helper()
	var size int64
	err := chromedp.Do(w.ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		proto, err := cdp.Call(ctx, target, runtime.Evaluate, runtime.EvaluateParams{Expression: "WebAssembly.Memory.prototype"})
		if err != nil {
			return err
		}
		all, err := cdp.Call(ctx, target, runtime.QueryObjects, runtime.QueryObjectsParams{PrototypeObjectID: proto.Result.ObjectID})
		if err != nil {
			return err
		}
		byValue := true
		res, err := cdp.Call(ctx, target, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
			FunctionDeclaration: "function () { return Math.max(0, ...this.map((m) => m.buffer.byteLength)); }",
			ObjectID:            all.Objects.ObjectID, ReturnByValue: &byValue})
		if err != nil {
			return err
		}
		return json.Unmarshal(res.Result.Value, &size)
	}))
	if err != nil {
		t.Fatalf("the worker's WebAssembly memory: %v", err)
	}
	return size
}
