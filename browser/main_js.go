package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hack-pad/safejs"

	"voicebox/internal/jsutil"
	"voicebox/opfs"
	"voicebox/shared/fsroot"
)

// opfsWorkspace is the OPFS directory that is the workspace when the user picks browser storage.
// Host-owned areas live beside it, out of the tools' reach.
const opfsWorkspace = "workspace"

func main() {
	if err := serve(safejs.Global(), newAPI(time.Now(), openRoot)); err != nil {
		fmt.Println("voicebox worker:", err)
		return
	}
	select {}
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
		h, ok := handle.(safejs.Value)
		if !ok || h.Type() != safejs.TypeObject {
			return nil, RootInfo{}, errors.New("the handle is not a directory handle")
		}
		if k, _ := h.Get("kind"); !k.Equal(must(safejs.ValueOf("directory"))) {
			return nil, RootInfo{}, errors.New("the handle is not a directory handle")
		}
		name := ""
		if n, err := h.Get("name"); err == nil {
			name, _ = n.String()
		}
		r := opfs.FromHandle(h)
		return r, RootInfo{Kind: kind, Name: name, SyncHandles: r.UsesSyncHandles()}, nil
	}
	return nil, RootInfo{}, fmt.Errorf("unknown root kind %q", kind)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// serve answers the messages that reach endpoint (the worker's global scope, or a MessagePort in
// tests): it takes over endpoint.onmessage, answers what arrived before it started (the
// endpoint's voiceboxInbox, if any), and says ready.
func serve(endpoint safejs.Value, a *api) error {
	jsonObj, err := safejs.Global().Get("JSON")
	if err != nil {
		return err
	}
	post := func(b []byte, bytes []byte) {
		v, err := jsonObj.Call("parse", string(b))
		if err != nil {
			fmt.Println("voicebox worker: could not answer:", err)
			return
		}
		var transfer []any
		if bytes != nil {
			arr, err := jsutil.BytesToJS(bytes)
			if err == nil {
				value, _ := v.Get("value")
				err = value.Set("bytes", arr)
				buf, _ := arr.Get("buffer")
				transfer = append(transfer, buf)
			}
			if err != nil {
				fmt.Println("voicebox worker: could not attach bytes:", err)
			}
		}
		if transfer != nil {
			_, err = endpoint.Call("postMessage", v, transfer)
		} else {
			_, err = endpoint.Call("postMessage", v)
		}
		if err != nil {
			fmt.Println("voicebox worker: could not answer:", err)
		}
	}
	receive := func(data safejs.Value) {
		req, bytes, object, err := splitMessage(data)
		if err != nil {
			fmt.Println("voicebox worker: dropped a message:", err)
			return
		}
		text, err := jsonObj.Call("stringify", req)
		if err != nil || text.Type() != safejs.TypeString {
			fmt.Println("voicebox worker: dropped a message that is not JSON data")
			return
		}
		s, _ := text.String()
		go func() {
			id, r, ref, ok := parse([]byte(s))
			if !ok {
				fmt.Println("voicebox worker: dropped a message with no numeric id")
				return
			}
			if ref != nil {
				post(encode(refused(id, ref)), nil)
				return
			}
			r.Bytes, r.Object = bytes, object
			ans, out := a.call(context.Background(), id, r)
			if !ans.OK {
				out = nil
			}
			post(encode(ans), out)
		}()
	}
	onMessage, err := safejs.FuncOf(func(_ safejs.Value, args []safejs.Value) any {
		if len(args) > 0 {
			if data, err := args[0].Get("data"); err == nil {
				receive(data)
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
				receive(v)
			}
		}
		endpoint.Delete("voiceboxInbox")
	}
	post(readyMessage(), nil)
	return nil
}

// splitMessage takes params.bytes (a Uint8Array or ArrayBuffer) and params.handle (a JS object)
// out of a message, returning a shallow copy without them for JSON encoding.
func splitMessage(data safejs.Value) (msg safejs.Value, bytes []byte, object any, err error) {
	if data.Type() != safejs.TypeObject {
		return data, nil, nil, nil
	}
	params, err := data.Get("params")
	if err != nil || params.Type() != safejs.TypeObject {
		return data, nil, nil, nil
	}
	objectCtor, err := safejs.Global().Get("Object")
	if err != nil {
		return safejs.Value{}, nil, nil, err
	}
	copyOf := func(v safejs.Value) (safejs.Value, error) {
		return objectCtor.Call("assign", jsutil.Object(map[string]any{}), v)
	}
	if msg, err = copyOf(data); err != nil {
		return safejs.Value{}, nil, nil, err
	}
	rest, err := copyOf(params)
	if err != nil {
		return safejs.Value{}, nil, nil, err
	}
	if b, err := params.Get("bytes"); err == nil && !b.IsUndefined() {
		if bytes, err = jsutil.BytesToGo(b); err != nil {
			return safejs.Value{}, nil, nil, fmt.Errorf("params.bytes is not binary data: %w", err)
		}
		if bytes == nil {
			bytes = []byte{}
		}
		rest.Delete("bytes")
	}
	if h, err := params.Get("handle"); err == nil && h.Type() == safejs.TypeObject {
		object = h
		rest.Delete("handle")
	}
	if err := msg.Set("params", rest); err != nil {
		return safejs.Value{}, nil, nil, err
	}
	return msg, bytes, object, nil
}
