// Package tool is what every part that offers tools to a model shares: the Declaration a model
// is offered, the Catalogue a model path calls, and ModelName, the one rule that fits a tool's
// name into what the vendors accept. It imports nothing of the project, so a live provider, the
// assistant, the mini-app registry and the external apps all speak it without importing each
// other.
//
// # Names the model sees
//
// A tool is offered under a scope, a prefix that says who offers it (the built-ins have none; a
// sandboxed mini-app's tools have app_HHHHHHHH__, see internal/shared/miniapp; an external app's have
// app_x_ID__, see internal/shared/externalapp). The name is scope+name when that is at most MaxModelName
// characters; otherwise name is cut so that the whole, with "_" and Digest(name) after the cut
// name, is exactly MaxModelName. Two names cut to the same prefix stay distinct by their digest.
//
// # Wasm
//
// The package is portable Go and behaves the same under GOOS=js GOARCH=wasm.
package tool

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"github.com/voicebox-go/voicebox/internal/shared/sha"
)

// MaxModelName is the longest tool name the vendors take (of a-z, A-Z, 0-9, _ and -).
const MaxModelName = 64

// DigestLength is the length of Digest's answer: 8 hex digits.
const DigestLength = 8

// Declaration is a tool as a model is offered it: its model-facing name, what it does, and the
// JSON Schema of its arguments (the subset of internal/shared/toolschema).
type Declaration struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Catalogue is the set of tools one model path calls: what the model is offered, the
// instruction that goes with it, one answer per call, and a signal when the set changes.
// internal/core/assistant's Catalogue is one; internal/door/externalapps' Model wraps one and is one too.
type Catalogue interface {
	// Declarations returns every tool the model is offered now.
	Declarations() []Declaration
	// Instruction returns the system instruction for the current tool set.
	Instruction() string
	// Call runs one tool and returns exactly one answer, never blocking past ctx: the
	// observation JSON object, or {"refused": RULE, "why": SENTENCE}.
	Call(ctx context.Context, name string, args json.RawMessage) json.RawMessage
	// OnChange runs fn whenever the tool set changes, until cancel is called.
	OnChange(fn func()) (cancel func())
}

// ModelName is name as the model is offered it under scope (see the package doc): scope+name,
// or, when that is over MaxModelName, the cut name followed by "_" and Digest(name). A scope
// longer than MaxModelName-DigestLength-1 leaves no room for the name, which is then only its
// digest; callers keep their scopes short.
func ModelName(scope, name string) string {
	if len(scope)+len(name) <= MaxModelName {
		return scope + name
	}
	keep := max(MaxModelName-len(scope)-DigestLength-1, 0)
	return scope + name[:min(keep, len(name))] + "_" + Digest(name)
}

// Digest is the first DigestLength hex digits of SHA-256(s): what a cut name carries so that it
// stays distinct, and what a scope uses to name an app in few characters.
func Digest(s string) string {
	h := sha.Sum256([]byte(s))
	return hex.EncodeToString(h[:DigestLength/2])
}
