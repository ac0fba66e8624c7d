//go:build !js

package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// PostAPI posts body as JSON to relay+path, with the host token when token is not "", and
// decodes the answer whatever its status.
func PostAPI(t testing.TB, relay, path, token, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", relay+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("X-Voicebox-Host-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("POST %s answered %d %q", path, resp.StatusCode, b)
	}
	return m
}

// GetListing reads GET /api/extensions: the listing.
func GetListing(t testing.TB, relay string) map[string]any {
	t.Helper()
	resp, err := http.Get(relay + "/api/extensions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Extensions map[string]any `json:"extensions"`
	}
	json.NewDecoder(resp.Body).Decode(&m)
	return m.Extensions
}

// PlanTools returns the tools the plan of waiting proposal id admits, or nil.
func PlanTools(l map[string]any, id string) []string {
	pending, _ := l["pending"].([]any)
	for _, p := range pending {
		e, _ := p.(map[string]any)
		plan, _ := e["plan"].(map[string]any)
		m, _ := plan["mcp"].(map[string]any)
		if e["id"] != id || m == nil {
			continue
		}
		var out []string
		tools, _ := m["tools"].([]any)
		for _, x := range tools {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	return nil
}

// OfferedTools returns the tools admitted extension id offers now.
func OfferedTools(l map[string]any, id string) []string {
	admitted, _ := l["admitted"].([]any)
	var out []string
	for _, a := range admitted {
		e, _ := a.(map[string]any)
		if e["id"] != id {
			continue
		}
		tools, _ := e["tools"].([]any)
		for _, x := range tools {
			out = append(out, fmt.Sprint(x.(map[string]any)["name"]))
		}
	}
	return out
}

// WaitListing polls the relay's listing until cond holds (the bound is generous, no assertion
// of speed).
func WaitListing(t testing.TB, relay, what string, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(ReadyBound); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if l := GetListing(t, relay); cond(l) {
			return l
		}
	}
	b, _ := json.Marshal(GetListing(t, relay))
	t.Fatalf("never: %s\n%s", what, b)
	return nil
}

// AdmitRemote sideloads a remote MCP descriptor, admits it, waits for the server's tools to be
// staged as a new plan, and admits that.
func AdmitRemote(t testing.TB, relay *Relay, token, raw, id string) []string {
	t.Helper()
	if m := PostAPI(t, relay.URL, "/api/extensions/sideload", "", raw); m["staged"] != id {
		t.Fatalf("sideload: %v", m)
	}
	decide := `{"id":"` + id + `","decision":"admit","confirm":true}`
	if m := PostAPI(t, relay.URL, "/api/extensions/admit", token, decide); m["ok"] != true {
		t.Fatalf("admit: %v", m)
	}
	l := WaitListing(t, relay.URL, "the server's tools staged", func(l map[string]any) bool { return len(PlanTools(l, id)) > 0 })
	tools := PlanTools(l, id)
	if m := PostAPI(t, relay.URL, "/api/extensions/admit", token, decide); m["ok"] != true {
		t.Fatalf("admit the tools: %v", m)
	}
	WaitListing(t, relay.URL, "the tools offered", func(l map[string]any) bool { return len(OfferedTools(l, id)) == len(tools) })
	return tools
}

// StartListeningNode runs node with args on a free loopback port (its PORT), ended with the test
// and with the test binary, and returns its host:port once a line it prints (on stderr when
// onStderr, else stdout) says it is listening, within bound.
func StartListeningNode(t testing.TB, what string, onStderr bool, bound time.Duration, args ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: %v", err)
	}
	port := RestartablePort(t)
	cmd := exec.Command(node, args...)
	cmd.Env = append(os.Environ(), "PORT="+port, "NODE_ENV=production")
	var said io.Reader
	if onStderr {
		cmd.Stdout = io.Discard
		said, _ = cmd.StderrPipe()
	} else {
		cmd.Stderr = io.Discard
		said, _ = cmd.StdoutPipe()
	}
	DieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(said)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening") {
				select {
				case listening <- true:
				default:
				}
			}
		}
		close(listening)
	}()
	select {
	case ok := <-listening:
		if !ok {
			t.Fatalf("%s ended before it listened", what)
		}
	case <-time.After(bound):
		t.Fatalf("%s did not say it listens", what)
	}
	return "127.0.0.1:" + port
}
