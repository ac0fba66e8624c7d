package engine

import (
	"context"
	"errors"

	"github.com/voicebox-go/voicebox/internal/jsutil"
	"github.com/voicebox-go/voicebox/internal/opfs"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
)

// opfsWorkspace is the OPFS directory that is the workspace when the user picks browser storage.
// Host-owned areas live beside it, out of the tools' reach.
const opfsWorkspace = "workspace"

// opfsShelf is the OPFS directory of saved mini-apps: host-owned, so no tool reaches it.
const opfsShelf = "shelf"

// Run starts the page's engine in the worker it runs in: it answers the page's messages on the
// worker's global scope (see Serve), opens roots in OPFS or from a picked directory handle, keeps
// saved mini-apps in OPFS, and dials the relay's /channel beside the page. It returns once the
// engine serves; the caller keeps the program alive.
func Run(build string) error {
	global := jsutil.Global()
	out, err := newPoster(global)
	if err != nil {
		return err
	}
	a := New(Options{Build: build, OpenRoot: openRoot, Post: func(msg []byte) { out.post(msg, nil) }, Wasm: newWorkerRunner(wasmRunnerScript), Ports: openPort,
		OpenShelf: func(ctx context.Context) (fsroot.Root, error) { return opfs.OpenOPFS(ctx, opfsShelf) }})
	if url, err := channelURL(global); err == nil {
		a.relay.peer = newPeer(url, dialConn, func(st PeerState) {
			out.post(st.appendJSON(nil), nil)
		})
		go a.relay.peer.Run(context.Background())
	} else {
		print(textf.Sprintf("voicebox worker: no /channel: %v\n", err))
	}
	return serve(global, a, out)
}

// channelURL is the relay's /channel beside the page that started this worker.
func channelURL(global jsutil.Value) (string, error) {
	loc, err := global.Get("location")
	if err != nil {
		return "", err
	}
	proto, err := loc.Get("protocol")
	if err != nil {
		return "", err
	}
	host, err := loc.Get("host")
	if err != nil {
		return "", err
	}
	p, _ := proto.String()
	h, _ := host.String()
	scheme := "ws:"
	if p == "https:" {
		scheme = "wss:"
	}
	if h == "" {
		return "", errors.New("the worker has no host")
	}
	// Calls as binary messages: they reach Go as bytes, with no JavaScript string made of them
	// (hub.FramesQuery; a relay that does not know it sends text, which the socket reads too).
	return scheme + "//" + h + "/channel?frames=binary", nil
}

func dialConn(ctx context.Context, url string) (conn, error) {
	return dialSocket(ctx, url)
}

// poster posts JSON messages (and bytes beside them) to the page: as their text, which the
// page's worker-client.js parses (one crossing out of Go for a message, where parsing it here
// took a JSON.parse call and an object handed back into Go first), and, with bytes, as
// {json: text, bytes}, the bytes' buffer transferred (the page puts them at value.bytes).
type poster struct {
	endpoint jsutil.Value
}

func newPoster(endpoint jsutil.Value) (*poster, error) {
	return &poster{endpoint: endpoint}, nil
}

// openRoot opens the workspace root the page asked for.
func openRoot(ctx context.Context, kind string, handle any) (fsroot.Root, RootInfo, error) {
	switch kind {
	case "opfs":
		r, err := opfs.OpenOPFS(ctx, opfsWorkspace)
		if err != nil {
			return nil, RootInfo{}, err
		}
		return r, RootInfo{Kind: kind, Name: "Browser storage", SyncHandles: r.UsesSyncHandles()}, nil
	case "handle":
		h, ok := handle.(jsutil.Value)
		if !ok || h.Type() != jsutil.TypeObject {
			return nil, RootInfo{}, errors.New("the handle is not a directory handle")
		}
		if k, err := h.Get("kind"); err != nil || k.Type() != jsutil.TypeString {
			return nil, RootInfo{}, errors.New("the handle is not a file system handle")
		} else if kind, _ := k.String(); kind != "directory" {
			return nil, RootInfo{}, errors.New("the handle is not a directory handle")
		}
		name := ""
		if n, err := h.Get("name"); err == nil {
			name, _ = n.String()
		}
		r := opfs.FromHandle(h)
		return r, RootInfo{Kind: kind, Name: name, SyncHandles: r.UsesSyncHandles()}, nil
	}
	return nil, RootInfo{}, textf.Errorf("unknown root kind %q", kind)
}

