//go:build !js

package hostile

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/engine"
	"github.com/voicebox-go/voicebox/internal/relay"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// A door is a way in: an HTTP route the relay registers, a message type a socket, the worker or
// a page script dispatches on, a field of a descriptor the project reads. Each is enumerated from
// the code (the server's patterns, the worker's method table, reflection over the descriptor
// structs, a scan of the dispatching sources), never from a list kept by hand, so a new door
// appears here the day it is written. SECURITY.md's "Doors" table names the hostile case(s) that
// attack each one; TestEveryDoorHasAHostileCase fails for a door without a row, and for a row
// that names a test nobody wrote.

// doors returns every door of the project, sorted.
func doors(t *testing.T) []string {
	t.Helper()
	var all []string
	all = append(all, routeDoors(t)...)
	all = append(all, workerDoors()...)
	all = append(all, scannedDoors(t)...)
	all = append(all, mcpDoors(t)...)
	all = append(all, descriptorDoors(t)...)
	slices.Sort(all)
	return slices.Compact(all)
}

// routeDoors are the relay's routes: the patterns a relay built in this process registers on its
// server (a gated relay, which registers what an open one does), the app hosts' files and the
// folder apps' files, which are served before the mux.
func routeDoors(t *testing.T) []string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r, err := relay.New(relay.Config{Config: core.Config{Listener: ln, StateDir: t.TempDir(), Gated: true, Public: filepath.Join(harness.RepoRoot(), "public")}})
	if err != nil {
		t.Fatalf("building a relay to list its routes: %v", err)
	}
	var out []string
	for _, p := range r.Server.Patterns() {
		out = append(out, "route "+p)
	}
	for _, f := range server.AppHostFiles {
		out = append(out, "route app host GET "+f)
	}
	out = append(out, "route GET "+server.AppFilesPath+"{token}/{name}")
	return out
}

// workerDoors are the methods the page's worker answers (internal/engine's method table).
func workerDoors() []string {
	var out []string
	for _, m := range engine.New(engine.Options{}).Methods() {
		out = append(out, "worker method "+m)
	}
	return out
}

// dispatch is a source whose messages are told apart by a literal: each match of pattern (its
// first non-empty group) in file is a door named prefix + the literal.
type dispatch struct {
	file, prefix string
	pattern      *regexp.Regexp
}

// jsDispatch matches what a page script switches on: `case 'x':`, and `msg.type === 'x'` or
// `p.method === 'x'` outside a switch.
// (A typeof test is matched first and names nothing.)
var jsDispatch = regexp.MustCompile(`typeof [\w.]+ === '[^']+'|case '([^']+)':|\b(?:msg\.type|p\.method|msg\.method) === '([^']+)'`)

// dispatches are the scanned sources: the relay's sockets, which parse their frames by hand, and
// the page's scripts that take messages from mini-apps, MCP Apps views, external apps and the
// bridge, and the live session's worker.
var dispatches = []dispatch{
	// /channel: the machine's hello, the page's control frames (root, tools); anything else is an
	// answer envelope (internal/shared/wire), its own door below.
	{"internal/core/hub/hub.go", "socket /channel frame ", regexp.MustCompile(`typ [!=]= "([a-z]+)"|\{"type":"([a-z]+)",` + "`")},
	// /live: the page's text frames.
	{"internal/core/voice/socket.go", "socket /live frame ", regexp.MustCompile(`m\.Type == "([a-z]+)"`)},
	{"public/mini-app-bridge.js", "mini-app-bridge.js message ", jsDispatch},
	// The worker's end of an app's port to it: an answer is the one message it takes.
	{"public/app-port.js", "app-port.js message ", regexp.MustCompile(`data\.type !== '([a-z_]+)'`)},
	{"public/mini-apps.js", "mini-apps.js message ", jsDispatch},
	{"public/external-apps.js", "external-apps.js message ", jsDispatch},
	// The live session's worker: the page's messages and the player worklet's reports.
	{"public/live-worker.js", "live-worker.js message ", jsDispatch},
}

// scannedDoors are the message types of dispatches, and the doors each socket has besides.
func scannedDoors(t *testing.T) []string {
	t.Helper()
	out := []string{
		"socket /channel frame answer", // a call's answer, internal/shared/wire.ParseAnswer
		"socket /live frame audio",     // binary PCM
	}
	for _, d := range dispatches {
		b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), d.file))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range d.pattern.FindAllStringSubmatch(string(b), -1) {
			for _, g := range m[1:] {
				if g != "" {
					out = append(out, d.prefix+g)
					n++
				}
			}
		}
		if n == 0 {
			t.Errorf("no message type found in %s: the scan no longer matches how it dispatches; fix the pattern in doors_test.go", d.file)
		}
	}
	return out
}

// descriptorDoors are the fields of what the project reads from people it does not trust with
// its walls: an extension descriptor (reflection over internal/shared/extensions.Descriptor), a mini-app's
// tool declaration, an external app's registry entry and a WASM shelf's manifest (read from the
// source of their parsers, whose shapes are unexported).
func descriptorDoors(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, f := range jsonFields(reflect.TypeFor[extensions.Descriptor](), "") {
		out = append(out, "descriptor extension "+f)
	}
	for _, f := range structFields(t, "internal/door/externalapps/registry.go", "entry", "") {
		out = append(out, "descriptor external app registry entry "+f)
	}
	for _, f := range structFields(t, "internal/door/extensionhost/wasmshelf/wasmshelf.go", "manifest", "") {
		out = append(out, "descriptor shelf manifest "+f)
	}
	for _, f := range structFields(t, "internal/door/extensionhost/wasmshelf/wasmshelf.go", "entry", "tools[].") {
		out = append(out, "descriptor shelf manifest "+f)
	}
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "internal/shared/miniapp/declaration.go"))
	if err != nil {
		t.Fatal(err)
	}
	// ParseDeclaration reads its fields by name from a map, and the annotations by their tags.
	decl := regexp.MustCompile(`fields, "([a-zA-Z]+)"|fields\["([a-zA-Z]+)"\]|json:"([a-zA-Z]+Hint)"`)
	n := 0
	for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
		switch {
		case m[1] != "":
			out = append(out, "descriptor mini-app tool "+m[1])
		case m[2] != "":
			out = append(out, "descriptor mini-app tool "+m[2])
		default:
			out = append(out, "descriptor mini-app tool annotations."+m[3])
		}
		n++
	}
	if n == 0 {
		t.Errorf("no field found in internal/shared/miniapp/declaration.go: the scan no longer matches ParseDeclaration; fix it in doors_test.go")
	}
	return out
}

