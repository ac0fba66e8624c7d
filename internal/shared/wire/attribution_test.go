package wire

import (
	"encoding/json"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	admitted := AdmittedMap{
		"notes":  json.RawMessage(`{"maxBytes":4096,"paths":["notes/","inbox/"],"net":{"hosts":["a.example"],"maxRequests":3}}`),
		"clock":  json.RawMessage(`{}`),
		"spaced": json.RawMessage(" {\n\"limit\" : 10 } "),
	}
	tests := []struct {
		name       string
		descriptor string
		echo       string
		rule       refusal.Rule // "" when the call is attributed
	}{
		{"same bytes", "notes", `{"maxBytes":4096,"paths":["notes/","inbox/"],"net":{"hosts":["a.example"],"maxRequests":3}}`, ""},
		{"keys reordered", "notes", `{"net":{"maxRequests":3,"hosts":["a.example"]},"paths":["notes/","inbox/"],"maxBytes":4096}`, ""},
		{"number spelled otherwise", "notes", `{"maxBytes":4.096e3,"paths":["notes/","inbox/"],"net":{"hosts":["a.example"],"maxRequests":3.0}}`, ""},
		{"escaped string", "notes", `{"maxBytes":4096,"paths":["notes\/","inbox/"],"net":{"hosts":["a.ex\u0061mple"],"maxRequests":3}}`, ""},
		{"admitted has whitespace", "spaced", `{"limit":10}`, ""},
		{"empty bounds", "clock", `{}`, ""},

		{"not admitted", "shell", `{}`, refusal.UnattributedCall},
		{"descriptor case differs", "Notes", `{"maxBytes":4096}`, refusal.UnattributedCall},
		{"bound raised", "notes", `{"maxBytes":8192,"paths":["notes/","inbox/"],"net":{"hosts":["a.example"],"maxRequests":3}}`, refusal.BoundsMismatch},
		{"bound raised by one past float precision", "spaced", `{"limit":10.000000000000000000001}`, refusal.BoundsMismatch},
		{"host added", "notes", `{"maxBytes":4096,"paths":["notes/","inbox/"],"net":{"hosts":["a.example","evil.example"],"maxRequests":3}}`, refusal.BoundsMismatch},
		{"array reordered", "notes", `{"maxBytes":4096,"paths":["inbox/","notes/"],"net":{"hosts":["a.example"],"maxRequests":3}}`, refusal.BoundsMismatch},
		{"bound dropped", "notes", `{"paths":["notes/","inbox/"],"net":{"hosts":["a.example"],"maxRequests":3}}`, refusal.BoundsMismatch},
		{"bound added", "clock", `{"unbounded":true}`, refusal.BoundsMismatch},
		{"type changed", "spaced", `{"limit":"10"}`, refusal.BoundsMismatch},
		{"null for value", "spaced", `{"limit":null}`, refusal.BoundsMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Call{CallID: "c", Tool: "t", DescriptorID: tt.descriptor, Args: json.RawMessage(`{}`), BoundsEcho: json.RawMessage(tt.echo)}
			r := Verify(c, admitted)
			if tt.rule == "" {
				if r != nil {
					t.Fatalf("Verify refused an attributed call: %v", r)
				}
				return
			}
			if r == nil || r.Rule != tt.rule || r.Why == "" {
				t.Fatalf("Verify = %v, want %s", r, tt.rule)
			}
		})
	}
	if r := Verify(Call{DescriptorID: "notes"}, nil); r == nil || r.Rule != refusal.UnattributedCall {
		t.Fatalf("Verify with no admitted set = %v", r)
	}
}

func TestSameNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		same bool
	}{
		{"1", "1", true},
		{"1", "1.0", true},
		{"100", "1e2", true},
		{"100", "1E+2", true},
		{"0.01", "1e-2", true},
		{"0", "-0", true},
		{"0", "0.000e5", true},
		{"-5", "-5.00", true},
		{"9007199254740993", "9007199254740992", false},
		{"1", "-1", false},
		{"1", "10", false},
		{"1e1000000000000000000", "1e1000000000000000001", false},
		{"1e1000000000000000000", "1e1000000000000000000", true},
	}
	for _, tt := range tests {
		if got := sameNumber(tt.a, tt.b); got != tt.same {
			t.Errorf("sameNumber(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.same)
		}
		if got := sameNumber(tt.b, tt.a); got != tt.same {
			t.Errorf("sameNumber(%s, %s) = %v, want %v", tt.b, tt.a, got, tt.same)
		}
	}
}

func TestSameJSONRefusesInvalid(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]string{{`{`, `{`}, {`{} {}`, `{}`}, {`{}x`, `{}x`}, {``, ``}} {
		if SameJSON([]byte(pair[0]), []byte(pair[1])) {
			t.Errorf("SameJSON(%q, %q) = true", pair[0], pair[1])
		}
	}
}
