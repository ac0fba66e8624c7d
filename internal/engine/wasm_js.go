package engine

import (
	"context"
	"errors"

	"github.com/voicebox-go/voicebox/internal/jsutil"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// wasmRunnerScript is the Worker the engine runs WebAssembly modules in.
const wasmRunnerScript = "/wasm-runner.js"

// workerRunner is the page's executor.WasmRunner: modules run in a Worker (wasm-runner.js), one
// call at a time, and a call past its deadline terminates the Worker (the only way to stop a
// module that loops: there is no preemption in it), so the next call starts a new one. A trap
// leaves the Worker as it was: the next call runs in it.
type workerRunner struct {
	url  string
	slot chan struct{} // one call at a time

	// Held with slot.
	worker    jsutil.Value
	live      bool
	answers   chan jsutil.Value // the Worker's answers (and its error events, as a null)
	onMessage jsutil.Func
	onError   jsutil.Func
	seq       int
}

func newWorkerRunner(url string) *workerRunner {
	return &workerRunner{url: url, slot: make(chan struct{}, 1)}
}

var errWorkerFailed = errors.New("engine: the WebAssembly worker failed")

// Run implements executor.WasmRunner.
func (w *workerRunner) Run(ctx context.Context, module []byte, export string, layout wasmabi.Layout, inputs [][]byte, refuse *refusal.Refusal) (int64, bool, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, wasmabi.Deadline)
	defer cancel()
	select {
	case w.slot <- struct{}{}:
		defer func() { <-w.slot }()
	case <-ctx.Done():
		return 0, false, nil, refusal.New(refusal.TimeExceeded, "another module ran in the page past this call's deadline of %s", wasmabi.Deadline)
	}
	if err := w.start(); err != nil {
		return 0, false, nil, refusal.New(refusal.InternalError, "the page could not start its WebAssembly worker")
	}
	msg, err := w.message(module, export, layout, inputs, refuse)
	if err != nil {
		return 0, false, nil, refusal.New(refusal.InternalError, "the page could not hand the module to its worker")
	}
	if _, err := w.worker.Call("postMessage", msg); err != nil {
		w.stop()
		return 0, false, nil, refusal.New(refusal.InternalError, "the page could not hand the module to its worker")
	}
	for {
		select {
		case data := <-w.answers:
			if data.IsNull() {
				w.stop()
				return 0, false, nil, refusal.New(refusal.WasmTrapped, "the page's WebAssembly worker failed while it ran the module")
			}
			if id, err := data.Get("id"); err != nil || mustInt(id) != w.seq {
				continue // an answer to a call that was given up on
			}
			return answerOf(data)
		case <-ctx.Done():
			w.stop() // the module may still be running: nothing else stops it
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return 0, false, nil, refusal.New(refusal.TimeExceeded, "the module was still running after %d ms; its worker was terminated", wasmabi.Deadline.Milliseconds())
			}
			return 0, false, nil, refusal.New(refusal.TimeExceeded, "the call was cancelled while the module ran; its worker was terminated")
		}
	}
}

// start makes the Worker when none is running.
func (w *workerRunner) start() error {
	if w.live {
		return nil
	}
	ctor, err := jsutil.Global().Get("Worker")
	if err != nil {
		return err
	}
	answers := make(chan jsutil.Value, 1)
	w.onMessage, err = jsutil.FuncOf(func(_ jsutil.Value, args []jsutil.Value) any {
		if len(args) > 0 {
			if data, err := args[0].Get("data"); err == nil {
				select {
				case answers <- data:
				default: // never blocks the event loop; one call is outstanding at a time
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.onError, err = jsutil.FuncOf(func(jsutil.Value, []jsutil.Value) any {
		select {
		case answers <- jsutil.Null():
		default:
		}
		return nil
	})
	if err != nil {
		w.onMessage.Release()
		return err
	}
	worker, err := ctor.New(w.url)
	if err != nil {
		w.onMessage.Release()
		w.onError.Release()
		return errWorkerFailed
	}
	worker.Set("onmessage", w.onMessage.Value())
	worker.Set("onerror", w.onError.Value())
	w.worker, w.answers, w.live = worker, answers, true
	return nil
}

// stop terminates the Worker, whatever it is doing.
func (w *workerRunner) stop() {
	if !w.live {
		return
	}
	w.worker.Call("terminate")
	w.onMessage.Release()
	w.onError.Release()
	w.live = false
}

// message builds the call wasm-runner.js reads.
func (w *workerRunner) message(module []byte, export string, layout wasmabi.Layout, inputs [][]byte, refuse *refusal.Refusal) (jsutil.Value, error) {
	w.seq++
	msg := jsutil.Object(map[string]any{"id": w.seq, "export": export,
		"output": map[string]any{"offset": int(layout.Output.Offset), "maxBytes": int(layout.Output.MaxBytes)}})
	mod, err := jsutil.BytesToJS(module)
	if err != nil {
		return jsutil.Value{}, err
	}
	msg.Set("module", mod)
	arrayCtor, err := jsutil.Global().Get("Array")
	if err != nil {
		return jsutil.Value{}, err
	}
	ins, _ := arrayCtor.New()
	offsets, _ := arrayCtor.New()
	for i, in := range inputs {
		arr, err := jsutil.BytesToJS(in)
		if err != nil {
			return jsutil.Value{}, err
		}
		ins.SetIndex(i, arr)
		if i < len(layout.Inputs) {
			offsets.SetIndex(i, int(layout.Inputs[i].Offset))
		}
	}
	msg.Set("inputs", ins)
	msg.Set("offsets", offsets)
	if refuse != nil {
		msg.Set("refuse", jsutil.Object(map[string]any{"rule": string(refuse.Rule), "why": refuse.Why}))
	} else {
		msg.Set("refuse", jsutil.Null())
	}
	return msg, nil
}

// answerOf reads the worker's answer: a refusal, or what the module returned and wrote.
func answerOf(data jsutil.Value) (int64, bool, []byte, error) {
	if r, err := data.Get("refused"); err == nil && r.Type() == jsutil.TypeString {
		rule, _ := r.String()
		why := ""
		if v, err := data.Get("why"); err == nil {
			why, _ = v.String()
		}
		return 0, false, nil, refusal.New(refusal.Rule(rule), "%s", why)
	}
	returned, _ := data.Get("returned")
	has, _ := data.Get("hasResult")
	hasResult, _ := has.Bool()
	outV, err := data.Get("out")
	if err != nil {
		return 0, false, nil, refusal.New(refusal.InternalError, "the page's worker answered without the module's output")
	}
	out, err := jsutil.BytesToGo(outV)
	if err != nil {
		return 0, false, nil, refusal.New(refusal.InternalError, "the page's worker answered without the module's output")
	}
	f, _ := returned.Float()
	return int64(int32(int64(f))), hasResult, out, nil
}

func mustInt(v jsutil.Value) int {
	n, _ := v.Int()
	return n
}
