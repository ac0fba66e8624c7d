// Package pagerules is the one source of the limits and name rules the page's JavaScript shares
// with the Go code: it renders them, from the Go constants, as the ES module public/rules.js,
// which the page's modules import instead of keeping copies.
//
// After changing one of the constants it names, run
//
//	go generate ./internal/pagerules
//
// and commit public/rules.js with the change; TestRulesModuleIsCurrent fails while the committed
// module is stale. The name functions of public/names.js are held to the Go ones by
// TestNamesAgreeWithGo, which runs them in Node on the same inputs.
package pagerules

//go:generate go run ./gen -o ../../public/rules.js

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/voicebox-go/voicebox/internal/shared/approval"
	"github.com/voicebox-go/voicebox/internal/shared/commands"
	"github.com/voicebox-go/voicebox/internal/shared/externalapp"
	"github.com/voicebox-go/voicebox/internal/shared/liveaudio"
	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/internal/shared/toolschema"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Rule is one value of the module: its JavaScript name, the Go it comes from, what it means,
// and the value (JSON-encodable, or a Pattern).
type Rule struct {
	Name  string
	From  string
	Doc   string
	Value any
}

// Pattern is a regular expression the module exports as a RegExp literal. It must mean the same
// in Go's regexp and in JavaScript (no flags, ASCII classes): the parity test holds it to Go.
type Pattern string

// ToolNamePattern is what a tool name is: 1 to miniapp.MaxToolNameLength of A-Z, a-z, 0-9, _
// and - (miniapp.ValidToolName).
var ToolNamePattern = Pattern(fmt.Sprintf("^[A-Za-z0-9_-]{1,%d}$", miniapp.MaxToolNameLength))

// WebMCPToolNamePattern is the name a sandboxed mini-app registers a tool under, the WebMCP
// draft's rule: 1 to miniapp.MaxWebMCPToolNameLength of A-Z, a-z, 0-9, _, - and .
// (miniapp.ValidWebMCPToolName).
var WebMCPToolNamePattern = Pattern(fmt.Sprintf("^[A-Za-z0-9_.-]{1,%d}$", miniapp.MaxWebMCPToolNameLength))

