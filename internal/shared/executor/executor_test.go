package executor_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

var _ channel.Executor = (*executor.Executor)(nil)

var fixed = time.Date(2026, 12, 2, 17, 30, 0, 123e6, time.UTC)

func newExec(t testing.TB, opts executor.Options) (*executor.Executor, *fsroot.MemRoot) {
	t.Helper()
	root := fsroot.NewMemory()
	if opts.Clock == nil {
		opts.Clock = func() time.Time { return fixed }
	}
	return executor.New(root, opts), root
}

func call(tool, args string) wire.Call {
	return wire.Call{CallID: "c1", Tool: tool, DescriptorID: "files", Args: json.RawMessage(args), BoundsEcho: json.RawMessage(`{}`)}
}

// run executes tool with args and decodes the observation.
func run(t *testing.T, e *executor.Executor, tool, args string) (map[string]any, error) {
	t.Helper()
	out, err := e.Execute(context.Background(), call(tool, args))
	if err != nil {
		if out != nil {
			t.Errorf("%s %s: an observation alongside the error %v", tool, args, err)
		}
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%s %s: the observation %s is not a JSON object: %v", tool, args, out, err)
	}
	return m, nil
}

func mustRun(t *testing.T, e *executor.Executor, tool, args string) map[string]any {
	t.Helper()
	m, err := run(t, e, tool, args)
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	return m
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestNow(t *testing.T) {
	t.Parallel()
	e, _ := newExec(t, executor.Options{Location: time.FixedZone("CET", 3600)})
	got := mustRun(t, e, "now", `{}`)
	if got["now"] != "2026-12-02T18:30:00.123+01:00" || got["unixMs"] != float64(fixed.UnixMilli()) || got["zone"] != "CET" {
		t.Errorf("now = %v", got)
	}
	if _, err := run(t, e, "now", `{"tz":"UTC"}`); refusal.RuleOf(err) != refusal.InvalidArgument {
		t.Errorf("now with an argument: %v; want invalid-argument", err)
	}
}

func TestPrimitives(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T, r *fsroot.MemRoot)
		tool  string
		args  string
		want  map[string]any
	}{
		{
			name:  "read-text",
			setup: func(t *testing.T, r *fsroot.MemRoot) { write(t, r, "notes.md", "# hi\n") },
			tool:  "read-file", args: `{"path":"notes.md"}`,
			want: map[string]any{"path": "notes.md", "size": 5.0, "bytes": 5.0, "truncated": false, "encoding": "utf-8", "content": "# hi\n"},
		},
		{
			name:  "read-empty",
			setup: func(t *testing.T, r *fsroot.MemRoot) { write(t, r, "e", "") },
			tool:  "read-file", args: `{"path":"e"}`,
			want: map[string]any{"path": "e", "size": 0.0, "bytes": 0.0, "truncated": false, "encoding": "utf-8", "content": ""},
		},
		{
			name:  "read-binary",
			setup: func(t *testing.T, r *fsroot.MemRoot) { write(t, r, "b.bin", "\xff\x00\xfe") },
			tool:  "read-file", args: `{"path":"b.bin"}`,
			want: map[string]any{"path": "b.bin", "size": 3.0, "bytes": 3.0, "truncated": false, "encoding": "base64", "content": base64.StdEncoding.EncodeToString([]byte("\xff\x00\xfe"))},
		},
		{
			name: "read-nested",
			setup: func(t *testing.T, r *fsroot.MemRoot) {
				mkdir(t, r, "a/b")
				write(t, r, "a/b/c.txt", "deep")
			},
			tool: "read-file", args: `{"path":"a/b/c.txt"}`,
			want: map[string]any{"path": "a/b/c.txt", "size": 4.0, "bytes": 4.0, "truncated": false, "encoding": "utf-8", "content": "deep"},
		},
		{
			name: "write-new",
			tool: "write-file", args: `{"path":"out.txt","content":"héllo"}`,
			want: map[string]any{"path": "out.txt", "bytes": 6.0, "created": true, "parentsCreated": false},
		},
		{
			name:  "write-replace",
			setup: func(t *testing.T, r *fsroot.MemRoot) { write(t, r, "out.txt", "old and long") },
			tool:  "write-file", args: `{"path":"out.txt","content":"new","encoding":"utf-8"}`,
			want: map[string]any{"path": "out.txt", "bytes": 3.0, "created": false, "parentsCreated": false},
		},
		{
			name: "write-parents",
			tool: "write-file", args: `{"path":"notes/2026/today.md","content":""}`,
			want: map[string]any{"path": "notes/2026/today.md", "bytes": 0.0, "created": true, "parentsCreated": true},
		},
		{
			name: "write-base64",
			tool: "write-file", args: `{"path":"b.bin","content":"/wD+","encoding":"base64"}`,
			want: map[string]any{"path": "b.bin", "bytes": 3.0, "created": true, "parentsCreated": false},
		},
		{
			name: "list-empty-root",
			tool: "list-files", args: `{}`,
			want: map[string]any{"dir": "", "count": 0.0, "truncated": false, "entries": []any{}},
		},
		{
			name: "list-sub",
			setup: func(t *testing.T, r *fsroot.MemRoot) {
				mkdir(t, r, "d/sub")
				write(t, r, "d/f.txt", "abc")
			},
			tool: "list-files", args: `{"dir":"d"}`,
			want: map[string]any{"dir": "d", "count": 2.0, "truncated": false, "entries": []any{
				map[string]any{"name": "f.txt", "path": "d/f.txt", "dir": false, "size": 3.0, "modTime": "*"},
				map[string]any{"name": "sub", "path": "d/sub", "dir": true, "size": 0.0, "modTime": "*"},
			}},
		},
		{
			name:  "list-null-dir-is-root",
			setup: func(t *testing.T, r *fsroot.MemRoot) { write(t, r, "x", "1") },
			tool:  "list-files", args: `{"dir":null}`,
			want: map[string]any{"dir": "", "count": 1.0, "truncated": false, "entries": []any{
				map[string]any{"name": "x", "path": "x", "dir": false, "size": 1.0, "modTime": "*"},
			}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e, r := newExec(t, executor.Options{})
			if c.setup != nil {
				c.setup(t, r)
			}
			got := mustRun(t, e, c.tool, c.args)
			if !sameShape(got, c.want) {
				t.Errorf("%s %s\n got %v\nwant %v", c.tool, c.args, got, c.want)
			}
		})
	}
}

