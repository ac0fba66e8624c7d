//go:build !js

package executor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/executor/executortest"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

func init() {
	benchRoots = append(benchRoots, struct {
		name string
		open func(b *testing.B) fsroot.Root
	}{"os", func(b *testing.B) fsroot.Root { return openOS(b) }})
}

func openOS(t testing.TB) *fsroot.OSRoot {
	r, err := fsroot.OpenOS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestOSRootAudit keeps the audit log in the OS root's .voicebox folder, on disk, where the
// executor's own tools cannot reach it.
func TestOSRootAudit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := openOS(t)
	log, err := executor.OpenRootAudit(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	e := executor.New(root, executor.Options{Audit: log})
	mustRun(t, e, "write-file", `{"path":"notes/a.md","content":"x"}`)
	data, err := os.ReadFile(filepath.Join(root.Name(), fsroot.MetaDir, executor.AuditDir, "00000001.jsonl"))
	if err != nil || len(data) == 0 {
		t.Fatalf("the audit segment on disk: %q, %v", data, err)
	}
	if _, err := run(t, e, "list-files", `{"dir":".voicebox/audit"}`); refusal.RuleOf(err) != refusal.DotfileRefused {
		t.Errorf("listing the audit folder = %v; want dotfile-refused", err)
	}
	if got := mustRun(t, e, "list-files", `{}`); got["count"] != 1.0 {
		t.Errorf("the workspace lists %v; want only notes", got["entries"])
	}
}

// TestOSSymlinkEscapeThroughExecutor refuses a read through a link that leads outside.
func TestOSSymlinkEscapeThroughExecutor(t *testing.T) {
	t.Parallel()
	root := openOS(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "passwd"), []byte("root:x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root.Name(), "etc")); err != nil {
		t.Fatal(err)
	}
	e := executor.New(root, executor.Options{})
	for _, c := range []struct{ tool, args string }{
		{"read-file", `{"path":"etc/passwd"}`},
		{"write-file", `{"path":"etc/passwd","content":"pwned"}`},
		{"list-files", `{"dir":"etc"}`},
	} {
		if _, err := run(t, e, c.tool, c.args); refusal.RuleOf(err) != refusal.OutsideRoot {
			t.Errorf("%s %s = %v; want outside-root", c.tool, c.args, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "passwd")); string(b) != "root:x" {
		t.Errorf("the outside file changed: %q", b)
	}
}

// TestAssistantPrimitivesOnOS runs the history suite on the OS root: the history lives in the
// folder's .voicebox directory on disk.
func TestAssistantPrimitivesOnOS(t *testing.T) {
	t.Parallel()
	executortest.Run(t, func(t *testing.T) fsroot.Root { return openOS(t) }, executortest.Options{})
}

// TestOSGrepThroughFolderLinksThatLoop: links in a folder that lead back to it make every depth
// as many times wider (os.Root follows a few links deep, which with eight of them is still 8^8
// folders); the search stops at its folder bound and answers, truncated.
func TestOSGrepThroughFolderLinksThatLoop(t *testing.T) {
	t.Parallel()
	root := openOS(t)
	loop := filepath.Join(root.Name(), "loop")
	if err := os.Mkdir(loop, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if err := os.Symlink(".", filepath.Join(loop, fmt.Sprint("link", i))); err != nil {
			t.Fatal(err)
		}
	}
	got := mustRun(t, executor.New(root, executor.Options{}), "grep-files", `{"query":"milk"}`)
	if got["truncated"] != true {
		t.Fatalf("grep through looping links observed %v", got)
	}
}
