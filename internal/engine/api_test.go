package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

func TestAPIAnswers(t *testing.T) {
	t.Parallel()
	a := newEngine(time.Now(), nil)
	tests := []struct {
		name, in string
		ok       bool
		refused  string
	}{
		{"status", `{"type":"call","id":1,"method":"status"}`, true, ""},
		{"status with params", `{"type":"call","id":2,"method":"status","params":{}}`, true, ""},
		{"unknown method", `{"type":"call","id":3,"method":"format-disk"}`, false, "unknown-method"},
		{"no method", `{"type":"call","id":4}`, false, "malformed-call"},
		{"not a call", `{"type":"result","id":5,"method":"status"}`, false, "malformed-call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := a.handle([]byte(tt.in))
			var got struct {
				Type    string          `json:"type"`
				ID      *float64        `json:"id"`
				OK      *bool           `json:"ok"`
				Value   json.RawMessage `json:"value"`
				Refused string          `json:"refused"`
				Why     string          `json:"why"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("answer %q is not JSON: %v", out, err)
			}
			var in struct{ ID float64 }
			json.Unmarshal([]byte(tt.in), &in)
			if got.Type != "result" || got.ID == nil || *got.ID != in.ID || got.OK == nil || *got.OK != tt.ok {
				t.Fatalf("answer = %s", out)
			}
			if tt.ok {
				var st statusValue
				if err := json.Unmarshal(got.Value, &st); err != nil || st.Build != a.build || st.Go == "" {
					t.Fatalf("status value = %s", got.Value)
				}
				return
			}
			if got.Refused != tt.refused || got.Why == "" {
				t.Fatalf("refusal = %s, want %s with a why", out, tt.refused)
			}
		})
	}
}

func TestAPIDropsWhatItCannotAnswer(t *testing.T) {
	t.Parallel()
	a := newEngine(time.Now(), nil)
	for _, in := range []string{``, `null`, `"text"`, `[]`, `{"type":"call","method":"status"}`, `{"type":"call","id":"7","method":"status"}`} {
		if out := a.handle([]byte(in)); out != nil {
			t.Errorf("handle(%q) = %s, want no answer", in, out)
		}
	}
}

func TestReadyMessage(t *testing.T) {
	t.Parallel()
	var got map[string]any
	if err := json.Unmarshal(New(Options{Build: "v1.2.3"}).readyMessage(), &got); err != nil {
		t.Fatal(err)
	}
	if got["type"] != "ready" || got["build"] != "v1.2.3" || len(got) != 2 {
		t.Fatalf("ready = %v", got)
	}
}

// handle answers one message given as JSON the way the worker does (parse, then call); nil when
// the message cannot be answered.
func (a *Engine) handle(in []byte) []byte {
	id, req, r, ok := parse(in)
	if !ok {
		return nil
	}
	if r != nil {
		return encode(refused(id, r))
	}
	ans, _ := a.call(context.Background(), id, req)
	return encode(ans)
}
