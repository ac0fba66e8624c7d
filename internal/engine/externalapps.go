package engine

import (
	"context"
	"encoding/json"

	"github.com/voicebox-go/voicebox/internal/shared/externalapp"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// maxExternalAnswerBytes bounds what the main thread may answer an external app call with: the
// page clamps a tool's text to 60,000 characters and a context's payloads to 20,000 each, so
// more than this is not an answer the page made.
const maxExternalAnswerBytes = 256 << 10

// externalCall carries a relay call of an external app (a tool under its app_x_ name, or
// get_app_context) to the page's main thread, where the apps' frames, the bridge and the approval
// gate are (public/external-apps.js): {"type":"externalapp.call", callId, name, args}, answered by
// externalapps.result. The page holds its own deadlines (the approval, then the app's answer);
// ctx bounds the wait here.
func (f *frames) externalCall(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	out, err := f.ask(ctx, "", "externalapp.cancel", func(id string) ([]byte, bool) {
		return appendExternalCall(nil, id, name, args)
	})
	if err != nil {
		return nil, err
	}
	if len(out) > maxExternalAnswerBytes {
		return nil, refusal.New(refusal.ToolOutputOverBudget, "the page answered %s with %d bytes, over the bound of %d", name, len(out), maxExternalAnswerBytes)
	}
	if !rawjson.Valid(out) || len(out) == 0 || out[0] != '{' {
		return nil, refusal.New(refusal.ExecThrew, "the page answered %s with something that is not a JSON object", name)
	}
	return out, nil
}

// externalAppsResult is the main thread's answer to an externalapp.call: {callId, result} or
// {callId, refused, why}.
func (a *Engine) externalAppsResult(ctx context.Context, req request) (result, *refusal.Refusal) {
	return a.miniAppsResult(ctx, req)
}

// maxExternalReportBytes bounds the main thread's report of its open external apps: 64 tools of
// a few apps, each description at most 300 characters and each schema at most 16,000.
const maxExternalReportBytes = 512 << 10

// externalAppsReport takes the main thread's report of its open external apps, {apps: [{id, live,
// context, tools}]} (public/external-apps.js, report()), and passes it on to the relay in the
// tools frame; the relay checks every part of it again (internal/door/externalapps.Model). An empty list
// of apps is sent as no report at all.
func (a *Engine) externalAppsReport(_ context.Context, req request) (result, *refusal.Refusal) {
	if len(req.Params) > maxExternalReportBytes {
		return result{}, refusal.New(refusal.ToolOutputOverBudget, "the report is %d bytes, over the bound of %d", len(req.Params), maxExternalReportBytes)
	}
	var p externalAppsReportParams
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	var report json.RawMessage
	if len(p.Apps) > 0 {
		report = p.appendJSON(nil)
	}
	a.relay.mu.Lock()
	a.relay.externalReport = report
	a.relay.mu.Unlock()
	a.toolsChanged()
	return result{Value: map[string]any{"apps": len(p.Apps)}}, nil
}

// routesExternal reports whether the relay's call of tool goes to the external apps.
func routesExternal(tool string) bool { return externalapp.Routed(tool) }

// appendJSON writes the report, {"apps": [...]}, as json.Marshal writes it: each app compacted;
// nil, as json.Marshal's error left it, when an app is not one JSON value (DecodeStruct took
// each as one).
func (p externalAppsReportParams) appendJSON(dst []byte) []byte {
	size := 16
	for _, app := range p.Apps {
		size += len(app) + 1
	}
	b := append(grow(dst, size), `{"apps":`...)
	if p.Apps == nil {
		return append(b, "null}"...)
	}
	b = append(b, '[')
	for i, app := range p.Apps {
		if i > 0 {
			b = append(b, ',')
		}
		if !rawjson.Valid(app) {
			return nil
		}
		b = rawjson.AppendCompact(b, app, true)
	}
	return append(b, "]}"...)
}
