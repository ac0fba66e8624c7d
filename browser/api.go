package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"time"

	"voicebox/shared/refusal"
)

// build is the version string, set at link time by build.sh (-X main.build=...).
var build = "dev"

var goVersion = runtime.Version()

// message is every shape the worker API carries, in either direction.
type message struct {
	Type    string          `json:"type"`
	ID      *float64        `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	OK      *bool           `json:"ok,omitempty"`
	Value   any             `json:"value,omitempty"`
	Refused refusal.Rule    `json:"refused,omitempty"`
	Why     string          `json:"why,omitempty"`
	Build   string          `json:"build,omitempty"`
}

// api answers the page's calls. It is portable so that its rules are tested natively and in the
// browser alike; the js side only moves JSON text across postMessage.
type api struct {
	started time.Time
	methods map[string]func(params json.RawMessage) (any, *refusal.Refusal)
}

func newAPI(now time.Time) *api {
	a := &api{started: now}
	a.methods = map[string]func(json.RawMessage) (any, *refusal.Refusal){
		"status": a.status,
	}
	return a
}

// readyMessage is what the worker says once Go is running.
func readyMessage() []byte {
	b, _ := json.Marshal(message{Type: "ready", Build: build})
	return b
}

// handle answers one message from the page. It returns nil when the message cannot be answered
// (it has no id to answer to).
func (a *api) handle(in []byte) []byte {
	var m message
	dec := json.NewDecoder(bytes.NewReader(in))
	if err := dec.Decode(&m); err != nil || m.ID == nil {
		return nil
	}
	id := *m.ID
	if m.Type != "call" || m.Method == "" {
		return answer(id, nil, refusal.New(refusal.MalformedCall, "a call to the worker needs type \"call\" and a method"))
	}
	method, ok := a.methods[m.Method]
	if !ok {
		return answer(id, nil, refusal.New(refusal.UnknownMethod, "the worker has no method %q", m.Method))
	}
	value, r := method(m.Params)
	return answer(id, value, r)
}

func answer(id float64, value any, r *refusal.Refusal) []byte {
	ok := r == nil
	m := message{Type: "result", ID: &id, OK: &ok}
	if ok {
		m.Value = value
	} else {
		m.Refused, m.Why = r.Rule, r.Why
	}
	b, err := json.Marshal(m)
	if err != nil {
		return answer(id, nil, refusal.New(refusal.InternalError, "the worker could not encode its answer"))
	}
	return b
}

type statusValue struct {
	Build    string `json:"build"`
	Go       string `json:"go"`
	UptimeMs int64  `json:"uptimeMs"`
}

func (a *api) status(json.RawMessage) (any, *refusal.Refusal) {
	return statusValue{Build: build, Go: goVersion, UptimeMs: time.Since(a.started).Milliseconds()}, nil
}
