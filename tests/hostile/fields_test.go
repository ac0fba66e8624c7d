//go:build !js

package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// The field sweeps: every field of every descriptor the project reads (descriptorDoors, so a
// field added tomorrow is swept too) is given a value of the wrong JSON type, and every object
// of it a field nobody declared. The reader refuses each by name, stages or keeps nothing, and
// the next honest request is served.

// wrongValue is a JSON value of another type than a field of typ takes.
func wrongValue(typ reflect.Type) any {
	switch {
	case typ == reflect.TypeFor[json.RawMessage]():
		return "a string where an object belongs"
	case typ.Kind() == reflect.String:
		return 12345
	case typ.Kind() == reflect.Int, typ.Kind() == reflect.Int64, typ.Kind() == reflect.Float64:
		return "12"
	case typ.Kind() == reflect.Bool:
		return "yes"
	case typ.Kind() == reflect.Slice:
		return map[string]any{"not": "a list"}
	default: // a struct, through a pointer or not
		return []any{"not", "an", "object"}
	}
}

// fieldTypes maps each JSON path of typ (as jsonFields names them) to its Go type.
func fieldTypes(typ reflect.Type, prefix string, out map[string]reflect.Type) {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		if typ.Kind() == reflect.Slice {
			prefix = strings.TrimSuffix(prefix, ".") + "[]."
		}
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct || typ == reflect.TypeFor[json.RawMessage]() {
		return
	}
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[prefix+name] = f.Type
		fieldTypes(f.Type, prefix+name+".", out)
	}
}

// setPath sets the field at path (dots, and "[]" for the first element of a list) in doc to v,
// making the objects and lists on the way.
func setPath(doc map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	cur := doc
	for _, p := range parts[:len(parts)-1] {
		name, list := strings.CutSuffix(p, "[]")
		if list {
			l, _ := cur[name].([]any)
			if len(l) == 0 {
				l = []any{map[string]any{}}
			}
			next, ok := l[0].(map[string]any)
			if !ok {
				next = map[string]any{}
				l[0] = next
			}
			cur[name] = l
			cur = next
			continue
		}
		next, ok := cur[name].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[name] = next
		}
		cur = next
	}
	cur[strings.TrimSuffix(parts[len(parts)-1], "[]")] = v
}

// sweepDescriptor is an extension descriptor the gate would admit, which a sweep then spoils.
func sweepDescriptor() map[string]any {
	var d map[string]any
	json.Unmarshal([]byte(`{"id":"swept","name":"Swept","capabilities":["network"],"bounds":{"hosts":["example.com"],"maxRequests":10},"tools":[{"name":"t","primitive":"now"}]}`), &d)
	return d
}

// TestEveryDescriptorFieldRefusesWrongValues: an extension descriptor with each of its fields of
// the wrong type, or with a field nobody declared beside it, is refused by name at the sideload
// door and never staged; the honest descriptor is then staged.
func TestEveryDescriptorFieldRefusesWrongValues(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	types := map[string]reflect.Type{}
	fieldTypes(reflect.TypeFor[extensions.Descriptor](), "", types)
	n := 0
	for _, door := range descriptorDoors(t) {
		path, ok := strings.CutPrefix(door, "descriptor extension ")
		if !ok {
			continue
		}
		typ, ok := types[path]
		if !ok {
			t.Fatalf("no type for %s", door)
		}
		n++
		spoiled := map[string]string{}
		d := sweepDescriptor()
		setPath(d, path, wrongValue(typ))
		b, _ := json.Marshal(d)
		spoiled["of the wrong type"] = string(b)
		if typ.Kind() == reflect.Struct || typ.Kind() == reflect.Pointer || (typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.Struct) {
			d := sweepDescriptor()
			setPath(d, path+wrongList(typ)+".surprise", true)
			b, _ := json.Marshal(d)
			spoiled["with an undeclared field inside"] = string(b)
		}
		for what, body := range spoiled {
			r := postJSON(t, relay, "/api/extensions/sideload", json.RawMessage(body), true)
			if r.status < 400 || r.status >= 500 || r.m["refused"] == nil || r.m["refused"] == "internal-error" || r.m["why"] == "" {
				t.Errorf("%s %s: answered %d %s", door, what, r.status, r.body)
			}
		}
	}
	if n < 10 {
		t.Fatalf("swept %d fields of the extension descriptor; it has more", n)
	}
	d := sweepDescriptor()
	d["surprise"] = 1
	b, _ := json.Marshal(d)
	if r := postJSON(t, relay, "/api/extensions/sideload", json.RawMessage(b), true); !r.refused(http.StatusBadRequest, "bad-descriptor") {
		t.Errorf("an undeclared top-level field answered %d %s", r.status, r.body)
	}
	if r := send(t, nil, http.MethodGet, relay.URL+"/api/extensions", map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}, ""); strings.Contains(r.body, `"swept"`) {
		t.Fatalf("a spoiled descriptor was staged: %s", r.body)
	}
	b, _ = json.Marshal(sweepDescriptor())
	if r := postJSON(t, relay, "/api/extensions/sideload", json.RawMessage(b), true); r.status != http.StatusOK {
		t.Fatalf("the honest descriptor answered %d %s", r.status, r.body)
	}
	served(t, relay)
}

// wrongList is "[]" when a field of typ is a list of objects, whose first element a path enters.
func wrongList(typ reflect.Type) string {
	if typ.Kind() == reflect.Slice {
		return "[]"
	}
	return ""
}

