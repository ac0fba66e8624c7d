package main

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"voicebox/shared/executor"
	"voicebox/shared/fsroot"
	"voicebox/shared/refusal"
	"voicebox/shared/wire"
)

// uiMaxWriteBytes bounds what the page's own editor saves in one call. It is larger than what a
// model may write through a tool (executor.MaxWriteBytes): a person editing a file is no model.
const uiMaxWriteBytes = 16 << 20

// auditQueue bounds the audit records waiting to be written. Records are written after the
// answer, off the call's path (each append rewrites a segment, milliseconds on OPFS); past the
// bound they are dropped and counted.
const auditQueue = 256

// workspace is the executor side of an open root: one executor for the relay's calls (the tool
// bounds) and one for the page's own UI (a larger write bound), sharing one audit log.
type workspace struct {
	tools *executor.Executor
	ui    *executor.Executor
	audit *asyncAudit
	seq   atomic.Uint64
}

func newExecutor(ctx context.Context, root fsroot.Root) *workspace {
	w := &workspace{}
	var audit executor.AuditLog
	if log, err := executor.OpenRootAudit(ctx, root); err == nil {
		w.audit = newAsyncAudit(log)
		audit = w.audit
	}
	w.tools = executor.New(root, executor.Options{Audit: audit})
	w.ui = executor.New(root, executor.Options{Audit: audit, MaxWriteBytes: uiMaxWriteBytes})
	return w
}

// Execute runs a call from the relay (the door has verified it).
func (w *workspace) Execute(ctx context.Context, call wire.Call) (json.RawMessage, error) {
	return w.tools.Execute(ctx, call)
}

// run runs a primitive for the page's UI, under the built-in descriptor.
func (w *workspace) run(ctx context.Context, prim executor.Primitive, args any) (json.RawMessage, *refusal.Refusal) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, refusal.New(refusal.InvalidArgument, "the arguments could not be encoded: %v", err)
	}
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

// asyncAudit writes audit records in the background, in order.
type asyncAudit struct {
	inner   executor.AuditLog
	queue   chan executor.Record
	dropped atomic.Uint64
	once    sync.Once
}

var errAuditBehind = errors.New("browser: the audit log is behind; a record was dropped")

func newAsyncAudit(inner executor.AuditLog) *asyncAudit {
	a := &asyncAudit{inner: inner, queue: make(chan executor.Record, auditQueue)}
	go func() {
		for rec := range a.queue {
			a.inner.Append(context.Background(), rec)
		}
	}()
	return a
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
