//go:build !js

package hostile

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestTheWorkspaceFolderIsTheOnlyFolderItsToolsReach: a relay serving its own folder
// (VOICEBOX_WORKSPACE, the workspace door) is attacked as a paired `relay env` is: typed turns
// and root calls name files through links that lead out of the folder and with "..". Each is
// refused outside-root, nothing outside changes or appears, and the next write lands in the
// folder.
func TestTheWorkspaceFolderIsTheOnlyFolderItsToolsReach(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dir, outside := filepath.Join(parent, "workspace"), filepath.Join(parent, "outside")
	for _, d := range []string{dir, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("notes"), 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "secret-link")); err != nil {
		t.Fatal(err)
	}
	relay := harness.StartRelay(t, "VOICEBOX_WORKSPACE="+dir)
	waitFor(t, "the workspace to hold the root", func() bool { return rootKind(t, relay) == "machine" })

	turn := func(action string) reply {
		return send(t, nil, http.MethodPost, relay.URL+"/api/turn", map[string]string{"Content-Type": "application/json"}, `{"action":`+action+`}`)
	}
	for _, action := range []string{
		`{"verb":"read_file","name":"secret-link"}`,
		`{"verb":"read_file","name":"out/secret.txt"}`,
		`{"verb":"read_file","name":"../outside/secret.txt"}`,
		`{"verb":"write_file","name":"out/secret.txt","content":"overwritten"}`,
		`{"verb":"write_file","name":"out/planted.txt","content":"planted"}`,
		`{"verb":"write_file","name":"../planted.txt","content":"planted"}`,
		`{"verb":"list_files","dir":"out"}`,
	} {
		r := turn(action)
		if r.m["ok"] != false || r.m["refused"] != "outside-root" {
			t.Errorf("turn %s: %d %s; want refused outside-root", action, r.status, r.body)
		}
	}
	for _, c := range []struct {
		tool string
		args map[string]string
	}{
		{"read-file", map[string]string{"path": "notes/../../outside/secret.txt"}},
		{"write-file", map[string]string{"path": "../outside/new.txt", "content": "planted"}},
		{"move-file", map[string]string{"path": "notes.txt", "to": "out/notes.txt"}},
		{"move-file", map[string]string{"path": "notes.txt", "to": "../notes.txt"}},
		{"create-folder", map[string]string{"path": "out/made"}},
	} {
		if a := relay.Call(t, c.tool, c.args); a.OK || a.Refused != "outside-root" {
			t.Errorf("%s %v: %s; want refused outside-root", c.tool, c.args, a.Raw)
		}
	}
	// The wall: nothing outside changed or appeared, nothing left the folder.
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "outside" {
		t.Errorf("the file outside now holds %q", b)
	}
	for _, p := range []string{filepath.Join(outside, "planted.txt"), filepath.Join(outside, "new.txt"), filepath.Join(outside, "notes.txt"),
		filepath.Join(outside, "made"), filepath.Join(parent, "planted.txt"), filepath.Join(parent, "notes.txt")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was made outside the workspace", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "notes" {
		t.Errorf("notes.txt now holds %q", b)
	}
	// The next legitimate request is served, in the folder.
	if r := turn(`{"verb":"write_file","name":"todo.txt","content":"buy milk"}`); r.m["ok"] != true {
		t.Fatalf("a legitimate write: %d %s", r.status, r.body)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "todo.txt")); string(b) != "buy milk" {
		t.Fatalf("the workspace's todo.txt holds %q", b)
	}
	served(t, relay)
}
