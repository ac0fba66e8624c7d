package channel

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

func TestAdmittedFrameRoundTrip(t *testing.T) {
	t.Parallel()
	set := map[string]AdmittedEntry{"notes-reader": {Bounds: json.RawMessage(`{}`), Primitives: []string{"read-file"}}}
	frame := MarshalAdmitted(set)
	if ControlType(frame) != AdmittedType {
		t.Fatalf("ControlType(%s) = %q", frame, ControlType(frame))
	}
	got, err := ParseAdmitted(frame)
	if err != nil || len(got) != 1 || string(got["notes-reader"].Bounds) != `{}` || got["notes-reader"].Primitives[0] != "read-file" {
		t.Fatalf("ParseAdmitted(%s) = %+v, %v", frame, got, err)
	}
	if empty, err := ParseAdmitted(MarshalAdmitted(nil)); err != nil || len(empty) != 0 {
		t.Fatalf("the empty set: %+v, %v", empty, err)
	}
	for _, bad := range []string{
		`{"type":"admitted"}`,
		`{"type":"admitted","extensions":{"a":{"bounds":{},"primitives":[]}},"grant":"all"}`,
		`{"type":"admitted","extensions":{"a":{"bounds":{},"primitives":[],"tools":["x"]}}}`,
		`{"type":"admitted","extensions":{"a":{"bounds":[],"primitives":[]}}}`,
		`{"type":"admitted","extensions":{"a":{"primitives":[]}}}`,
		`{"type":"admitted","extensions":{"a":{"bounds":{},"primitives":[1]}}}`,
		`{"type":"admitted","extensions":{"":{"bounds":{},"primitives":[]}}}`,
		`{"type":"replaced","extensions":{}}`,
		`{"type":"admitted","extensions":{}} {}`,
		`{"type":"admitted","extensions":{}}]`, // dec.More() once let a closing bracket through
		`{"type":"admitted","extensions":{}}}`,
		`{"type":"admitted","extensions":{"a":{"bounds":{"x":"` + strings.Repeat("a", wire.MaxFrameBytes) + `"},"primitives":[]}}}`,
	} {
		if _, err := ParseAdmitted([]byte(bad)); err == nil {
			t.Errorf("ParseAdmitted accepted %.120s", bad)
		}
	}
	for frame, want := range map[string]string{
		`{"type":"replaced","why":"w"}`: "replaced",
		`{"v":1,"type":"admitted"}`:     "",
		`{"v":1,"callId":"c"}`:          "",
		`{"v":null,"type":"admitted"}`:  "",
		`{"v":`:                         "",
		`{"v" :1,"type":"x"}`:           "",
		`{"V":1,"type":"x"}`:            "",
		`{"type":"x","v":1}`:            "",
		`[1]`:                           "",
		`{"type":7}`:                    "",
	} {
		if got := ControlType([]byte(frame)); got != want {
			t.Errorf("ControlType(%s) = %q, want %q", frame, got, want)
		}
	}
}

// TestDoorVerifiesAgainstTheLiveSet: the door's answers follow the set the relay sent last.
func TestDoorVerifiesAgainstTheLiveSet(t *testing.T) {
	t.Parallel()
	live := NewLiveAdmitted(wire.AdmittedMap{"voicebox.builtin": json.RawMessage(`{}`)})
	var ran []string
	var mu sync.Mutex
	door := NewDoor(ExecutorFunc(func(_ context.Context, c wire.Call) (json.RawMessage, error) {
		mu.Lock()
		ran = append(ran, c.DescriptorID+":"+c.Tool)
		mu.Unlock()
		return json.RawMessage(`{}`), nil
	}), live, DoorOptions{})
	ask := func(descriptor, tool, bounds string) refusal.Rule {
		t.Helper()
		frame := `{"v":1,"callId":"c","tool":"` + tool + `","descriptorId":"` + descriptor + `","args":{},"boundsEcho":` + bounds + `}`
		a, ok := door.Handle(context.Background(), []byte(frame))
		if !ok {
			t.Fatalf("no answer to %s", frame)
		}
		return a.Refused
	}
	notes := map[string]AdmittedEntry{"notes-reader": {Bounds: json.RawMessage(`{"maxBytes":10}`), Primitives: []string{"read-file", "list-files"}}}
	for _, step := range []struct {
		name                     string
		set                      map[string]AdmittedEntry
		descriptor, tool, bounds string
		want                     refusal.Rule
	}{
		{"before any frame", nil, "notes-reader", "read-file", `{"maxBytes":10}`, refusal.UnattributedCall},
		{"the built-in always", nil, "voicebox.builtin", "write-file", `{}`, ""},
		{"admitted", notes, "notes-reader", "read-file", `{"maxBytes":10}`, ""},
		{"bounds reordered as JSON", notes, "notes-reader", "list-files", `{ "maxBytes": 10.0 }`, ""},
		{"bounds changed", notes, "notes-reader", "read-file", `{"maxBytes":11}`, refusal.BoundsMismatch},
		{"a primitive it was not admitted with", notes, "notes-reader", "write-file", `{"maxBytes":10}`, refusal.UnderDeclared},
		{"a mini-app tool", notes, "notes-reader", "app_12345678__add", `{"maxBytes":10}`, refusal.UnderDeclared},
		{"revoked", map[string]AdmittedEntry{}, "notes-reader", "read-file", `{"maxBytes":10}`, refusal.UnattributedCall},
	} {
		if step.set != nil {
			live.Replace(step.set)
		}
		if got := ask(step.descriptor, step.tool, step.bounds); got != step.want {
			t.Errorf("%s: refused %q, want %q", step.name, got, step.want)
		}
	}
	if strings.Join(ran, " ") != "voicebox.builtin:write-file notes-reader:read-file notes-reader:list-files" {
		t.Fatalf("ran %v", ran)
	}
}

// TestLiveAdmittedHammer replaces the set while calls verify against it.
func TestLiveAdmittedHammer(t *testing.T) {
	t.Parallel()
	live := NewLiveAdmitted(nil)
	set := map[string]AdmittedEntry{"a": {Bounds: json.RawMessage(`{}`), Primitives: []string{"now"}}}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 2000 {
				if i == 0 {
					if j%2 == 0 {
						live.Replace(set)
					} else {
						live.Replace(nil)
					}
					continue
				}
				if b, ok := live.Bounds("a"); ok && string(b) != `{}` {
					t.Errorf("bounds %s", b)
					return
				}
				live.Allows("a", "now")
			}
		})
	}
	wg.Wait()
}
