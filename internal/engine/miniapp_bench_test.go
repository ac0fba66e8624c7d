package engine

import (
	"context"
	"encoding/json"
	"testing"
)

// echoPort answers every call_tool at once, as an app's SDK would: the engine's own cost of
// a mini-app call, without the browser's hops.
type echoPort struct{ receive func([]byte) }

func (p *echoPort) Post(msg []byte, _ string, _ bool) error {
	var m struct {
		Type   string `json:"type"`
		CallID string `json:"callId"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return err
	}
	if m.Type == "call_tool" {
		ans, _ := json.Marshal(map[string]any{"type": "tool_result", "callId": m.CallID, "ok": true, "result": `{"home":{"name":"Home","score":1},"away":{"name":"Away","score":0}}`})
		go p.receive(ans)
	}
	return nil
}

func (p *echoPort) Close() {}

func (p *echoPort) Refused() PortRefusals { return PortRefusals{} }

// BenchmarkEngineCallsAMiniAppTool is one miniapps.call through the engine: the page's request
// decoded, the arguments validated against the tool's schema, the call sent on the app's port,
// the answer read and checked, and the page's answer encoded.
func BenchmarkEngineCallsAMiniAppTool(b *testing.B) {
	a, _ := memoryAPI(b)
	a.openApp("app_scoreboard")
	mustDo(b, a, "miniapps.register", `{"appId":"app_scoreboard","tool":{"name":"add_points","description":"Add points","parameters":{"type":"object","properties":{"team":{"type":"string","enum":["home","away"]},"points":{"type":"integer","minimum":-100,"maximum":100}},"required":["team","points"],"additionalProperties":false}}}`, nil)
	if r := a.apps.frames.bind("app_scoreboard", 1, func(receive func([]byte), _ func(string, int, int)) (AppPort, error) {
		return &echoPort{receive: receive}, nil
	}); r != nil {
		b.Fatal(r)
	}
	req := request{Method: "miniapps.call", Params: json.RawMessage(`{"appId":"app_scoreboard","tool":"add_points","args":{"team":"home","points":1}}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ans, _ := a.call(ctx, 1, req)
		if !ans.OK {
			b.Fatalf("refused: %s %s", ans.Refused, ans.Why)
		}
		_ = encode(ans)
	}
}
