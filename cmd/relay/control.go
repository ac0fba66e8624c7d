package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/relay"
)

// controlBound bounds one command's request to the relay (a revocation waits for the session's
// sockets to close).
const controlBound = 30 * time.Second

// controlCall sends method path (with body as JSON; {} when nil and method is not GET) to the
// relay serving state, with the host token, and decodes its JSON answer into out. A refusal
// comes back as an error that says the rule and why.
func controlCall(state *hoststate.Dir, method, path string, body, out any) error {
	p := filepath.Join(state.Path(), relay.ControlSocketFile)
	client := &http.Client{Timeout: controlBound, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", p)
		},
	}}
	if body == nil && method != http.MethodGet {
		body = struct{}{} // the relay takes a JSON body with every state change
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, "http://relay"+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	tok, err := os.ReadFile(filepath.Join(state.Path(), hoststate.HostTokenFile))
	if err != nil {
		return fmt.Errorf("read the host token: %w", err)
	}
	req.Header.Set(server.HostTokenHeader, strings.TrimSpace(string(tok)))
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("no relay answers for %s (is `relay serve` running with this --state-dir?): %w", state.Path(), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	var refused struct {
		OK      bool   `json:"ok"`
		Refused string `json:"refused"`
		Why     string `json:"why"`
	}
	if err := json.Unmarshal(b, &refused); err != nil {
		return fmt.Errorf("the relay answered %d with something that is not JSON", resp.StatusCode)
	}
	if !refused.OK {
		return fmt.Errorf("%s: %s", refused.Refused, refused.Why)
	}
	return json.Unmarshal(b, out)
}
