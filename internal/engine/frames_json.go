package engine

import (
	"strconv"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The worker's port frames are written and read without reflection, byte for byte as
// encoding/json writes and reads them (TestPortFramesAgreeWithJSON,
// FuzzPortAnswerDecodeAgreesWithJSON): they are on every call of a mini-app's tool.

// appendJSON writes the call as json.Marshal does; false when args is not one JSON value (nil
// args is written null).
func (c portCall) appendJSON(dst []byte) ([]byte, bool) {
	w := rawjson.NewObject(grow(dst, 64+len(c.CallID)+len(c.Name)+len(c.Args)), true)
	w.String("type", c.Type)
	w.String("callId", c.CallID)
	w.String("name", c.Name)
	if !w.Raw("args", c.Args) {
		return dst, false
	}
	return w.Close(), true
}

// appendJSON writes the notice as json.Marshal does.
func (n portNotice) appendJSON(dst []byte) []byte {
	w := rawjson.NewObject(grow(dst, 80+len(n.CallID)+len(n.AppID)+len(n.Tool)), true)
	w.String("type", n.Type)
	w.String("callId", n.CallID)
	w.String("appId", n.AppID)
	w.String("tool", n.Tool)
	w.Bool("onPort", n.OnPort)
	return w.Close()
}

// appendJSON writes the notice as json.Marshal does.
func (n expiredNotice) appendJSON(dst []byte) []byte {
	w := rawjson.NewObject(grow(dst, 112+len(n.CallID)+len(n.AppID)+len(n.Tool)), true)
	w.String("type", n.Type)
	w.String("callId", n.CallID)
	w.String("appId", n.AppID)
	w.String("tool", n.Tool)
	w.Uint("doc", n.Doc)
	w.Bool("expired", n.Expired)
	return w.Close()
}

// appendJSON writes the notice as json.Marshal does.
func (n overBudgetNotice) appendJSON(dst []byte) []byte {
	w := rawjson.NewObject(grow(dst, 112+len(n.AppID)+len(n.Why)), true)
	w.String("type", n.Type)
	w.String("appId", n.AppID)
	w.Uint("doc", n.Doc)
	w.String("why", n.Why)
	w.Int("messages", int64(n.Messages))
	w.Int("bytes", int64(n.Bytes))
	return w.Close()
}

// grow returns dst with room for n more bytes.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	return append(make([]byte, 0, len(dst)+n), dst...)
}

func (m *portAnswer) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "type", Into: &m.Type}, {Name: "callId", Into: &m.CallID}, {Name: "ok", Into: &m.OK},
		{Name: "result", Into: &m.Result}, {Name: "error", Into: &m.Error}}
}

// decode reads msg as json.Unmarshal reads it into a portAnswer, and reports whether that
// succeeds: exactly one JSON value, members of the wrong type refused, members it does not
// know passed over (an app's SDK may send more than the answer's fields).
func (m *portAnswer) decode(msg []byte) bool {
	if !rawjson.Valid(msg) {
		return false
	}
	if err := strictjson.DecodeStruct(msg, m); err != nil && strictjson.KindOf(err) != strictjson.UnknownField {
		// json.Unmarshal takes a null into a struct, changing nothing; any other value that is
		// not an object is of the wrong type.
		return strictjson.KindOf(err) == strictjson.NotObject && string(trimSpace(msg)) == "null"
	}
	return true
}

// trimSpace is b without JSON's white space around it.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// appendMiniAppCall writes a call of appID's tool carried by the page's main thread,
// {"type":"miniapp.call","callId","appId","tool","args"}, as json.Marshal wrote the struct it
// was; false when args is not one JSON value.
func appendMiniAppCall(dst []byte, id, appID, tool string, args []byte) ([]byte, bool) {
	w := rawjson.NewObject(grow(dst, 64+len(id)+len(appID)+len(tool)+len(args)), true)
	w.String("type", "miniapp.call")
	w.String("callId", id)
	w.String("appId", appID)
	w.String("tool", tool)
	if !w.Raw("args", args) {
		return dst, false
	}
	return w.Close(), true
}

// appendExternalCall writes a call of an external app's tool name,
// {"type":"externalapp.call","callId","name","args"}, as json.Marshal wrote the struct it was;
// false when args is not one JSON value.
func appendExternalCall(dst []byte, id, name string, args []byte) ([]byte, bool) {
	w := rawjson.NewObject(grow(dst, 64+len(id)+len(name)+len(args)), true)
	w.String("type", "externalapp.call")
	w.String("callId", id)
	w.String("name", name)
	if !w.Raw("args", args) {
		return dst, false
	}
	return w.Close(), true
}

// appendCancel writes {type: cancelType, callId, expired} as json.Marshal writes it as a map
// (names sorted).
func appendCancel(dst []byte, cancelType, id string, expired bool) []byte {
	w := rawjson.NewObject(grow(dst, 48+len(id)+len(cancelType)), true)
	w.String("callId", id)
	w.Bool("expired", expired)
	w.String("type", cancelType)
	return w.Close()
}

// appendPortCancel writes the SDK's {type: "cancel_call", callId} as json.Marshal writes it as a
// map (names sorted).
func appendPortCancel(dst []byte, id string) []byte {
	w := rawjson.NewObject(grow(dst, 40+len(id)), true)
	w.String("callId", id)
	w.String("type", "cancel_call")
	return w.Close()
}

// decode reads app-port.js's report of what a port refused ({dropped, refused: {rule: n},
// samples: [{rule, why}]}, its JSON.stringify) into r, as json.Unmarshal reads it
// (FuzzPortRefusalsDecodeAgreesWithJSON holds the two together on every document encoding/json
// reads without an error and that names no member twice at one level; otherwise r keeps what
// each well-typed member gave, where encoding/json may keep more or less of it: JSON.stringify
// writes no such document).
func (r *PortRefusals) decode(b []byte) {
	rawjson.Members(b, func(name string, v []byte) bool {
		null := string(v) == "null"
		switch {
		case rawjson.FoldEqual(name, "dropped"):
			if n, ok := intOf(v); ok {
				r.Dropped = n
			}
		case rawjson.FoldEqual(name, "refused"):
			if null {
				r.Refused = nil
				return true
			}
			if v[0] != '{' {
				return true
			}
			if r.Refused == nil {
				r.Refused = map[refusal.Rule]int{}
			}
			rawjson.Members(v, func(rule string, c []byte) bool {
				if n, ok := intOf(c); ok {
					r.Refused[refusal.Rule(rule)] = n
				} else if string(c) == "null" {
					r.Refused[refusal.Rule(rule)] = 0
				}
				return true
			})
		case rawjson.FoldEqual(name, "samples"):
			if null {
				r.Samples = nil
				return true
			}
			if v[0] != '[' {
				return true
			}
			r.Samples = []PortRefusal{}
			rawjson.Elements(v, func(e []byte) {
				var s PortRefusal
				rawjson.Members(e, func(name string, f []byte) bool {
					str, ok := rawjson.Unquote(f)
					switch {
					case !ok:
					case rawjson.FoldEqual(name, "rule"):
						s.Rule = refusal.Rule(str)
					case rawjson.FoldEqual(name, "why"):
						s.Why = str
					}
					return true
				})
				r.Samples = append(r.Samples, s)
			})
		}
		return true
	})
}

// intOf reads a JSON number into an int as encoding/json does: it must be spelled as an integer
// in the int's range (1.0 and 1e2 are not).
func intOf(v []byte) (int, bool) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, strconv.IntSize)
	return int(n), err == nil
}