// serve answers the messages that reach endpoint (the worker's global scope, or a MessagePort in
// tests): it takes over endpoint.onmessage, answers what arrived before it started (the
// endpoint's voiceboxInbox, if any), and says ready.
func serve(endpoint jsutil.Value, a *Engine, out *poster) error {
	post := out.post
	calls := newWorkers()
	onMessage, err := jsutil.FuncOf(func(_ jsutil.Value, args []jsutil.Value) any {
		if len(args) > 0 {
			if data, err := args[0].Get("data"); err == nil {
				receive(a, calls, post, data)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := endpoint.Set("onmessage", onMessage.Value()); err != nil {
		return err
	}
	if inbox, err := endpoint.Get("voiceboxInbox"); err == nil && !inbox.IsUndefined() && !inbox.IsNull() {
		n, _ := inbox.Length()
		for i := range n {
			if v, err := inbox.Index(i); err == nil {
				receive(a, calls, post, v)
			}
		}
		endpoint.Delete("voiceboxInbox")
	}
	post(a.readyMessage(), nil)
	return nil
}

// post sends a JSON message to the page, with bytes (if any) beside it, transferred.
func (out *poster) post(b []byte, bytes []byte) {
	args := []any{string(b)}
	if bytes != nil {
		arr, err := jsutil.BytesToJS(bytes)
		var buf jsutil.Value
		if err == nil {
			buf, err = arr.Get("buffer")
		}
		if err != nil {
			print(textf.Sprintf("voicebox worker: could not attach bytes: %v\n", err))
		} else {
			args = []any{map[string]any{"json": string(b), "bytes": arr}, []any{buf}}
		}
	}
	if _, err := out.endpoint.Call("postMessage", args...); err != nil {
		print(textf.Sprintf("voicebox worker: could not answer: %v\n", err))
	}
}

// receive answers one message from the page, on a goroutine of calls.
func receive(a *Engine, calls *workers, post func([]byte, []byte), data jsutil.Value) {
	text, bytes, object, err := splitMessage(data)
	if err != nil {
		print(textf.Sprintf("voicebox worker: dropped a message: %v\n", err))
		return
	}
	id, r, ref, ok := parse(text)
	if !ok {
		print("voicebox worker: dropped a message with no numeric id\n")
		return
	}
	if ref != nil {
		post(encode(refused(id, ref)), nil)
		return
	}
	r.Bytes, r.Object = bytes, object
	serveOne := func() {
		ans, out := a.call(context.Background(), id, r)
		if !ans.OK {
			out = nil
		}
		post(encode(ans), out)
	}
	if r.Method == PortMethod {
		// In the order it came: a register or a call sent after it must find the port bound.
		serveOne()
		return
	}
	calls.run(serveOne)
}

// splitMessage reads a call as the page's worker-client.js posts it (wrap there): its JSON text,
// or {call: text, bytes, object} when it carries what JSON cannot, params.bytes (a Uint8Array or
// ArrayBuffer, copied into Go) or params.handle / params.port (a JS object, kept as it is). A
// call is read with as few crossings into JavaScript as it takes: each costs Go's js bridge a
// call and, for every object or string it hands back, a finalizer run by a later collection.
func splitMessage(data jsutil.Value) (text []byte, bytes []byte, object any, err error) {
	call := data
	if data.Type() == jsutil.TypeObject {
		if call, err = data.Get("call"); err != nil {
			return nil, nil, nil, err
		}
		if b, err := data.Get("bytes"); err == nil && !b.IsUndefined() {
			if bytes, err = jsutil.BytesToGo(b); err != nil {
				return nil, nil, nil, textf.Errorf("bytes is not binary data: %w", err)
			}
			if bytes == nil {
				bytes = []byte{}
			}
		}
		if o, err := data.Get("object"); err == nil && o.Type() == jsutil.TypeObject {
			object = o
		}
	}
	if call.Type() != jsutil.TypeString {
		return nil, nil, nil, errors.New("a call is JSON text, or {call: text, bytes, object}")
	}
	s, err := call.String()
	return []byte(s), bytes, object, err
}
