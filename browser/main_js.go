package main

import (
	"fmt"
	"time"

	"github.com/hack-pad/safejs"
)

func main() {
	if err := serve(safejs.Global(), newAPI(time.Now())); err != nil {
		fmt.Println("voicebox worker:", err)
		return
	}
	select {}
}

// serve answers the messages that reach endpoint (the worker's global scope, or a MessagePort in
// tests): it takes over endpoint.onmessage, answers what arrived before it started (the
// endpoint's voiceboxInbox, if any), and says ready.
func serve(endpoint safejs.Value, a *api) error {
	jsonObj, err := safejs.Global().Get("JSON")
	if err != nil {
		return err
	}
	reply := func(b []byte) {
		if b == nil {
			return
		}
		v, err := jsonObj.Call("parse", string(b))
		if err == nil {
			_, err = endpoint.Call("postMessage", v)
		}
		if err != nil {
			fmt.Println("voicebox worker: could not answer:", err)
		}
	}
	receive := func(data safejs.Value) {
		text, err := jsonObj.Call("stringify", data)
		if err != nil || text.Type() != safejs.TypeString {
			fmt.Println("voicebox worker: dropped a message that is not JSON data")
			return
		}
		s, _ := text.String()
		go func() {
			out := a.handle([]byte(s))
			if out == nil {
				fmt.Println("voicebox worker: dropped a message with no numeric id")
			}
			reply(out)
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
	reply(readyMessage())
	return nil
}