// TestEveryRegistryFieldRefusesWrongValues: an external app registry (MINI_APPS) whose entry has a
// field of the wrong type, or one nobody declared, stops the relay at start, naming the entry and
// the field; nothing is served with it. The honest registry starts.
func TestEveryRegistryFieldRefusesWrongValues(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(harness.RepoRoot(), "bin", "relay")
	honest := func() map[string]any {
		return map[string]any{"name": "Notes", "url": "http://127.0.0.1:9/app", "origin": "http://127.0.0.1:9", "capabilities": []any{}}
	}
	start := func(t *testing.T, entry map[string]any) (string, error) {
		b, _ := json.Marshal(map[string]any{"notes": entry})
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "serve", "--public", filepath.Join(harness.RepoRoot(), "public"))
		cmd.Env = append(os.Environ(), "PORT=0", "VOICEBOX_STATE_DIR="+t.TempDir(), "MINI_APPS="+string(b))
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// A relay that starts prints its address and serves until stopped: wait for either.
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		for {
			select {
			case err := <-done:
				return out.String(), err
			default:
			}
			if strings.Contains(out.String(), "voicebox on http://") {
				cmd.Process.Kill()
				<-done
				return out.String(), nil
			}
			if ctx.Err() != nil {
				cmd.Process.Kill()
				<-done
				t.Fatalf("the relay neither started nor stopped within %v: %s", patience, out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	n := 0
	for _, door := range descriptorDoors(t) {
		field, ok := strings.CutPrefix(door, "descriptor external app registry entry ")
		if !ok {
			continue
		}
		n++
		for what, v := range map[string]any{"of the wrong type": wrongValue(reflect.TypeFor[string]()), "a list of the wrong type": []any{1}} {
			if field == "capabilities" && what == "of the wrong type" {
				v = "auth"
			}
			e := honest()
			e[field] = v
			out, err := start(t, e)
			if err == nil || !strings.Contains(out, `"notes"`) || !strings.Contains(out, field) {
				t.Errorf("%s %s: the relay said %q and ended %v; want it to stop naming the entry and %s", door, what, out, err, field)
			}
		}
	}
	if n < 5 {
		t.Fatalf("swept %d registry fields; there are more", n)
	}
	e := honest()
	e["surprise"] = true
	if out, err := start(t, e); err == nil || !strings.Contains(out, "surprise") {
		t.Errorf("an undeclared field: the relay said %q and ended %v", out, err)
	}
	if out, err := start(t, honest()); err != nil {
		t.Fatalf("the honest registry did not start: %v %s", err, out)
	}
}

// TestEveryShelfManifestFieldRefusesWrongValues: a WASM shelf manifest with each field of the
// wrong type, or one nobody declared, is refused by name (the listing's shelf, and a call of
// its tool, carry the rule); put back, the shelf's tool answers.
func TestEveryShelfManifestFieldRefusesWrongValues(t *testing.T) {
	t.Parallel()
	dir := hostileShelf(t)
	relay := harness.StartRelay(t, "VOICEBOX_WASM_SHELF_DIR="+dir)
	good, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	hashServed(t, relay)
	n := 0
	for _, door := range append(descriptorDoors(t), "descriptor shelf manifest surprise", "descriptor shelf manifest tools[].surprise") {
		path, ok := strings.CutPrefix(door, "descriptor shelf manifest ")
		if !ok {
			continue
		}
		n++
		t.Run(path, func(t *testing.T) {
			var m map[string]any
			json.Unmarshal(good, &m)
			v := any(12345) // every field of the manifest is a string, but tools (a list)
			if path == "tools" {
				v = map[string]any{"not": "a list"}
			}
			setPath(m, path, v)
			b, _ := json.Marshal(m)
			os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o600)
			r := callShelf(t, relay, "hash", `{"input":"abc"}`)
			if rule, _ := r.m["refused"].(string); r.status >= 500 || r.m["ok"] == true || rule == "" || rule == "internal-error" || r.m["why"] == "" {
				t.Errorf("a call of the shelf's tool answered %d %s", r.status, r.body)
			}
			os.WriteFile(filepath.Join(dir, "manifest.json"), good, 0o600)
			hashServed(t, relay)
		})
	}
	if n < 6 {
		t.Fatalf("swept %d manifest fields; there are more", n)
	}
	served(t, relay)
}

// TestEveryToolDeclarationFieldRefusesWrongValues: a mini-app's tool declaration (as the page's
// worker reads it, internal/shared/miniapp.ParseDeclaration) with each field of the wrong type, or
// over its bound, is refused by a named rule; the honest declaration is taken.
func TestEveryToolDeclarationFieldRefusesWrongValues(t *testing.T) {
	t.Parallel()
	honest := func() map[string]any {
		return map[string]any{"name": "echo", "description": "Says it back.", "inputSchema": map[string]any{"type": "object"},
			"annotations": map[string]any{"readOnlyHint": true}}
	}
	n := 0
	for _, door := range descriptorDoors(t) {
		path, ok := strings.CutPrefix(door, "descriptor mini-app tool ")
		if !ok {
			continue
		}
		n++
		for what, v := range map[string]any{"a number": 12345, "a list": []any{"x"}, "a long string": strings.Repeat("x", miniapp.MaxDeclarationBytes)} {
			d := honest()
			if path == "parameters" {
				delete(d, "inputSchema") // one of the two may be given
			}
			setPath(d, path, v)
			b, _ := json.Marshal(d)
			_, err := miniapp.ParseDeclaration(b)
			if r, ok := refusal.As(err); !ok || r.Rule == "" || r.Why == "" {
				t.Errorf("%s as %s: not refused by name (%v)", door, what, err)
			}
		}
	}
	if n < 5 {
		t.Fatalf("swept %d declaration fields; there are more", n)
	}
	b, _ := json.Marshal(honest())
	if _, err := miniapp.ParseDeclaration(b); err != nil {
		t.Fatalf("the honest declaration: %v", err)
	}
}

// lockedBuffer is a bytes.Buffer a process writes while a case reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