// Rules returns the module's values in the order it exports them.
func Rules() []Rule {
	var changing []string
	for _, t := range commands.Builtins().Tools() {
		if t.ChangesFiles {
			changing = append(changing, t.Name)
		}
	}
	return []Rule{
		{"MAX_TOOLS_PER_APP", "internal/shared/miniapp.MaxToolsPerApp", "the tools one sandboxed mini-app may have registered at a time", miniapp.MaxToolsPerApp},
		{"MAX_TOOL_NAME_LENGTH", "internal/shared/miniapp.MaxToolNameLength", "the longest tool name", miniapp.MaxToolNameLength},
		{"TOOL_NAME", "internal/shared/miniapp.ValidToolName", "a tool name: 1 to MAX_TOOL_NAME_LENGTH of A-Z, a-z, 0-9, _ and -", ToolNamePattern},
		{"WEBMCP_TOOL_NAME", "internal/shared/miniapp.ValidWebMCPToolName", "the name a sandboxed mini-app registers a tool under (the WebMCP rule): 1 to 128 of A-Z, a-z, 0-9, _, - and .", WebMCPToolNamePattern},
		{"MAX_DECLARATION_BYTES", "internal/shared/miniapp.MaxDeclarationBytes", "the largest tool declaration, as UTF-8 JSON", miniapp.MaxDeclarationBytes},
		{"MAX_OUTPUT_BYTES", "internal/shared/miniapp.MaxOutputBytes", "the largest result of one mini-app call, as UTF-8 JSON", miniapp.MaxOutputBytes},
		{"MAX_ARGUMENT_BYTES", "internal/shared/toolschema.MaxArgumentBytes", "the largest arguments of one call, as UTF-8 JSON; the SDK holds executeTool's input to it too", toolschema.MaxArgumentBytes},
		{"TOOL_TIMEOUT_MS", "internal/shared/miniapp.ToolTimeout", "how long a mini-app may take to answer one call", miniapp.ToolTimeout.Milliseconds()},
		{"MESSAGE_BUDGET", "internal/shared/miniapp.MessageBudget", "how many messages one open app may send within MESSAGE_WINDOW_MS (answers to its calls are free); the first over it stops the app", miniapp.MessageBudget},
		{"MESSAGE_WINDOW_MS", "internal/shared/miniapp.MessageBudgetWindow", "the window MESSAGE_BUDGET and MESSAGE_BYTE_BUDGET count in", miniapp.MessageBudgetWindow.Milliseconds()},
		{"MESSAGE_BYTE_BUDGET", "internal/shared/miniapp.MessageByteBudget", "how many bytes one open app may send within MESSAGE_WINDOW_MS (answers to its calls are free), each message sized without serialising it (message-budget.js); the first over it stops the app", miniapp.MessageByteBudget},
		{"MAX_SIZED_VALUES", "internal/shared/miniapp.MaxSizedValues", "the values the estimate of one message's bytes visits; a message with more is charged all of MESSAGE_BYTE_BUDGET", miniapp.MaxSizedValues},
		{"MESSAGE_BUDGET_EXCEEDED", "shared/refusal.MessageBudgetExceeded", "the rule an app over its message budget is stopped with", string(refusal.MessageBudgetExceeded)},
		{"MAX_PORT_REFUSAL_SAMPLES", "internal/shared/miniapp.MaxPortRefusalSamples", "the refused messages of an app's port to the worker kept to show; the rest are counted by rule", miniapp.MaxPortRefusalSamples},
		{"MALFORMED_ANSWER", "shared/refusal.MalformedAnswer", "the rule a message on an app's port to the worker that is not an answer's shape is refused with", string(refusal.MalformedAnswer)},
		{"MINI_APP_UNSOLICITED_ANSWER", "shared/refusal.MiniAppUnsolicitedAnswer", "the rule an answer on an app's port to the worker to no call waiting there is refused with", string(refusal.MiniAppUnsolicitedAnswer)},
		{"BRIDGE_HANDSHAKE_MS", "internal/shared/miniapp.BridgeHandshakeTimeout", "how long an app's bridge frame has to say it is ready; a per-app host silent by then falls back to the shared app host", miniapp.BridgeHandshakeTimeout.Milliseconds()},
		{"MINI_APP_FRAME_TIMEOUT", "shared/refusal.MiniAppFrameTimeout", "the rule an app whose frame never loaded (on the shared app host too) is stopped with", string(refusal.MiniAppFrameTimeout)},
		{"SANDBOX_NO_NETWORK", "shared/refusal.SandboxNoNetwork", "the rule a sandboxed app that reaches for WebRTC is refused with", string(refusal.SandboxNoNetwork)},
		{"EXTERNAL_MAX_TOOLS", "internal/shared/externalapp.MaxTools", "the external app's tools that are offered; the rest are dropped", externalapp.MaxTools},
		{"EXTERNAL_MAX_DESCRIPTION_CHARS", "internal/shared/externalapp.MaxToolDescriptionChars", "an external app tool's description, in code points", externalapp.MaxToolDescriptionChars},
		{"EXTERNAL_MAX_TITLE_CHARS", "internal/shared/externalapp.MaxTitleChars", "an external app's context title, in code points", externalapp.MaxTitleChars},
		{"EXTERNAL_MAX_SUMMARY_CHARS", "internal/shared/externalapp.MaxSummaryChars", "an external app's context summary, in code points", externalapp.MaxSummaryChars},
		{"EXTERNAL_MAX_PAYLOAD_CHARS", "internal/shared/externalapp.MaxContextPayloadChars", "the JSON of a context's data or selection; a larger one is withheld", externalapp.MaxContextPayloadChars},
		{"EXTERNAL_MAX_NOTE_SELECTION_CHARS", "internal/shared/externalapp.MaxNoteSelectionChars", "the selection the per-turn note carries", externalapp.MaxNoteSelectionChars},
		{"MAX_MODEL_NAME", "internal/shared/externalapp.MaxModelName", "the longest tool name the vendors take", externalapp.MaxModelName},
		{"EXTERNAL_MODEL_PREFIX", "internal/shared/externalapp.ModelPrefix", "what starts every external app tool's model-facing name", externalapp.ModelPrefix},
		{"CONTEXT_TOOL", "internal/shared/externalapp.ContextTool", "the tool that reads what an external app shows", externalapp.ContextTool},
		{"APPROVAL_TIMEOUT_MS", "internal/shared/approval.Timeout", "how long every request for the person's approval waits", approval.Timeout.Milliseconds()},
		{"OUTCOME_GRACE_MS", "internal/shared/approval.OutcomeGrace", "how long past an approval's deadline the page still waits for the outcome of a turn that waited for it", approval.OutcomeGrace.Milliseconds()},
		{"MAX_LIVE_RUNS", "internal/shared/approval.MaxLiveRuns", "the most relay runs an event stream lists as the fleet's live ones; the page takes no longer list", approval.MaxLiveRuns},
		{"EXTERNAL_CALL_TIMEOUT_MS", "internal/shared/externalapp.CallTimeout", "how long an external app has to answer a tool call once it may run", externalapp.CallTimeout.Milliseconds()},
		{"FILE_CHANGING_TOOLS", "internal/shared/commands Tool.ChangesFiles", "the built-in tools whose success changes the workspace's files", changing},
		{"MAX_AUDIO_FRAME_BYTES", "internal/shared/liveaudio.MaxFrameBytes", "the largest microphone frame of PCM16 the live worker sends on /live; the relay refuses a larger one", liveaudio.MaxFrameBytes},
		{"LIVE_AUDIO_FRAME_INVALID", "shared/refusal.LiveAudioFrameInvalid", "the rule a microphone frame that is not PCM16, or is over MAX_AUDIO_FRAME_BYTES, is refused with", string(refusal.LiveAudioFrameInvalid)},
		{"LIVE_MESSAGE_INVALID", "shared/refusal.LiveMessageInvalid", "the rule a message of no known shape sent to the live worker is refused with", string(refusal.LiveMessageInvalid)},
	}
}

// Module renders the rules as the text of public/rules.js.
func Module() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by go generate ./internal/pagerules; DO NOT EDIT.\n")
	b.WriteString("// @ts-check\n")
	b.WriteString("// The limits and name rules the page shares with the Go code, each from the Go named beside it\n")
	b.WriteString("// (see internal/pagerules).\n")
	for _, r := range Rules() {
		var lit string
		switch v := r.Value.(type) {
		case Pattern:
			lit = "/" + string(v) + "/"
		case []string:
			j, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			lit = "Object.freeze(" + string(j) + ")"
		default:
			j, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("pagerules: %s: %w", r.Name, err)
			}
			lit = string(j)
		}
		fmt.Fprintf(&b, "\n/** %s is %s (%s). */\nexport const %s = %s;\n", r.Name, r.Doc, r.From, r.Name, lit)
	}
	return b.Bytes(), nil
}
