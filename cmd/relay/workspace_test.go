package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rootHolder returns GET /api/root's kind, name and whether it is connected.
func rootHolder(t testing.TB, url string) (kind, name string, connected bool) {
	t.Helper()
	resp, err := http.Get(url + "/api/root")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Kind, Name string
		Connected  bool
	}
	json.NewDecoder(resp.Body).Decode(&m)
	return m.Kind, m.Name, m.Connected
}

// waitHolder waits until name holds the root, connected.
func waitHolder(t testing.TB, url, name string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if kind, got, ok := rootHolder(t, url); kind == "machine" && got == name && ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	kind, got, ok := rootHolder(t, url)
	t.Fatalf("%q never held the root; it is %s %q (connected %v)", name, kind, got, ok)
}

// TestWorkspaceIsServedAsAMachineRoot: `relay serve --workspace DIR` serves DIR as a paired
// `relay env` would, in-process: a typed turn writes into it, the walls of relay env hold (links
// that lead out, ".."), its pairing is nobody's to list, and a machine that takes the root gives
// it back to the workspace when it leaves.
func TestWorkspaceIsServedAsAMachineRoot(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	root, outside := envDirs(t)
	url, _ := startServe(t, stateDir, "--workspace", root)
	name := "workspace " + filepath.Base(root)
	waitHolder(t, url, name)
	token := hostToken(t, stateDir)

	// A typed turn, as the original's clients send it, writes a file that appears in the folder.
	if err := turnCall(http.DefaultClient, url, "write_file", map[string]string{"name": "todo.txt", "content": "buy milk"}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "todo.txt")); err != nil || string(b) != "buy milk" {
		t.Fatalf("the workspace holds %q, %v", b, err)
	}
	checkEnvironment(t, url, token, root, outside)
	for _, e := range []struct {
		tool string
		args map[string]any
	}{
		{"write-file", map[string]any{"path": "../planted.txt", "content": "x"}},
		{"read-file", map[string]any{"path": "../" + filepath.Base(outside) + "/secret.txt"}},
		{"write-file", map[string]any{"path": "notes/../../planted.txt", "content": "x"}},
	} {
		if got := rootCall(t, url, token, e.tool, e.args); got["ok"] != false || got["refused"] == nil {
			t.Errorf("%s %v: %v; want a refusal", e.tool, e.args, got)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), "planted.txt")); err == nil {
		t.Fatal("a file was planted beside the workspace")
	}

	// The in-process pairing is the relay's alone: `relay pair --list` does not show it.
	var list bytes.Buffer
	if code := run([]string{"pair", "--state-dir", stateDir, "--list"}, &list, io.Discard); code != 0 || strings.Contains(list.String(), "workspace") {
		t.Fatalf("relay pair --list exited %d and printed %q", code, list.String())
	}

	// A paired machine takes the root (the newest executor wins); when it leaves, the workspace
	// takes it back by itself and serves again.
	other := t.TempDir()
	bearerFile := pairBearerFile(t, stateDir, "box")
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() {
		exit <- envUntil(ctx, []string{"--relay", url, "--bearer-file", bearerFile, "--root", other}, io.Discard, io.Discard, nil)
	}()
	waitHolder(t, url, "box")
	if got := rootCall(t, url, token, "write-file", map[string]any{"path": "box.txt", "content": "on the box"}); got["ok"] != true {
		t.Fatalf("write on the machine: %v", got)
	}
	cancel()
	select {
	case <-exit:
	case <-time.After(20 * time.Second):
		t.Fatal("relay env did not stop")
	}
	waitHolder(t, url, name)
	if got := rootCall(t, url, token, "write-file", map[string]any{"path": "back.txt", "content": "home"}); got["ok"] != true {
		t.Fatalf("write after the workspace took the root back: %v", got)
	}
	if _, err := os.Stat(filepath.Join(root, "back.txt")); err != nil {
		t.Fatalf("the workspace did not get the write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "box.txt")); err == nil {
		t.Fatal("the machine's write landed in the workspace")
	}
}

// TestWorkspaceFromTheEnvironment: VOICEBOX_WORKSPACE names the folder when --workspace does
// not, and a folder that does not exist is a usage error (a declaration, never made).
func TestWorkspaceFromTheEnvironment(t *testing.T) {
	root := t.TempDir()
	t.Setenv("VOICEBOX_WORKSPACE", root)
	url, _ := startServe(t, filepath.Join(t.TempDir(), "state"))
	waitHolder(t, url, "workspace "+filepath.Base(root))

	missing := filepath.Join(t.TempDir(), "nowhere")
	var errOut bytes.Buffer
	if code := serveUntil(context.Background(), []string{"--addr", "127.0.0.1:0", "--state-dir", t.TempDir(), "--workspace", missing}, io.Discard, &errOut); code != 2 || !strings.Contains(errOut.String(), "not a folder") {
		t.Fatalf("a missing workspace: exit %d, %q", code, errOut.String())
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("the missing workspace was made")
	}
}
