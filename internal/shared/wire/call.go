package wire

import (
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Version is the envelope version this package speaks; every envelope carries it as "v".
const Version = 1

// Call is a parsed call envelope. Args and BoundsEcho are compact JSON objects that do not share
// memory with the frame they came from.
type Call struct {
	CallID       string
	Tool         string
	DescriptorID string
	Args         json.RawMessage // {} when the frame had none
	BoundsEcho   json.RawMessage
}

// The call's properties, in the order ParseCall checks them; the index is the slot in fields.
var callFields = []string{"v", "callId", "tool", "descriptorId", "args", "boundsEcho"}

const (
	cV = iota
	cCallID
	cTool
	cDescriptorID
	cArgs
	cBoundsEcho
)

// ParseError is a frame refused by ParseCall or ParseAnswer. It wraps the refusal, and it keeps
// the frame's callId when one could be read, so the receiver can still answer a call it refuses.
// CallID is empty when the frame was not a well-formed object or had no usable callId; such a
// frame gets no answer.
type ParseError struct {
	*refusal.Refusal
	CallID string
}

// Unwrap returns the refusal, so refusal.As and errors.Is see it.
func (e *ParseError) Unwrap() error { return e.Refusal }

func parseFault(rule refusal.Rule, callID, format string, args ...any) *ParseError {
	return &ParseError{Refusal: refusal.New(rule, format, args...), CallID: callID}
}

// quoteName renders a property name for a sentence, cut short if it is long.
func quoteName(raw []byte) string {
	const max = 64
	if len(raw) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(raw[cut]) {
			cut--
		}
		return textf.Sprintf("%q...", raw[:cut])
	}
	return textf.Sprintf("%q", raw)
}

// checkVersion returns the bad-version fault for a raw "v" value, or nil.
func checkVersion(raw []byte, callID string) *ParseError {
	if string(raw) == "1" {
		return nil
	}
	if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') && sameNumber(string(raw), "1") {
		return nil
	}
	if isNull(raw) {
		return parseFault(refusal.BadVersion, callID, "the envelope has no \"v\"; this end speaks version %d", Version)
	}
	return parseFault(refusal.BadVersion, callID, "the envelope is version %.32s; this end speaks only version %d", raw, Version)
}

// readCallID returns the callId in raw, or a fault of rule naming what is wrong with it.
func readCallID(raw []byte, rule refusal.Rule) (string, *ParseError) {
	if isNull(raw) {
		return "", parseFault(rule, "", "the envelope has no \"callId\", so nothing can be matched to it")
	}
	id, ok := stringValue(raw)
	switch {
	case !ok:
		return "", parseFault(rule, "", "\"callId\" must be a string")
	case id == "":
		return "", parseFault(rule, "", "\"callId\" is empty")
	case len(id) > MaxIDBytes:
		return "", parseFault(rule, "", "\"callId\" is longer than %d bytes (MaxIDBytes)", MaxIDBytes)
	}
	return id, nil
}

// ParseCall parses one call frame. On failure it returns a *ParseError naming the first rule the
// frame breaks, in the order the package doc lists.
func ParseCall(frame []byte) (Call, error) {
	f, fault := scanFrame(frame, callFields)
	if fault != "" {
		return Call{}, parseFault(refusal.MalformedCall, "", "%s", fault)
	}
	// The callId is read first only so that later refusals can be answered; a missing one is
	// refused after unknown-field and bad-version.
	callID, idFault := readCallID(f.raw[cCallID], refusal.MalformedCall)
	if f.unknown != nil {
		return Call{}, parseFault(refusal.UnknownField, callID, "a call has no property %s; it carries only v, callId, tool, descriptorId, args and boundsEcho", quoteName(f.unknown))
	}
	if pe := checkVersion(f.raw[cV], callID); pe != nil {
		return Call{}, pe
	}
	if idFault != nil {
		return Call{}, idFault
	}
	c := Call{CallID: callID}
	var ok bool
	for _, p := range [...]struct {
		slot int
		name string
		dst  *string
	}{{cDescriptorID, "descriptorId", &c.DescriptorID}, {cTool, "tool", &c.Tool}} {
		raw := f.raw[p.slot]
		if isNull(raw) {
			return Call{}, parseFault(refusal.UnattributedCall, callID, "the call has no %q, so it is not attributed to anything admitted", p.name)
		}
		*p.dst, ok = stringValue(raw)
		switch {
		case !ok:
			return Call{}, parseFault(refusal.MalformedCall, callID, "%q must be a string", p.name)
		case *p.dst == "":
			return Call{}, parseFault(refusal.UnattributedCall, callID, "%q is empty, so the call is not attributed to anything admitted", p.name)
		case len(*p.dst) > MaxIDBytes:
			return Call{}, parseFault(refusal.MalformedCall, callID, "%q is longer than %d bytes (MaxIDBytes)", p.name, MaxIDBytes)
		}
	}
	if isNull(f.raw[cBoundsEcho]) {
		return Call{}, parseFault(refusal.UnattributedCall, callID, "the call has no \"boundsEcho\"; it must echo the bounds its descriptor was admitted with")
	}
	if c.BoundsEcho, ok = compactObject(f.raw[cBoundsEcho], f.spaced[cBoundsEcho]); !ok {
		return Call{}, parseFault(refusal.MalformedCall, callID, "\"boundsEcho\" must be an object")
	}
	if isNull(f.raw[cArgs]) {
		c.Args = json.RawMessage("{}")
	} else if c.Args, ok = compactObject(f.raw[cArgs], f.spaced[cArgs]); !ok {
		return Call{}, parseFault(refusal.MalformedCall, callID, "\"args\" must be an object")
	}
	return c, nil
}

func validID(s string) bool { return s != "" && len(s) <= MaxIDBytes }

// errBadCall is returned by MarshalJSON for a call that ParseCall would refuse.
var errBadCall = errors.New("wire: call is not valid: callId, tool or descriptorId empty or too long, or args/boundsEcho not a JSON object")

// MarshalJSON writes the call as a compact version-1 call frame, with no HTML escaping. It fails
// for a call that could not have been parsed: empty or overlong identifiers, or Args (when set) or BoundsEcho
// not a JSON object.
func (c Call) MarshalJSON() ([]byte, error) {
	if !validID(c.CallID) || !validID(c.Tool) || !validID(c.DescriptorID) {
		return nil, errBadCall
	}
	args := c.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	b := make([]byte, 0, 64+len(c.CallID)+len(c.Tool)+len(c.DescriptorID)+len(args)+len(c.BoundsEcho))
	b = append(b, `{"v":1,"callId":`...)
	b = appendString(b, c.CallID)
	b = append(b, `,"tool":`...)
	b = appendString(b, c.Tool)
	b = append(b, `,"descriptorId":`...)
	b = appendString(b, c.DescriptorID)
	b = append(b, `,"args":`...)
	var ok bool
	if b, _, ok = appendObject(b, args); !ok {
		return nil, errBadCall
	}
	b = append(b, `,"boundsEcho":`...)
	if b, _, ok = appendObject(b, c.BoundsEcho); !ok {
		return nil, errBadCall
	}
	return append(b, '}'), nil
}