// jsonFields lists the JSON names of typ's fields, nested ones as parent.child (parent[].child
// through a list), with the prefix given.
func jsonFields(typ reflect.Type, prefix string) []string {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		if typ.Kind() == reflect.Slice {
			prefix = strings.TrimSuffix(prefix, ".") + "[]."
		}
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct || typ == reflect.TypeFor[json.RawMessage]() {
		return nil
	}
	var out []string
	for f := range typ.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, prefix+name)
		out = append(out, jsonFields(f.Type, prefix+name+".")...)
	}
	return out
}

// structFields lists the JSON names of the fields of the struct type named typeName in file
// (relative to the repository), read from its source.
func structFields(t *testing.T, file, typeName, prefix string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(harness.RepoRoot(), file), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != typeName {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return false
		}
		for _, fd := range st.Fields.List {
			if fd.Tag == nil {
				continue
			}
			tag := reflect.StructTag(strings.Trim(fd.Tag.Value, "`"))
			name, _, _ := strings.Cut(tag.Get("json"), ",")
			if name != "" && name != "-" {
				out = append(out, prefix+name)
			}
		}
		return false
	})
	if len(out) == 0 {
		t.Errorf("no JSON field found in %s's %s: was it renamed? fix doors_test.go", file, typeName)
	}
	return out
}

// doorsTable reads SECURITY.md's "Doors" section: each row's door (the first cell, in
// backquotes) and the test names in its second cell.
func doorsTable(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Doors\n")
	if !ok {
		t.Fatal("SECURITY.md has no \"## Doors\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	names := regexp.MustCompile("`([A-Za-z0-9_]+)`")
	rows := map[string][]string{}
	for line := range strings.SplitSeq(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		door := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if _, dup := rows[door]; dup {
			t.Errorf("SECURITY.md's Doors table has %q twice", door)
		}
		var tests []string
		for _, m := range names.FindAllStringSubmatch(cells[2], -1) {
			tests = append(tests, m[1])
		}
		rows[door] = tests
	}
	return rows
}

// knownTests returns the test functions of tests/hostile and of the places SECURITY.md's
// "Attacks that live elsewhere" names (a file, or every test file of a directory).
func knownTests(t *testing.T) map[string]bool {
	t.Helper()
	root := harness.RepoRoot()
	b, err := os.ReadFile(filepath.Join(root, "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	places := []string{"tests/hostile"}
	if _, elsewhere, ok := strings.Cut(string(b), "\n## Attacks that live elsewhere\n"); ok {
		elsewhere, _, _ = strings.Cut(elsewhere, "\n## ")
		for _, m := range regexp.MustCompile("`([a-z][a-z0-9_/.-]*/[a-z0-9_/.-]*)`").FindAllStringSubmatch(elsewhere, -1) {
			places = append(places, m[1])
		}
	}
	funcs := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Za-z0-9_]*)\(`)
	known := map[string]bool{}
	read := func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return
		}
		for _, m := range funcs.FindAllStringSubmatch(string(b), -1) {
			known[m[1]] = true
		}
	}
	for _, p := range places {
		full := filepath.Join(root, p)
		info, err := os.Stat(full)
		if err != nil {
			continue
		}
		if !info.IsDir() {
			read(full)
			continue
		}
		entries, _ := os.ReadDir(full)
		for _, e := range entries {
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), "_test.go") {
				read(filepath.Join(full, e.Name()))
			}
		}
	}
	return known
}

// TestEveryDoorHasAHostileCase: every door the code has (see doors) has a row in SECURITY.md's
// Doors table naming at least one case that attacks it, and every case a row names exists, in
// tests/hostile or where "Attacks that live elsewhere" says. A new route, message type or
// descriptor field without a case fails here, by name.
func TestEveryDoorHasAHostileCase(t *testing.T) {
	t.Parallel()
	all := doors(t)
	rows := doorsTable(t)
	known := knownTests(t)
	var missing []string
	for _, d := range all {
		tests, ok := rows[d]
		switch {
		case !ok:
			missing = append(missing, d)
		case len(tests) == 0:
			t.Errorf("door %q has a row in SECURITY.md's Doors table that names no case", d)
		}
		for _, name := range tests {
			if !known[name] {
				t.Errorf("door %q: SECURITY.md names %s, which is no test function in tests/hostile or the places it lists elsewhere", d, name)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d doors have no row in SECURITY.md's Doors table (a door without a hostile case is a defect); add a case and a row for each:\n| `%s` | |",
			len(missing), strings.Join(missing, "` | |\n| `"))
	}
	for door := range rows {
		if !slices.Contains(all, door) {
			t.Errorf("SECURITY.md's Doors table has %q, which is no door the code has now: remove the row, or fix the name", door)
		}
	}
}
