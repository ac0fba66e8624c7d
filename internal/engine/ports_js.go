package engine

import (
	"errors"
	"sync"

	"github.com/voicebox-go/voicebox/internal/jsutil"
)

// jsPort is the worker's end of a mini-app document's direct port, opened through app-port.js
// (worker.js sets it as self.voiceboxOpenAppPort before Go starts), which charges every message
// the app sends to its message budget before Go reads it.
type jsPort struct {
	end      jsutil.Value // {post(text, callId, owe), close()}
	receive  jsutil.Func
	over     jsutil.Func
	once     sync.Once
	released sync.Once
}

// openPort starts the MessagePort obj: each answer the app owes, within its budget, is given to
// receive as JSON text, one after another (app-port.js refuses and counts the rest, Refused);
// the first message over the budget closes the port and is given to over.
func openPort(obj any, receive func([]byte), over func(why string, messages, bytes int)) (AppPort, error) {
	v, ok := obj.(jsutil.Value)
	if !ok || v.Type() != jsutil.TypeObject {
		return nil, errors.New("not an object")
	}
	if pm, err := v.Get("postMessage"); err != nil || pm.Type() != jsutil.TypeFunction {
		return nil, errors.New("it has no postMessage")
	}
	open, err := jsutil.Global().Get("voiceboxOpenAppPort")
	if err != nil || open.Type() != jsutil.TypeFunction {
		return nil, errors.New("this worker did not load app-port.js")
	}
	onMessage, err := jsutil.FuncOf(func(_ jsutil.Value, args []jsutil.Value) any {
		var msg []byte
		if len(args) > 0 && args[0].Type() == jsutil.TypeString {
			s, _ := args[0].String()
			msg = []byte(s)
		}
		receive(msg)
		return nil
	})
	if err != nil {
		return nil, err
	}
	p := &jsPort{receive: onMessage}
	p.over, err = jsutil.FuncOf(func(_ jsutil.Value, args []jsutil.Value) any {
		why, messages, bytes := "", 0, 0
		if len(args) == 3 {
			why, _ = args[0].String()
			messages, _ = args[1].Int()
			bytes, _ = args[2].Int()
		}
		// The port closed itself; the app is stopped outside this callback, which then closes Go's
		// side of the port (and releases this function) once it has returned.
		go over(why, messages, bytes)
		return nil
	})
	if err != nil {
		onMessage.Release()
		return nil, err
	}
	// Opening starts the port: messages the app sent before now are delivered.
	p.end, err = open.Invoke(v, onMessage.Value(), p.over.Value())
	if err != nil {
		p.release()
		return nil, err
	}
	return p, nil
}

// Post sends msg (JSON) to the app; callID, when set, is a call whose answer the app owes from
// now (owe) or no longer (a cancel).
func (p *jsPort) Post(msg []byte, callID string, owe bool) error {
	_, err := p.end.Call("post", string(msg), callID, owe)
	return err
}

// Refused reads what app-port.js refused before Go read it.
func (p *jsPort) Refused() PortRefusals {
	var out PortRefusals
	if v, err := p.end.Call("refused"); err == nil && v.Type() == jsutil.TypeString {
		s, _ := v.String()
		out.decode([]byte(s))
	}
	return out
}

// Close ends the port; later calls do nothing.
func (p *jsPort) Close() {
	p.once.Do(func() {
		_, _ = p.end.Call("close")
		p.release()
	})
}

// release lets go of the callbacks, once.
func (p *jsPort) release() {
	p.released.Do(func() {
		p.receive.Release()
		p.over.Release()
	})
}
