package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// uiMaxWriteBytes bounds what the page's own editor saves in one call. It is larger than what a
// model may write through a tool (executor.MaxWriteBytes): a person editing a file is no model.
const uiMaxWriteBytes = 16 << 20

// The audit log is written after the answer, off the call's path: each write appends a batch to
// the current segment (through the segment's sync access handle on OPFS; a rewrite of the
// segment on a picked folder). Records wait at most auditFlushDelay and are written in batches of
// up to auditBatch; past auditQueue waiting records, new ones are dropped and counted.
const (
	auditQueue      = 1024
	auditBatch      = 256
	auditFlushDelay = 250 * time.Millisecond
)

// workspace is the executor side of an open root: one executor for the relay's calls (the tool
// bounds, recorded as the assistant's changes) and one for the page's own UI (a larger write
// bound, recorded as the person's), sharing one audit log and one undo history, so Undo and
// Redo take back either's changes in the order they were made.
type workspace struct {
	tools *executor.Executor
	ui    *executor.Executor
	audit *asyncAudit
	seq   atomic.Uint64
}

// newExecutor opens root's executors; onHistory, when set, is called whenever the undo history
// changes (the worker tells the page, whose History panel reads it again); wasm, when set, runs
// the WebAssembly modules the relay sends.
func newExecutor(ctx context.Context, root fsroot.Root, onHistory func(), wasm executor.WasmRunner) *workspace {
	w := &workspace{}
	var audit executor.AuditLog
	if log, err := executor.OpenRootAudit(ctx, root); err == nil {
		w.audit = newAsyncAudit(log)
		audit = w.audit
	}
	toolOpts := executor.Options{Audit: audit, Actor: executor.ByAssistant, Wasm: wasm}
	uiOpts := executor.Options{Audit: audit, MaxWriteBytes: uiMaxWriteBytes, Actor: executor.ByPerson}
	if h, err := executor.OpenHistory(ctx, root, executor.HistoryOptions{OnChange: onHistory}); err == nil {
		toolOpts.History, uiOpts.History = h, h
	}
	w.tools = executor.New(root, toolOpts)
	w.ui = executor.New(root, uiOpts)
	return w
}

// Execute runs a call from the relay (the door has verified it).
func (w *workspace) Execute(ctx context.Context, call wire.Call) (json.RawMessage, error) {
	return w.tools.Execute(ctx, call)
}

// run runs a primitive for the page's UI, under the built-in descriptor.
func (w *workspace) run(ctx context.Context, prim executor.Primitive, args rawjson.Appender) (json.RawMessage, *refusal.Refusal) {
	raw := args.AppendJSON(nil)
	call := wire.Call{
		CallID:       "page-" + strconv.FormatUint(w.seq.Add(1), 10),
		Tool:         string(prim),
		DescriptorID: executor.BuiltinDescriptor,
		Args:         raw,
		BoundsEcho:   json.RawMessage(`{}`),
	}
	out, err := w.ui.Execute(ctx, call)
	if err != nil {
		return nil, fileRefusal(err)
	}
	return out, nil
}

func (w *workspace) close() {
	if w != nil && w.audit != nil {
		w.audit.close()
	}
}

// batchLog is an audit log that takes several encoded records in one write (executor.RootAudit).
type batchLog interface {
	AppendLines(ctx context.Context, recs []executor.AuditLine) error
}

// asyncAudit writes audit records in the background, in order, in batches. It encodes each
// record as it arrives, which is once the call's answer has gone (the worker runs one goroutine
// at a time, and the call's goroutine sends before it waits again): so encoding costs a call a
// few microseconds of its successor's time at most, rather than a batch's worth stalling the
// worker at flush time (a few milliseconds for a full batch of records).
type asyncAudit struct {
	inner   batchLog
	queue   chan executor.Record
	dropped atomic.Uint64
	once    sync.Once
}

var errAuditBehind = errors.New("browser: the audit log is behind; a record was dropped")

func newAsyncAudit(inner batchLog) *asyncAudit {
	a := &asyncAudit{inner: inner, queue: make(chan executor.Record, auditQueue)}
	go a.run()
	return a
}

func (a *asyncAudit) run() {
	for rec := range a.queue {
		batch := make([]executor.AuditLine, 0, auditBatch)
		batch = a.encode(batch, rec)
		timer := time.NewTimer(auditFlushDelay)
	collect:
		for len(batch) < auditBatch {
			select {
			case rec, ok := <-a.queue:
				if !ok {
					break collect
				}
				batch = a.encode(batch, rec)
			case <-timer.C:
				break collect
			}
		}
		timer.Stop()
		if err := a.inner.AppendLines(context.Background(), batch); err != nil {
			a.dropped.Add(uint64(len(batch)))
		}
	}
}

// encode appends rec's line to batch; a record that cannot be encoded is counted as dropped.
func (a *asyncAudit) encode(batch []executor.AuditLine, rec executor.Record) []executor.AuditLine {
	line, err := executor.EncodeRecord(rec)
	if err != nil {
		a.dropped.Add(1)
		return batch
	}
	return append(batch, line)
}

func (a *asyncAudit) Append(_ context.Context, rec executor.Record) error {
	select {
	case a.queue <- rec:
		return nil
	default:
		a.dropped.Add(1)
		return errAuditBehind
	}
}

func (a *asyncAudit) close() { a.once.Do(func() { close(a.queue) }) }
