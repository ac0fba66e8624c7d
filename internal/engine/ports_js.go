package engine

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hack-pad/safejs"
)

// jsPort is a MessagePort a mini-app's bridge made and the page transferred to the worker.
type jsPort struct {
	port safejs.Value
	json safejs.Value
	fn   safejs.Func
	once sync.Once
}

// openPort starts the MessagePort obj: each message's data is given to receive as JSON text
// (nil when JSON.stringify cannot take it), in the port's event, one after another.
func openPort(obj any, receive func([]byte)) (AppPort, error) {
	v, ok := obj.(safejs.Value)
	if !ok || v.Type() != safejs.TypeObject {
		return nil, errors.New("not an object")
	}
	if pm, err := v.Get("postMessage"); err != nil || pm.Type() != safejs.TypeFunction {
		return nil, errors.New("it has no postMessage")
	}
	jsonObj, err := safejs.Global().Get("JSON")
	if err != nil {
		return nil, err
	}
	fn, err := safejs.FuncOf(func(_ safejs.Value, args []safejs.Value) any {
		var msg []byte
		if len(args) > 0 {
			if data, err := args[0].Get("data"); err == nil {
				if text, err := jsonObj.Call("stringify", data); err == nil && text.Type() == safejs.TypeString {
					s, _ := text.String()
					msg = []byte(s)
				}
			}
		}
		receive(msg)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Setting onmessage starts the port: messages the bridge sent before now are delivered.
	if err := v.Set("onmessage", fn.Value()); err != nil {
		fn.Release()
		return nil, fmt.Errorf("its onmessage cannot be set: %w", err)
	}
	return &jsPort{port: v, json: jsonObj, fn: fn}, nil
}

// Post sends msg (JSON) to the bridge.
func (p *jsPort) Post(msg []byte) error {
	v, err := p.json.Call("parse", string(msg))
	if err != nil {
		return err
	}
	_, err = p.port.Call("postMessage", v)
	return err
}

// Close ends the port; later calls do nothing.
func (p *jsPort) Close() {
	p.once.Do(func() {
		_ = p.port.Set("onmessage", safejs.Null())
		_, _ = p.port.Call("close")
		p.fn.Release()
	})
}
