package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/voicebox-go/voicebox/relay/hoststate"
	"github.com/voicebox-go/voicebox/relay/server"
)

// ControlSocketFile is the Unix socket, in the host state directory, on which a serving relay
// also answers its API. `relay sessions` and `relay ticket` reach the running relay through it:
// no address to know, no certificate to trust, and only the state directory's owner can open it
// (the directory is 0700, the socket 0600). The commands still send the host token.
const ControlSocketFile = ".relay.sock"

// controlBound bounds one command's request to the relay (a revocation waits for the session's
// sockets to close).
const controlBound = 30 * time.Second

// listenControl listens on the state directory's control socket. A socket left by a relay that
// died is replaced; one that another running relay answers on is left alone, with an error.
func listenControl(dir string) (net.Listener, error) {
	p := filepath.Join(dir, ControlSocketFile)
	if c, err := net.DialTimeout("unix", p, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("another relay serving this state directory answers on %s; `relay sessions` and `relay ticket` will reach that one", p)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove the stale control socket: %w", err)
	}
	ln, err := net.Listen("unix", p)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}

// controlCall sends method path (with body as JSON when not nil) to the relay serving state,
// with the host token, and decodes its JSON answer into out. A refusal comes back as an error
// that says the rule and why.
func controlCall(state *hoststate.Dir, method, path string, body, out any) error {
	p := filepath.Join(state.Path(), ControlSocketFile)
	client := &http.Client{Timeout: controlBound, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", p)
		},
	}}
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
		return fmt.Errorf("no relay answers for %s (is `relay serve` running with this --extensions-dir?): %w", state.Path(), err)
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
