//go:build !js

package main

import (
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// forbiddenInPage are packages the page's wasm must not pull in, each with why: they add weight
// to every page load (brotli figures of 2026-12-04) or belong to other programs. A pkg ending in
// "/" forbids every package under it; otherwise the package and those below it, unless exact.
var forbiddenInPage = []struct {
	pkg   string
	exact bool
	via   []string // the packages allowed to import pkg, when the page reaches none of its code through them
	why   string
}{
	{pkg: "net/http", why: "megabytes with crypto/tls; the page's socket is the browser's WebSocket (socket_js.go)"},
	{pkg: "crypto/tls", why: "megabytes; the browser does TLS"},
	{pkg: "os/exec", why: "no processes in a browser"},
	{pkg: "github.com/voicebox-go/voicebox/cmd/relay", why: "the relay's code, not the page's"},
	{pkg: "github.com/chromedp/", why: "the tests' browser driver"},
	{pkg: "github.com/santhosh-tekuri/jsonschema/", why: "0.33 MB brotli with golang.org/x/text; only toolschema's tests use it, as the reference"},
	{pkg: "golang.org/x/text/", why: "Unicode tables the page does not need"},
	{pkg: "regexp", why: "51 KB brotli with regexp/syntax and the Unicode tables only it reaches (measured 2026-12-05); the WebMCP draft's `pattern` is matched by internal/shared/rematch, linear in the string like RE2 (go-udiff's Unified once brought regexp too)"},
	{pkg: "github.com/aymanbagabas/go-udiff", why: "its package-level regexp links regexp, and its lcs package log (19 KB brotli with lcs, measured 2026-12-05); diff-file's lines are matched by the executor's lineDiff"},
	{pkg: "log", exact: true, why: "its standard logger links os's file writer; only go-udiff's lcs brought it"},
	{pkg: "log/slog", why: "about 25 KB brotli; channel and executor take a one-method Logger"},
	{pkg: "math/big", why: "about 50 KB brotli; toolschema compares JSON numbers as exact decimals"},
	{pkg: "archive/zip", why: "56 KB brotli (285 KB raw) with compress/flate, measured 2026-12-05; the workspace's download writes its stored zip itself (internal/engine/zipstore.go)"},
	{pkg: "compress/flate", why: "most of archive/zip's weight; the page stores, the relay compresses"},
	{pkg: "crypto/rand", why: "links the FIPS DRBG and AES; temporary names need only math/rand/v2"},
	{pkg: "html", exact: true, why: "26 KB brotli, measured 2026-12-05: its table of every HTML entity; an app's <title> is read with miniappstore's unescapeTitle"},
	{pkg: "github.com/h2non/filetype", why: "24 KB brotli, measured 2026-12-05: its tables of every kind it knows; read-media's image and audio signatures are the executor's own (sniff.go)"},
	{pkg: "fmt", exact: true, via: []string{"encoding/hex", "encoding/json"}, why: "about 40 KB brotli with the part of reflect only its printer reaches, measured 2026-12-06: refusals and errors are worded by internal/shared/textf (TestPageLinksNoFmt holds the wasm to it; encoding/hex and encoding/json import fmt, but only for functions the page does not reach)"},
	{pkg: "github.com/hack-pad/safejs", why: "its panic catcher wraps a panic with fmt.Errorf, which links all of fmt into the page; the page reaches JavaScript through jsutil.Value"},
	{pkg: "crypto/", why: "32 KB brotli, measured 2026-12-05: crypto/sha256 alone registers the FIPS module (AES, GCM, the DRBG, SHA-3, SHA-512, HMAC); the page hashes with internal/shared/sha"},
}

// TestPageImportsStayLean guards the GOOS=js build of the page (this command and the engine it
// starts) against heavy or foreign imports.
func TestPageImportsStayLean(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/voicebox-go/voicebox/browser")
	cmd.Env = append(cmd.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var deps []string
	importers := map[string][]string{} // package -> the page packages importing it
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		deps = append(deps, f[0])
		for _, imp := range f[1:] {
			importers[imp] = append(importers[imp], f[0])
		}
	}
	if len(deps) < 10 || !slices.Contains(deps, "github.com/voicebox-go/voicebox/internal/engine") {
		t.Fatalf("go list returned %d packages, without the engine; the guard would see nothing", len(deps))
	}
	for _, dep := range deps {
		for _, bad := range forbiddenInPage {
			under := strings.HasSuffix(bad.pkg, "/") && strings.HasPrefix(dep, bad.pkg) || !bad.exact && strings.HasPrefix(dep, bad.pkg+"/")
			if dep != bad.pkg && !under {
				continue
			}
			for _, by := range importers[dep] {
				if !slices.Contains(bad.via, by) && !strings.HasPrefix(by, bad.pkg) {
					t.Errorf("the page's wasm imports %s through %s: %s", dep, by, bad.why)
				}
			}
		}
	}
}

// TestPageLinksNoFmt holds the page's wasm to linking none of fmt's functions: encoding/hex and
// encoding/json import fmt (forbiddenInPage lets them), so only the linked names can say that
// nothing the page runs reaches it.
func TestPageLinksNoFmt(t *testing.T) {
	t.Parallel()
	var linked []string
	for _, n := range pageFunctionNames(t) {
		if strings.HasPrefix(n, "fmt.") {
			linked = append(linked, n)
		}
	}
	if len(linked) > 0 {
		t.Errorf("the page's wasm links %d of fmt's functions (%s, ...): word sentences with internal/shared/textf; `GOOS=js GOARCH=wasm go build -ldflags=-dumpdep ./browser` says what reaches fmt", len(linked), linked[0])
	}
}

// timeParseNames are the names of time's layout parser as the wasm's name section spells them:
// (*time.Time).UnmarshalJSON reaches it, and any call of UnmarshalJSON through an interface keeps
// that method, since the page puts a time.Time in interfaces (context's timers).
var timeParseNames = []string{"time.Parse", "time.ParseInLocation", "time.parse", "time.parseStrictRFC3339",
	"time.__Time_.UnmarshalJSON", "time.__Time_.UnmarshalText", "time.parseRFC3339"}

// TestPageLinksNoTimeParse holds the page's wasm to linking no part of time's layout parser (13.5
// KB brotli with its number and zone readers, measured 2026-12-06): the records' times are read by
// strictjson's own RFC 3339 reader, and strictjson calls a field's UnmarshalStrict, never an
// UnmarshalJSON through an interface.
func TestPageLinksNoTimeParse(t *testing.T) {
	t.Parallel()
	var linked []string
	for _, n := range pageFunctionNames(t) {
		base, _, _ := strings.Cut(n, "_go.shape.") // a generic function's instances
		if slices.Contains(timeParseNames, base) {
			linked = append(linked, n)
		}
	}
	if len(linked) > 0 {
		t.Errorf("the page's wasm links time's layout parser (%s): read a time with strictjson (a *time.Time field), never time.Parse, and call no UnmarshalJSON through an interface; `GOOS=js GOARCH=wasm go build -ldflags=-dumpdep ./browser` says what reaches it", strings.Join(linked, ", "))
	}
}

// TestPageLinksNoErrorsAs holds the page's wasm to linking no errors.As: its reflection (through
// internal/reflectlite: Implements, AssignableTo, Value.Set, with runtime.FuncForPC) cost 8 KB
// brotli, measured 2026-12-06; errors.AsType asks the same with a type assertion.
func TestPageLinksNoErrorsAs(t *testing.T) {
	t.Parallel()
	for _, n := range pageFunctionNames(t) {
		if n == "errors.As" || n == "errors.as" {
			t.Errorf("the page's wasm links %s: ask with errors.AsType; `GOOS=js GOARCH=wasm go build -ldflags=-dumpdep ./browser` says what reaches it", n)
		}
	}
}

// TestPageLinksNoFileWrite holds the page's wasm to writing no line through os's files: the
// worker's few lines of its own (a message it dropped, an answer it could not post) are the
// runtime's print, which wasm_exec.js writes to the same console.log as fd 1. os.Stdout's
// WriteString linked (*os.File).Write and wrapErr and shifted the wasm's layout: 5.5 KB brotli
// over four build strings, measured 2026-12-06 (os itself stays, by its package init).
func TestPageLinksNoFileWrite(t *testing.T) {
	t.Parallel()
	for _, n := range pageFunctionNames(t) {
		if n == "os.__File_.Write" || n == "os.__File_.WriteString" || n == "os.__File_.wrapErr" {
			t.Errorf("the page's wasm links %s: the worker says its lines with print (console.log either way); `GOOS=js GOARCH=wasm go build -ldflags=-dumpdep ./browser` says what reaches it", n)
		}
	}
}

// inlinedIntoWrapper matches a closure of a value method T.M compiled into its pointer wrapper
// (*T).M, as the wasm's name section spells it: "pkg.__T_.M.T.M.func1".
var inlinedIntoWrapper = regexp.MustCompile(`\.__([A-Za-z0-9]+)_\.([A-Za-z0-9]+)\.([A-Za-z0-9]+)\.([A-Za-z0-9]+)\.`)

// TestPageLinksNoMethodTwice holds the page's wasm to one copy of each method: the linker keeps
// the (*T).M wrapper of every value method of a type put in an interface, and the compiler
// inlined a method with closures whole into it (toolViews' and portStatsList's AppendJSON: 9.4
// KB raw, measured 2026-12-06). Such a method is go:noinline, or has a pointer receiver.
func TestPageLinksNoMethodTwice(t *testing.T) {
	t.Parallel()
	for _, n := range pageFunctionNames(t) {
		if m := inlinedIntoWrapper.FindStringSubmatch(n); m != nil && m[1] == m[3] && m[2] == m[4] {
			t.Errorf("the page's wasm holds %s.%s twice, inlined into its pointer wrapper (%s): mark it //go:noinline or give it a pointer receiver", m[1], m[2], n)
		}
	}
}
