//go:build !js

package main

import (
	"encoding/binary"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// jsonReflectEntries are the entry points into encoding/json's reflection-based codec and its
// scanner, by package: encoding/json's own, and strictjson.Decode (which reads a type that is not
// a strictjson.Struct through it). The page reads, checks, compacts and indents JSON with
// internal/shared/rawjson and strictjson.DecodeStruct instead; the Go linker then leaves the codec
// and the scanner out of the wasm once nothing the page reaches calls one of these.
var jsonReflectEntries = map[string][]string{
	"encoding/json": {"Marshal", "MarshalIndent", "Unmarshal", "NewDecoder", "NewEncoder", "Valid", "Compact", "Indent", "HTMLEscape"},
	modulePath + "internal/shared/strictjson": {"Decode"},
}

// jsonReflectCallers are the page's functions that still call one of jsonReflectEntries, as
// "package/file.go:Func": what would keep encoding/json's codec in the page's wasm. It is empty,
// and stays so: a new caller fails TestPageJSONWithoutReflection (write the JSON with rawjson,
// decode an object with strictjson.DecodeStruct), and so does an entry whose call has gone.
var jsonReflectCallers = []string{}

// jsonReflectBehindEntries are the files whose functions call encoding/json's codec for one of
// jsonReflectEntries' own functions, so reached only through it: strictjson's reflection path
// runs only for a Decode, which no page function calls (shared packages the relay uses do). The
// linked-name check below holds the wasm to it.
var jsonReflectBehindEntries = []string{"internal/shared/strictjson/decode_reflect.go"}

const modulePath = "github.com/voicebox-go/voicebox/"

// TestPageJSONWithoutReflection holds the page's calls into encoding/json's reflection-based codec
// to jsonReflectCallers, by reading the GOOS=js sources of every page package; and, once the list
// is empty, holds the linked wasm to having none of the codec's functions.
func TestPageJSONWithoutReflection(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{.Dir}} {{join .GoFiles " "}}`, modulePath+"browser")
	cmd.Env = append(cmd.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	found := map[string]bool{}
	packages := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasPrefix(f[0], modulePath) {
			continue
		}
		packages++
		rel := strings.TrimPrefix(f[0], modulePath)
		for _, name := range f[2:] {
			if slices.Contains(jsonReflectBehindEntries, rel+"/"+name) {
				continue
			}
			for _, caller := range jsonCallers(t, filepath.Join(f[1], name)) {
				found[rel+"/"+name+":"+caller] = true
			}
		}
	}
	if packages < 10 {
		t.Fatalf("go list gave %d of the module's packages; the guard would see nothing", packages)
	}
	for _, caller := range slices.Sorted(maps.Keys(found)) {
		if !slices.Contains(jsonReflectCallers, caller) {
			t.Errorf("%s calls encoding/json's reflection-based codec from the page: write JSON with rawjson, decode an object with strictjson.DecodeStruct", caller)
		}
	}
	for _, caller := range jsonReflectCallers {
		if !found[caller] {
			t.Errorf("%s no longer calls encoding/json's codec: take it out of jsonReflectCallers", caller)
		}
	}
	if len(jsonReflectCallers) > 0 || t.Failed() {
		return
	}
	for _, n := range pageFunctionNames(t) {
		if strings.HasPrefix(n, "encoding/json.(*decodeState)") || strings.HasPrefix(n, "encoding/json.(*encodeState)") ||
			n == "encoding/json.checkValid" {
			t.Errorf("the page's wasm links %s: something reaches encoding/json's codec", n)
		}
	}
}

// jsonCallers returns the functions of file ("Func" or "Type.Method") that call one of
// jsonReflectEntries of encoding/json, under whatever name the file imports it.
func jsonCallers(t *testing.T, file string) []string {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	local := map[string][]string{} // the name a file imports a package under -> its entries
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if entries, ok := jsonReflectEntries[p]; ok {
			name := p[strings.LastIndexByte(p, '/')+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			local[name] = entries
		}
	}
	if len(local) == 0 {
		return nil
	}
	var callers []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok {
			continue
		}
		name := fn.Name.Name
		if fn.Recv != nil && len(fn.Recv.List) == 1 {
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if idx, ok := typ.(*ast.IndexExpr); ok {
				typ = idx.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				name = id.Name + "." + name
			}
		}
		calls := false
		ast.Inspect(fn, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && slices.Contains(local[id.Name], sel.Sel.Name) {
					calls = true
				}
			}
			return !calls
		})
		if calls {
			callers = append(callers, name)
		}
	}
	return callers
}

// pageWasm is the page's wasm built once (with its names) for the tests that read what it links.
var pageWasm struct {
	once  sync.Once
	names []string
	err   string
}

// pageFunctionNames returns the names of the functions linked into the page's wasm.
func pageFunctionNames(t *testing.T) []string {
	pageWasm.once.Do(func() {
		dir, err := os.MkdirTemp("", "pagewasm")
		if err != nil {
			pageWasm.err = err.Error()
			return
		}
		defer os.RemoveAll(dir)
		wasm := filepath.Join(dir, "page.wasm")
		build := exec.Command("go", "build", "-trimpath", "-o", wasm, modulePath+"browser")
		build.Env = append(build.Environ(), "GOOS=js", "GOARCH=wasm")
		if b, err := build.CombinedOutput(); err != nil {
			pageWasm.err = "go build: " + err.Error() + "\n" + string(b)
			return
		}
		pageWasm.names = wasmFunctionNames(t, wasm)
	})
	if pageWasm.err != "" {
		t.Fatal(pageWasm.err)
	}
	if len(pageWasm.names) < 1000 {
		t.Fatalf("the wasm names %d functions; the guard would see nothing", len(pageWasm.names))
	}
	return pageWasm.names
}

// wasmFunctionNames reads the function names of a wasm module's "name" section.
func wasmFunctionNames(t *testing.T, file string) []string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		t.Fatalf("%s is not a wasm module", file)
	}
	uleb := func(p []byte) (uint64, int) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			t.Fatal("a malformed LEB128 number in the wasm")
		}
		return v, n
	}
	var names []string
	for i := 8; i < len(b); {
		id := b[i]
		size, n := uleb(b[i+1:])
		body := b[i+1+n : i+1+n+int(size)]
		i += 1 + n + int(size)
		if id != 0 {
			continue
		}
		l, n := uleb(body)
		if string(body[n:n+int(l)]) != "name" {
			continue
		}
		for sub := body[n+int(l):]; len(sub) > 0; {
			subID := sub[0]
			subSize, n := uleb(sub[1:])
			content := sub[1+n : 1+n+int(subSize)]
			sub = sub[1+n+int(subSize):]
			if subID != 1 {
				continue
			}
			count, n := uleb(content)
			p := content[n:]
			for range count {
				_, n := uleb(p)
				p = p[n:]
				l, n := uleb(p)
				names = append(names, string(p[n:n+int(l)]))
				p = p[n+int(l):]
			}
		}
	}
	return names
}
