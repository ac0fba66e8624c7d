//go:build js && voicebox_worker

package engine

import (
	"errors"
	"testing"

	"github.com/voicebox-go/voicebox/internal/jsutil"
)

// TestInADedicatedWorker proves this test binary runs where the page's Go runs: in a dedicated
// worker, where OPFS sync access handles exist (they do not on the main thread).
func TestInADedicatedWorker(t *testing.T) {
	global := jsutil.Global()
	scope := must(global.Get("DedicatedWorkerGlobalScope"))
	if scope.IsUndefined() {
		t.Fatal("DedicatedWorkerGlobalScope is undefined: this is not a worker")
	}
	if in, err := global.InstanceOf(scope); err != nil || !in {
		t.Fatalf("the global scope is not a DedicatedWorkerGlobalScope (%v)", err)
	}

	storage := must(must(global.Get("navigator")).Get("storage"))
	root := await(t, must(storage.Call("getDirectory")))
	opts := must(jsutil.ValueOf(map[string]any{"create": true}))
	file := await(t, must(root.Call("getFileHandle", "worker-harness-probe", opts)))
	handle := await(t, must(file.Call("createSyncAccessHandle")))
	defer func() {
		handle.Call("close")
		await(t, must(root.Call("removeEntry", "worker-harness-probe")))
	}()

	want := []byte("sync access handle")
	buf := must(must(global.Get("Uint8Array")).New(len(want)))
	if _, err := jsutil.CopyBytesToJS(buf, want); err != nil {
		t.Fatal(err)
	}
	zero := must(jsutil.ValueOf(map[string]any{"at": 0}))
	if n := must(must(handle.Call("write", buf, zero)).Int()); n != len(want) {
		t.Fatalf("wrote %d bytes, want %d", n, len(want))
	}
	must(handle.Call("flush"))
	back := must(must(global.Get("Uint8Array")).New(len(want)))
	if n := must(must(handle.Call("read", back, zero)).Int()); n != len(want) {
		t.Fatalf("read %d bytes, want %d", n, len(want))
	}
	got := make([]byte, len(want))
	jsutil.CopyBytesToGo(got, back)
	if string(got) != string(want) {
		t.Fatalf("read %q, want %q", got, want)
	}
}

// await waits for a JS promise from a test goroutine (never from inside a JS callback).
func await(t *testing.T, promise jsutil.Value) jsutil.Value {
	t.Helper()
	type settled struct {
		v   jsutil.Value
		err error
	}
	done := make(chan settled, 1)
	onOK, err := jsutil.FuncOf(func(_ jsutil.Value, args []jsutil.Value) any {
		done <- settled{v: args[0]}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer onOK.Release()
	onErr, err := jsutil.FuncOf(func(_ jsutil.Value, args []jsutil.Value) any {
		msg := "rejected"
		if s, err := args[0].Call("toString"); err == nil {
			msg, _ = s.String()
		}
		done <- settled{err: errors.New(msg)}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer onErr.Release()
	if _, err := promise.Call("then", onOK.Value(), onErr.Value()); err != nil {
		t.Fatal(err)
	}
	s := <-done
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.v
}
