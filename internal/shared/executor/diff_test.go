package executor_test

import (
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// TestDiffFile: diff-file (the original's diff_file) compares proposed content with the file and
// changes nothing; a missing file compares as empty; bad input gets its named refusal.
func TestDiffFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		setup   func(t *testing.T, r *fsroot.MemRoot)
		args    string
		rule    refusal.Rule
		existed bool
		changed bool
		diff    []string // lines the diff must hold, in order
		empty   bool     // the diff is ""
	}{
		{name: "a changed line", setup: func(t *testing.T, r *fsroot.MemRoot) { write(t, r, "notes.md", "one\ntwo\nthree\n") },
			args: `{"path":"notes.md","content":"one\nTWO\nthree\n"}`, existed: true, changed: true,
			diff: []string{"--- a/notes.md", "+++ b/notes.md", "@@ -1,3 +1,3 @@", " one", "-two", "+TWO", " three"}},
		{name: "identical content", setup: func(t *testing.T, r *fsroot.MemRoot) { write(t, r, "same.txt", "x\n") },
			args: `{"path":"same.txt","content":"x\n"}`, existed: true, changed: false, empty: true},
		{name: "a file that does not exist compares as empty",
			args: `{"path":"new/plan.txt","content":"hello\n"}`, existed: false, changed: true,
			diff: []string{"--- a/new/plan.txt", "+++ b/new/plan.txt", "+hello"}},
		{name: "empty content for a missing file", args: `{"path":"nothing.txt","content":""}`, existed: false, changed: false, empty: true},
		{name: "everything removed", setup: func(t *testing.T, r *fsroot.MemRoot) { write(t, r, "gone.txt", "a\nb\n") },
			args: `{"path":"gone.txt","content":""}`, existed: true, changed: true, diff: []string{"-a", "-b"}},
		{name: "missing content", args: `{"path":"a.txt"}`, rule: refusal.MissingArgument},
		{name: "missing path", args: `{"content":"x"}`, rule: refusal.MissingArgument},
		{name: "content not a string", args: `{"path":"a.txt","content":3}`, rule: refusal.InvalidArgumentType},
		{name: "an unknown argument", args: `{"path":"a.txt","content":"x","mode":"w"}`, rule: refusal.InvalidArgument},
		{name: "outside the root", args: `{"path":"../etc/passwd","content":"x"}`, rule: refusal.OutsideRoot},
		{name: "a dot name", args: `{"path":".env","content":"x"}`, rule: refusal.DotfileRefused},
		{name: "a folder", setup: func(t *testing.T, r *fsroot.MemRoot) { mkdir(t, r, "docs") },
			args: `{"path":"docs","content":"x"}`, rule: refusal.IsADirectory},
		{name: "proposed content over the bound", args: `{"path":"a.txt","content":"` + strings.Repeat("x", executor.MaxDiffInputBytes+1) + `"}`, rule: refusal.DiffTooLarge},
		{name: "a file over the bound", setup: func(t *testing.T, r *fsroot.MemRoot) {
			write(t, r, "big.txt", strings.Repeat("y", executor.MaxDiffInputBytes+1))
		},
			args: `{"path":"big.txt","content":"x"}`, rule: refusal.DiffTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, root := newExec(t, executor.Options{})
			if tt.setup != nil {
				tt.setup(t, root)
			}
			before := snapshot(t, root)
			m, err := run(t, e, "diff-file", tt.args)
			if after := snapshot(t, root); after != before {
				t.Fatalf("diff-file changed the workspace: %s, then %s", before, after)
			}
			if tt.rule != "" {
				if refusal.RuleOf(err) != tt.rule {
					t.Fatalf("err = %v, want %s", err, tt.rule)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m["existed"] != tt.existed || m["changed"] != tt.changed || m["truncated"] != false {
				t.Fatalf("observation %v, want existed %v changed %v", m, tt.existed, tt.changed)
			}
			d, _ := m["diff"].(string)
			if tt.empty != (d == "") {
				t.Fatalf("diff %q, want empty %v", d, tt.empty)
			}
			at := 0
			lines := strings.Split(d, "\n")
			for _, want := range tt.diff {
				for at < len(lines) && lines[at] != want {
					at++
				}
				if at == len(lines) {
					t.Fatalf("the diff lacks %q in order:\n%s", want, d)
				}
			}
		})
	}
}

// TestDiffFileIsCut: a diff longer than MaxDiffBytes is cut at a line and says so.
func TestDiffFileIsCut(t *testing.T) {
	t.Parallel()
	e, root := newExec(t, executor.Options{})
	write(t, root, "long.txt", strings.Repeat("old line of text\n", 8000))
	m := mustRun(t, e, "diff-file", `{"path":"long.txt","content":`+jsonString(strings.Repeat("new line of text\n", 8000))+`}`)
	d := m["diff"].(string)
	if m["truncated"] != true || len(d) > executor.MaxDiffBytes || !strings.HasSuffix(d, "\n") {
		t.Fatalf("truncated %v, %d bytes, ends %q", m["truncated"], len(d), d[len(d)-10:])
	}
}

// snapshot lists every file of r with its content.
func snapshot(t *testing.T, r *fsroot.MemRoot) string {
	t.Helper()
	var b strings.Builder
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := r.ReadDir(t.Context(), dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			p := e.Name
			if dir != "" {
				p = dir + "/" + p
			}
			if e.Dir {
				walk(p)
				continue
			}
			data, _ := r.ReadFile(t.Context(), p)
			b.WriteString(p + "=" + string(data) + ";")
		}
	}
	walk("")
	return b.String()
}
