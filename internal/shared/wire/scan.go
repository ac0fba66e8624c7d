package wire

import (
	"bytes"
	"sync"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// MaxFrameBytes is the largest envelope frame, in bytes, that ParseCall and ParseAnswer read.
// Larger frames are refused whole, before any of their content is looked at. It bounds what one
// call or answer can make the receiver hold, and it is the same at both ends of /channel.
const MaxFrameBytes = 1 << 20

// MaxDepth is the deepest nesting of objects and arrays an envelope may hold, the envelope itself
// counting as one. Tool arguments and observations are shallow; the bound keeps a frame of brackets
// from costing the receiver anything.
const MaxDepth = 64

// MaxIDBytes bounds callId, tool and descriptorId, in bytes.
const MaxIDBytes = 256

// frameFault is why a frame is not a single well-formed object; the caller names the rule.
type frameFault string

var (
	faultTooLarge = frameFault(textf.Sprintf("the frame is larger than the wire's bound of %d bytes (MaxFrameBytes); send less per call", MaxFrameBytes))
	faultTooDeep  = frameFault(textf.Sprintf("the frame nests objects and arrays deeper than the wire's bound of %d levels (MaxDepth)", MaxDepth))
)

// fields holds the raw value of each allowlisted top-level property, indexed like the allowlist,
// and the first property name that is not on it.
type fields struct {
	raw     [8][]byte
	spaced  [8]bool // raw holds insignificant whitespace, so it must be compacted
	unknown []byte  // name of the first unknown property, or nil
}

// keyRef is one object key seen while scanning, kept to catch duplicates.
type keyRef struct {
	raw []byte // the key between its quotes, as written
	esc bool   // raw holds a backslash escape, so compare decoded forms
	dec string // decoded key, set when esc
}

func (k keyRef) decoded() string {
	if k.esc {
		return k.dec
	}
	return string(k.raw)
}

func (k keyRef) equal(o keyRef) bool {
	if !k.esc && !o.esc {
		return bytes.Equal(k.raw, o.raw)
	}
	return k.decoded() == o.decoded()
}

// dupMapAfter is how many keys an object may have before duplicate detection switches from a
// linear scan to a map.
const dupMapAfter = 16

type scanner struct {
	b      []byte
	i      int
	keys   []keyRef
	spaces int // how many whitespace runs ws has skipped
}

var scanners = sync.Pool{New: func() any { return &scanner{keys: make([]keyRef, 0, 32)} }}

// CheckFrame reports how frame breaks the wire's own bounds, at most MaxFrameBytes and nesting
// at most MaxDepth, as a refusal of rule, or nil when it keeps them. It is the one check of those
// bounds: receivers apply it first (ParseCall, ParseAnswer, through scanFrame), and senders apply
// it to every frame they are about to send (channel.Broker.Ask to calls, with malformed-call;
// channel.Door to answers), so no frame leaves that the other end would refuse, and one oversized
// call costs no other call its answer.
func CheckFrame(frame []byte, rule refusal.Rule) *refusal.Refusal {
	if fault := boundsFault(frame); fault != "" {
		return refusal.New(rule, "%s", fault)
	}
	return nil
}

// boundsFault is CheckFrame's verdict: the size, then the depth of brackets outside strings.
// It reads any bytes, JSON or not, in one pass.
func boundsFault(frame []byte) frameFault {
	if len(frame) > MaxFrameBytes {
		return faultTooLarge
	}
	depth, inString := 0, false
	for i := 0; i < len(frame); i++ {
		switch c := frame[i]; {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > MaxDepth {
				return faultTooDeep
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return ""
}

// scanFrame checks that frame is one JSON object with no duplicate keys and no nesting beyond
// MaxDepth, and collects its top-level properties against allow.
func scanFrame(frame []byte, allow []string) (fields, frameFault) {
	var f fields
	if fault := boundsFault(frame); fault != "" {
		return f, fault
	}
	if !utf8.Valid(frame) {
		return f, "the frame is not valid UTF-8"
	}
	if !valid(frame) {
		return f, "the frame is not a single JSON value (broken syntax or trailing data)"
	}
	s := scanners.Get().(*scanner)
	defer func() {
		clear(s.keys[:cap(s.keys)])
		*s = scanner{keys: s.keys[:0]}
		scanners.Put(s)
	}()
	s.b = frame
	s.ws()
	if s.b[s.i] != '{' {
		return f, "the frame is JSON but not an object"
	}
	if fault := s.object(1, allow, &f); fault != "" {
		return fields{}, fault
	}
	return f, ""
}

func (s *scanner) ws() {
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			if s.i > start {
				s.spaces++
			}
			return
		}
	}
	if s.i > start {
		s.spaces++
	}
}

// str advances over the string starting at s.i (the input is known to be valid JSON) and returns
// its raw content without quotes, and whether it holds an escape.
func (s *scanner) str() ([]byte, bool) {
	start := s.i + 1
	esc := false
	for j := start; ; j++ {
		switch s.b[j] {
		case '\\':
			esc = true
			j++
		case '"':
			s.i = j + 1
			return s.b[start:j], esc
		}
	}
}

// object scans the object at s.i. When top is non-nil it is the envelope: its properties are
// matched against allow and recorded in top.
func (s *scanner) object(depth int, allow []string, top *fields) frameFault {
	if depth > MaxDepth {
		return faultTooDeep
	}
	s.i++ // {
	base := len(s.keys)
	defer func() { s.keys = s.keys[:base] }()
	var seen map[string]struct{}
	s.ws()
	if s.b[s.i] == '}' {
		s.i++
		return ""
	}
	for {
		s.ws()
		raw, esc := s.str()
		k := keyRef{raw: raw, esc: esc}
		if esc {
			d, ok := rawjson.Unquote(s.b[s.i-len(raw)-2 : s.i])
			if !ok {
				return "the frame holds an undecodable key"
			}
			k.dec = d
		}
		if seen != nil {
			d := k.decoded()
			if _, dup := seen[d]; dup {
				return "the frame repeats a key in one object, so its meaning is ambiguous"
			}
			seen[d] = struct{}{}
		} else {
			for _, o := range s.keys[base:] {
				if o.equal(k) {
					return "the frame repeats a key in one object, so its meaning is ambiguous"
				}
			}
			s.keys = append(s.keys, k)
			if len(s.keys)-base > dupMapAfter {
				seen = make(map[string]struct{}, 2*dupMapAfter)
				for _, o := range s.keys[base:] {
					seen[o.decoded()] = struct{}{}
				}
			}
		}
		s.ws()
		s.i++ // :
		s.ws()
		start, spaces := s.i, s.spaces
		if fault := s.value(depth + 1); fault != "" {
			return fault
		}
		if top != nil {
			top.note(k, s.b[start:s.i], s.spaces != spaces, allow)
		}
		s.ws()
		c := s.b[s.i]
		s.i++
		if c == '}' {
			return ""
		}
	}
}

func (f *fields) note(k keyRef, val []byte, spaced bool, allow []string) {
	for n, a := range allow {
		if k.esc && a == k.dec || !k.esc && a == string(k.raw) {
			f.raw[n], f.spaced[n] = val, spaced
			return
		}
	}
	if f.unknown == nil {
		f.unknown = k.raw
		if k.esc {
			f.unknown = []byte(k.dec)
		}
	}
}

func (s *scanner) value(depth int) frameFault {
	switch s.b[s.i] {
	case '{':
		return s.object(depth, nil, nil)
	case '[':
		if depth > MaxDepth {
			return faultTooDeep
		}
		s.i++
		s.ws()
		if s.b[s.i] == ']' {
			s.i++
			return ""
		}
		for {
			s.ws()
			if fault := s.value(depth + 1); fault != "" {
				return fault
			}
			s.ws()
			c := s.b[s.i]
			s.i++
			if c == ']' {
				return ""
			}
		}
	case '"':
		s.str()
		return ""
	default: // number, true, false, null
		for s.i < len(s.b) {
			switch c := s.b[s.i]; {
			case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c == '-', c == '+', c == '.', c == 'E':
				s.i++
			default:
				return ""
			}
		}
		return ""
	}
}