// sameShape compares decoded JSON, where "*" in want matches any value.
func sameShape(got, want any) bool {
	if want == "*" {
		return got != nil
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, v := range w {
			if !sameShape(g[k], v) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !sameShape(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	return got == want
}

func write(t *testing.T, r fsroot.Root, name, content string) {
	t.Helper()
	if err := r.WriteFile(context.Background(), name, []byte(content)); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, r fsroot.Root, name string) {
	t.Helper()
	if err := r.MkdirAll(context.Background(), name); err != nil {
		t.Fatal(err)
	}
}

func TestWrittenContentLands(t *testing.T) {
	t.Parallel()
	e, r := newExec(t, executor.Options{})
	mustRun(t, e, "write-file", `{"path":"notes/a.md","content":"line\n\u00e9\u0000"}`)
	mustRun(t, e, "write-file", `{"path":"b.bin","content":"/wD+","encoding":"base64"}`)
	for name, want := range map[string]string{"notes/a.md": "line\né\x00", "b.bin": "\xff\x00\xfe"} {
		got, err := r.ReadFile(context.Background(), name)
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		tool string
		args string
		rule refusal.Rule
	}{
		{"unknown-primitive", "format-disk", `{"path":"a"}`, refusal.UnknownTool},
		{"args-not-object", "read-file", `["a"]`, refusal.InvalidToolArguments},
		{"read-missing-path", "read-file", `{}`, refusal.MissingArgument},
		{"read-null-path", "read-file", `{"path":null}`, refusal.MissingArgument},
		{"read-path-number", "read-file", `{"path":1}`, refusal.InvalidArgumentType},
		{"read-unknown-key", "read-file", `{"path":"a","offset":3}`, refusal.InvalidArgument},
		{"read-key-case", "read-file", `{"Path":"a"}`, refusal.InvalidArgument},
		{"read-escape", "read-file", `{"path":"../../evil.sh"}`, refusal.OutsideRoot},
		{"read-inner-escape", "read-file", `{"path":"assets/../../evil.sh"}`, refusal.OutsideRoot},
		{"read-absolute", "read-file", `{"path":"/etc/passwd"}`, refusal.OutsideRoot},
		{"read-backslash", "read-file", `{"path":"a\\b"}`, refusal.OutsideRoot},
		{"read-nul", "read-file", `{"path":"a\u0000b"}`, refusal.OutsideRoot},
		{"read-empty-path", "read-file", `{"path":""}`, refusal.OutsideRoot},
		{"read-host-token", "read-file", `{"path":".host-token"}`, refusal.DotfileRefused},
		{"read-audit-log", "read-file", `{"path":".voicebox/audit/00000001.jsonl"}`, refusal.DotfileRefused},
		{"read-nested-dotfile", "read-file", `{"path":"notes/.secret"}`, refusal.DotfileRefused},
		{"read-too-deep", "read-file", jsonArgs("path", strings.Repeat("d/", 40)+"f"), refusal.PathTooLong},
		{"read-missing", "read-file", `{"path":"nope.txt"}`, refusal.NotFound},
		{"read-dir", "read-file", `{"path":"dir"}`, refusal.IsADirectory},
		{"read-through-file", "read-file", `{"path":"file.txt/x"}`, refusal.NotADirectory},
		{"write-missing-content", "write-file", `{"path":"a"}`, refusal.MissingArgument},
		{"write-content-object", "write-file", `{"path":"a","content":{}}`, refusal.InvalidArgumentType},
		{"write-bad-encoding", "write-file", `{"path":"a","content":"x","encoding":"latin1"}`, refusal.InvalidArgumentEnum},
		{"write-bad-base64", "write-file", `{"path":"a","content":"!!","encoding":"base64"}`, refusal.InvalidArgument},
		{"write-unknown-key", "write-file", `{"path":"a","content":"x","perm":"0777"}`, refusal.InvalidArgument},
		{"write-mode-not-a-mode", "write-file", `{"path":"a","content":"x","mode":"0777"}`, refusal.InvalidArgumentEnum},
		{"write-escape", "write-file", `{"path":"../evil.sh","content":"x"}`, refusal.OutsideRoot},
		{"write-dotfile", "write-file", `{"path":".host-token","content":"x"}`, refusal.DotfileRefused},
		{"write-into-meta", "write-file", `{"path":".voicebox/audit/00000001.jsonl","content":"{}"}`, refusal.DotfileRefused},
		{"write-onto-dir", "write-file", `{"path":"dir","content":"x"}`, refusal.IsADirectory},
		{"write-through-file", "write-file", `{"path":"file.txt/x","content":"x"}`, refusal.NotADirectory},
		{"list-escape", "list-files", `{"dir":".."}`, refusal.OutsideRoot},
		{"list-dot", "list-files", `{"dir":"."}`, refusal.OutsideRoot},
		{"list-dotdir", "list-files", `{"dir":".voicebox"}`, refusal.DotfileRefused},
		{"list-missing", "list-files", `{"dir":"nope"}`, refusal.NotFound},
		{"list-file", "list-files", `{"dir":"file.txt"}`, refusal.NotADirectory},
		{"list-unknown-key", "list-files", `{"path":"dir"}`, refusal.InvalidArgument},
		{"list-dir-bool", "list-files", `{"dir":true}`, refusal.InvalidArgumentType},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e, r := newExec(t, executor.Options{})
			mkdir(t, r, "dir")
			write(t, r, "file.txt", "content")
			_, err := run(t, e, c.tool, c.args)
			if got := refusal.RuleOf(err); got != c.rule {
				t.Fatalf("%s %s = %v; want rule %s", c.tool, c.args, err, c.rule)
			}
			if r, _ := refusal.As(err); r.Why == "" {
				t.Errorf("refusal without a why")
			}
			// A refused call changes nothing.
			entries, _ := r.ReadDir(context.Background(), "")
			if len(entries) != 2 {
				t.Errorf("after a refused call the root holds %v", entries)
			}
		})
	}
}

func jsonArgs(kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestReadBound(t *testing.T) {
	t.Parallel()
	const max = executor.MaxReadBytes
	a := func(n int) string { return strings.Repeat("a", n) }
	cases := []struct {
		name      string
		content   string
		bytes     int
		truncated bool
		encoding  string
	}{
		{"under", a(max - 1), max - 1, false, "utf-8"},
		{"exactly", a(max), max, false, "utf-8"},
		{"one-over", a(max + 1), max, true, "utf-8"},
		{"far-over", a(3 * max), max, true, "utf-8"},
		{"two-byte-rune-across-the-cut", a(max-1) + "é" + a(10), max - 1, true, "utf-8"},
		{"two-byte-rune-ends-at-the-cut", a(max-2) + "é" + a(10), max, true, "utf-8"},
		{"four-byte-rune-across-the-cut", a(max-2) + "😀" + a(10), max - 2, true, "utf-8"},
		{"three-byte-rune-one-in", a(max-1) + "ア" + "x", max - 1, true, "utf-8"},
		{"multi-byte-exactly-fits", a(max-4) + "😀", max, false, "utf-8"},
		{"binary-over", "\xff" + a(max+5), max, true, "base64"},
		{"invalid-at-the-cut", a(max-1) + "\xff" + a(3), max, true, "base64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e, r := newExec(t, executor.Options{})
			write(t, r, "f", c.content)
			got := mustRun(t, e, "read-file", `{"path":"f"}`)
			if got["bytes"] != float64(c.bytes) || got["truncated"] != c.truncated || got["encoding"] != c.encoding || got["size"] != float64(len(c.content)) {
				t.Fatalf("bytes=%v truncated=%v encoding=%v size=%v; want bytes=%d truncated=%v encoding=%s size=%d",
					got["bytes"], got["truncated"], got["encoding"], got["size"], c.bytes, c.truncated, c.encoding, len(c.content))
			}
			content := got["content"].(string)
			if c.encoding == "base64" {
				b, err := base64.StdEncoding.DecodeString(content)
				if err != nil {
					t.Fatal(err)
				}
				content = string(b)
			}
			if content != c.content[:c.bytes] {
				t.Errorf("the content is not the file's first %d bytes", c.bytes)
			}
		})
	}
}

func TestWriteBound(t *testing.T) {
	t.Parallel()
	const max = executor.MaxWriteBytes
	cases := []struct {
		name  string
		opts  executor.Options
		args  string
		bytes int
		rule  refusal.Rule
	}{
		{"at-the-bound", executor.Options{}, jsonArgs("path", "f", "content", strings.Repeat("x", max)), max, ""},
		{"one-over", executor.Options{}, jsonArgs("path", "f", "content", strings.Repeat("x", max+1)), 0, refusal.WriteTooLarge},
		{"multi-byte-over", executor.Options{}, jsonArgs("path", "f", "content", strings.Repeat("é", max/2)+"x"), 0, refusal.WriteTooLarge},
		{"base64-at-the-bound", executor.Options{}, jsonArgs("path", "f", "encoding", "base64", "content", base64.StdEncoding.EncodeToString(make([]byte, max))), max, ""},
		{"base64-one-over", executor.Options{}, jsonArgs("path", "f", "encoding", "base64", "content", base64.StdEncoding.EncodeToString(make([]byte, max+1))), 0, refusal.WriteTooLarge},
		{"lowered", executor.Options{MaxWriteBytes: 10}, jsonArgs("path", "f", "content", "0123456789a"), 0, refusal.WriteTooLarge},
		{"raised", executor.Options{MaxWriteBytes: 2 * max}, jsonArgs("path", "f", "content", strings.Repeat("x", max+1)), max + 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e, r := newExec(t, c.opts)
			got, err := run(t, e, "write-file", c.args)
			if c.rule != "" {
				if refusal.RuleOf(err) != c.rule {
					t.Fatalf("= %v; want %s", err, c.rule)
				}
				if _, err := r.Stat(context.Background(), "f"); err == nil {
					t.Errorf("a refused write created the file")
				}
				return
			}
			if err != nil || got["bytes"] != float64(c.bytes) {
				t.Fatalf("= %v, %v; want %d bytes written", got, err, c.bytes)
			}
			if st, err := r.Stat(context.Background(), "f"); err != nil || st.Size != int64(c.bytes) {
				t.Errorf("Stat = %+v, %v", st, err)
			}
		})
	}
}

