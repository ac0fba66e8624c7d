//go:build !js

// Package machine is the paired machine environment (`relay env`): it dials a relay's /channel,
// says hello with its bearer, and executes the calls it receives on a directory of this machine
// through the OS root, so no name and no symbolic link reaches outside that directory. Extension
// calls are verified against its own copy of the admitted set, which the relay sends as a
// control frame (channel.AdmittedType) on connecting and after every change.
//
// It reconnects with capped exponential backoff when the connection drops (the relay restarted,
// the network blinked), and stops for good when the relay refuses it (close 1008: the bearer is
// unknown or revoked) or hands the root to a newer executor (close 4001).
//
// The relay runs one itself for VOICEBOX_WORKSPACE (internal/door/workspace), dialing its own
// /channel through memory (Config.Dial).
//
// # Wasm
//
// It does not build for the browser (GOOS=js): it sends its bearer in the dial's HTTP headers,
// which a browser's WebSocket cannot, and executes on this machine's file system. The page's
// executor is internal/engine.
package machine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/pace"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
)

// Backoff bounds: the first retry waits MinBackoff, each failed one doubles it up to MaxBackoff.
const (
	MinBackoff = 100 * time.Millisecond
	MaxBackoff = 10 * time.Second
)

// reconnecting paces the reconnections.
var reconnecting = pace.Backoff{First: MinBackoff, Max: MaxBackoff}

// closeReplaced is the relay's close code for a displaced executor (internal/core/hub.CloseReplaced).
const closeReplaced websocket.StatusCode = 4001

// ErrRefused is returned when the relay refused this environment; it will not be let in by
// trying again.
var ErrRefused = errors.New("machine: the relay refused this environment")

// ErrReplaced is returned when a newer executor took the root.
var ErrReplaced = errors.New("machine: a newer executor holds the root now")

// Config says where to connect and what to serve. Relay, Bearer and Root are required.
type Config struct {
	// Relay is the relay's address: http://host:port (its /channel is dialed) or a ws:// URL.
	Relay string
	// Bearer is the vbx_ bearer `relay pair` minted for this environment. It is sent only in the
	// hello, never logged.
	Bearer string
	// Root is the directory the calls execute on.
	Root fsroot.Root
	// Log receives connection events. Nil discards.
	Log *slog.Logger
	// OnConnect, when set, is called after each hello is sent (tests wait on it).
	OnConnect func()
	// Dial, when set, makes the connections to the relay instead of the network: a relay serving
	// a folder of its own in-process (VOICEBOX_WORKSPACE) dials itself through it, and the
	// environment is otherwise the same.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// ChannelURL turns a relay address into its /channel WebSocket URL.
func ChannelURL(relay string) (string, error) {
	u, err := url.Parse(relay)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("machine: %q is not a relay address like http://127.0.0.1:8787", relay)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	case "ws", "wss":
	default:
		return "", fmt.Errorf("machine: %q: the scheme must be http, https, ws or wss", relay)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/channel"
	}
	return u.String(), nil
}

// Run serves cfg until ctx ends (nil), or the relay refuses (ErrRefused) or replaces
// (ErrReplaced) this environment.
func Run(ctx context.Context, cfg Config) error {
	target, err := ChannelURL(cfg.Relay)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(cfg.Bearer, "vbx_") {
		return errors.New("machine: the bearer must start with vbx_ (the file `relay pair` printed)")
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := executor.Options{Log: log}
	// The undo history lives in the root's hidden .voicebox area; without one, changes still
	// happen but cannot be undone (their observations say so).
	if h, err := executor.OpenHistory(ctx, cfg.Root, executor.HistoryOptions{}); err == nil {
		opts.History = h
	} else {
		log.Warn("machine: no undo history", "err", err)
	}
	admitted := channel.NewLiveAdmitted(executor.BuiltinAdmitted())
	door := channel.NewDoor(executor.New(cfg.Root, opts), admitted, channel.DoorOptions{Log: log})
	attempt := 0 // failed reconnections since the last fresh outage
	for {
		start := time.Now()
		err := session(ctx, target, cfg, door, admitted, log)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrRefused) || errors.Is(err, ErrReplaced) {
			return err
		}
		if time.Since(start) > MaxBackoff {
			attempt = 0 // it was connected for a while: a fresh outage
		}
		wait := reconnecting.Delay(attempt)
		log.Info("machine: connection lost; retrying", "err", err, "in", wait)
		if !pace.Sleep(ctx, wait) {
			return nil
		}
		attempt++
	}
}