func TestListBound(t *testing.T) {
	t.Parallel()
	e, r := newExec(t, executor.Options{})
	for i := range executor.MaxListEntries + 3 {
		write(t, r, fmt.Sprintf("f%04d", i), "")
	}
	got := mustRun(t, e, "list-files", `{}`)
	entries := got["entries"].([]any)
	if len(entries) != executor.MaxListEntries || got["truncated"] != true || got["count"] != float64(executor.MaxListEntries+3) {
		t.Errorf("listed %d, truncated=%v, count=%v", len(entries), got["truncated"], got["count"])
	}
	if first := entries[0].(map[string]any)["name"]; first != "f0000" {
		t.Errorf("first entry %v; want f0000 (sorted)", first)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	e, r := newExec(t, executor.Options{Resolve: func(c wire.Call) (executor.Primitive, bool) {
		if c.DescriptorID == "files" && c.Tool == "read_notes" {
			return executor.ReadFile, true
		}
		return "", false
	}})
	write(t, r, "n.md", "notes")
	if got := mustRun(t, e, "read_notes", `{"path":"n.md"}`); got["content"] != "notes" {
		t.Errorf("read_notes = %v", got)
	}
	if _, err := run(t, e, "read-file", `{"path":"n.md"}`); refusal.RuleOf(err) != refusal.UnknownTool {
		t.Errorf("a call Resolve does not map = %v; want unknown-tool", err)
	}
}

// brokenRoot fails every operation with an error that is no rule.
type brokenRoot struct{ fsroot.Root }

var errDisk = errors.New("disk on fire")

func (brokenRoot) ReadFile(context.Context, string) ([]byte, error) { return nil, errDisk }

func TestRootFailureIsNoRefusal(t *testing.T) {
	t.Parallel()
	e := executor.New(brokenRoot{fsroot.NewMemory()}, executor.Options{})
	_, err := e.Execute(context.Background(), call("read-file", `{"path":"a"}`))
	if !errors.Is(err, errDisk) || refusal.RuleOf(err) != "" {
		t.Errorf("= %v; want the root's own error, no refusal", err)
	}
}

// TestThroughTheDoor runs frames through channel.NewDoor end to end on a memory root.
func TestThroughTheDoor(t *testing.T) {
	t.Parallel()
	e, r := newExec(t, executor.Options{})
	write(t, r, "hello.txt", "hi there")
	door := channel.NewDoor(e, wire.AdmittedMap{"files": json.RawMessage(`{"maxBytes":65536}`)}, channel.DoorOptions{})
	frame := func(id, tool, args string) []byte {
		return []byte(`{"v":1,"callId":"` + id + `","tool":"` + tool + `","descriptorId":"files","args":` + args + `,"boundsEcho":{"maxBytes":65536}}`)
	}
	cases := []struct {
		name  string
		frame []byte
		check func(t *testing.T, a wire.Answer)
	}{
		{"read", frame("c1", "read-file", `{"path":"hello.txt"}`), func(t *testing.T, a wire.Answer) {
			if !a.OK || !bytes.Contains(a.Observed, []byte(`"content":"hi there"`)) {
				t.Errorf("answer %+v", a)
			}
		}},
		{"write-then-list", frame("c2", "write-file", `{"path":"new/n.md","content":"x"}`), func(t *testing.T, a wire.Answer) {
			if !a.OK || !bytes.Contains(a.Observed, []byte(`"parentsCreated":true`)) {
				t.Errorf("answer %+v", a)
			}
		}},
		{"now", frame("c3", "now", `{}`), func(t *testing.T, a wire.Answer) {
			if !a.OK || !bytes.Contains(a.Observed, []byte(`"unixMs":`)) {
				t.Errorf("answer %+v", a)
			}
		}},
		{"escape-refused", frame("c4", "read-file", `{"path":"../../evil.sh"}`), func(t *testing.T, a wire.Answer) {
			if a.OK || a.Refused != refusal.OutsideRoot || a.Why == "" {
				t.Errorf("answer %+v; want outside-root", a)
			}
		}},
		{"dotfile-refused", frame("c5", "write-file", `{"path":".host-token","content":"x"}`), func(t *testing.T, a wire.Answer) {
			if a.OK || a.Refused != refusal.DotfileRefused {
				t.Errorf("answer %+v; want dotfile-refused", a)
			}
		}},
		{"bounds-altered", []byte(`{"v":1,"callId":"c6","tool":"read-file","descriptorId":"files","args":{"path":"hello.txt"},"boundsEcho":{"maxBytes":1e9}}`), func(t *testing.T, a wire.Answer) {
			if a.OK || a.Refused != refusal.BoundsMismatch {
				t.Errorf("answer %+v; want bounds-mismatch", a)
			}
		}},
		{"big-read-fits-a-frame", frame("c7", "read-file", `{"path":"controls.bin"}`), func(t *testing.T, a wire.Answer) {
			if !a.OK || !bytes.Contains(a.Observed, []byte(`"truncated":true`)) {
				t.Errorf("answer refused %s: %s", a.Refused, a.Why)
			}
		}},
	}
	// The worst case for escaping: control characters, each six bytes in JSON.
	write(t, r, "controls.bin", strings.Repeat("\x01", 3*executor.MaxReadBytes))
	for _, c := range cases {
		out := door.Serve(context.Background(), c.frame)
		if out == nil {
			t.Fatalf("%s: no answer", c.name)
		}
		a, err := wire.ParseAnswer(out)
		if err != nil {
			t.Fatalf("%s: the answer %s does not parse: %v", c.name, out, err)
		}
		t.Run(c.name, func(t *testing.T) { c.check(t, a) })
	}
	got, err := r.ReadFile(context.Background(), "new/n.md")
	if err != nil || string(got) != "x" {
		t.Errorf("new/n.md = %q, %v", got, err)
	}
}

func TestFileRefusalNamesEveryKind(t *testing.T) {
	t.Parallel()
	disk := errors.New("disk on fire")
	for _, tt := range []struct {
		err  error
		rule refusal.Rule
	}{
		{fsroot.Err("read", "a", fsroot.ErrIsDir), refusal.IsADirectory},
		{fsroot.Err("mkdir", "a/b", fsroot.ErrNotDir), refusal.NotADirectory},
		{fsroot.Err("read", "a", fs.ErrNotExist), refusal.NotFound},
		{fsroot.Err("remove", "a", fsroot.ErrNotEmpty), refusal.FolderNotEmpty},
		{fsroot.Err("write", "a", fs.ErrExist), refusal.FileExists},
		{fsroot.Err("write", "a", fs.ErrPermission), refusal.PermissionDenied},
		{fsroot.Check("../a"), refusal.OutsideRoot},
		{disk, ""},
	} {
		got := executor.FileRefusal(tt.err, "a")
		if refusal.RuleOf(got) != tt.rule {
			t.Errorf("FileRefusal(%v) = %v, want rule %q", tt.err, got, tt.rule)
		}
		if tt.rule == "" && got != disk {
			t.Errorf("an error that is no rule came back as %v", got)
		}
	}
}