// session is one connection: dial, hello, serve until it ends. The admitted set starts empty on
// every connection; the relay sends its own before any call.
func session(ctx context.Context, target string, cfg Config, door *channel.Door, admitted *channel.LiveAdmitted, log *slog.Logger) error {
	admitted.Replace(nil)
	dialCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	// The bearer goes in the upgrade too, so the relay gives this socket a place of its own at
	// once instead of one in the pool of sockets still saying hello, which anyone can fill.
	opts := &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + cfg.Bearer}}}
	if cfg.Dial != nil {
		opts.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: cfg.Dial}}
	}
	ws, _, err := websocket.Dial(dialCtx, target, opts)
	cancel()
	if err != nil {
		return err
	}
	defer ws.CloseNow()
	ws.SetReadLimit(wire.MaxFrameBytes)
	hello, _ := json.Marshal(map[string]string{"type": "hello", "role": "environment", "bearer": cfg.Bearer})
	if err := ws.Write(ctx, websocket.MessageText, hello); err != nil {
		return err
	}
	log.Info("machine: connected", "relay", target)
	if cfg.OnConnect != nil {
		cfg.OnConnect()
	}
	stop := context.AfterFunc(ctx, func() { ws.Close(websocket.StatusNormalClosure, "environment stopping") })
	defer stop()
	// The session's calls end with it: a call still waiting when the connection drops has no one
	// to answer and must not change the folder after the calls of the next session.
	ctx, endCalls := context.WithCancel(ctx)
	defer endCalls()
	r := &reader{ctx: ctx, ws: ws, door: door, admitted: admitted, log: log, end: make(chan error, 1)}
	go r.read()
	return <-r.end
}

// HandOff is how long a call runs on the goroutine that read its frame before another goroutine
// takes over reading the connection. A quick call (a read, a listing: tens of microseconds) is
// served where its frame was read, with no goroutine started for it, and a slow one (a large
// write, a disk that stalls, an answer the relay is slow to take) holds the frames behind it for
// HandOff at most.
const HandOff = time.Millisecond

// reader reads one connection's frames. One goroutine reads at a time: it serves each call
// itself, and when a call outlasts HandOff, a new goroutine reads on and the first ends with
// its call.
type reader struct {
	ctx      context.Context
	ws       *websocket.Conn
	door     *channel.Door
	admitted *channel.LiveAdmitted
	log      *slog.Logger
	refused  atomic.Pointer[error] // the relay's refusal, read when it closes with 1008
	end      chan error            // the session's end, sent once by the goroutine reading then
}

func (r *reader) read() {
	for {
		_, frame, err := r.ws.Read(r.ctx)
		if err != nil {
			r.end <- r.closed(err)
			return
		}
		if r.control(frame) {
			continue
		}
		if !r.call(frame) {
			return // another goroutine reads now
		}
	}
}

// call serves one call frame and sends its answer, and reports whether this goroutine still
// reads the connection: when the call took longer than HandOff, another one took over.
func (r *reader) call(frame []byte) bool {
	var taken atomic.Bool
	t := time.AfterFunc(HandOff, func() {
		if taken.CompareAndSwap(false, true) {
			r.read()
		}
	})
	if answer := r.door.Serve(r.ctx, frame); answer != nil {
		wctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
		r.ws.Write(wctx, websocket.MessageText, answer)
		cancel()
	}
	t.Stop()
	return taken.CompareAndSwap(false, true)
}

// closed is the session's end for the read error err.
func (r *reader) closed(err error) error {
	switch websocket.CloseStatus(err) {
	case websocket.StatusPolicyViolation:
		if refused := r.refused.Load(); refused != nil {
			return *refused
		}
		return ErrRefused
	case closeReplaced:
		return ErrReplaced
	}
	return err
}

// control handles frame if it is a control frame, and reports whether it was. A call envelope
// (channel.Envelope) is recognised by its first bytes, not decoded.
func (r *reader) control(frame []byte) bool {
	if channel.Envelope(frame) {
		return false
	}
	if channel.ControlType(frame) == channel.AdmittedType {
		set, err := channel.ParseAdmitted(frame)
		if err != nil {
			r.log.Warn("machine: a malformed admitted set; admitting no extension until the next", "err", err)
		}
		r.admitted.Replace(set)
		r.log.Info("machine: admitted set", "extensions", r.admitted.IDs())
		return true
	}
	ctl, ok := control(frame)
	if !ok {
		return false
	}
	r.log.Info("machine: control frame", "type", ctl.Type, "refused", ctl.Refused, "why", ctl.Why)
	if ctl.Type == "refused" {
		refused := fmt.Errorf("%w: %s: %s", ErrRefused, ctl.Refused, ctl.Why)
		r.refused.Store(&refused)
	}
	return true
}

type controlFrame struct {
	V       json.RawMessage `json:"v"`
	Type    *string         `json:"type"`
	Refused string          `json:"refused"`
	Why     string          `json:"why"`
}

// control reads a small frame with a "type" and no "v" as a control frame.
func control(frame []byte) (struct{ Type, Refused, Why string }, bool) {
	var out struct{ Type, Refused, Why string }
	if len(frame) > 4<<10 {
		return out, false
	}
	var f controlFrame
	if json.Unmarshal(frame, &f) != nil || f.V != nil || f.Type == nil {
		return out, false
	}
	out.Type, out.Refused, out.Why = *f.Type, f.Refused, f.Why
	return out, true
}
