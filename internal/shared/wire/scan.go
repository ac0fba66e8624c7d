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

// scanner reads a frame once (scanFrame). Scanners are pooled with the room their keys took, so
// a frame costs no allocation.
type scanner struct {
	b      []byte
	i      int
	keys   []keyRef
	high   int        // the most keys held at once, which putScanner clears
	spaces int        // how many whitespace runs ws has skipped
	fault  frameFault // a fault of meaning (a repeated key, a frame that is no object), once seen
}

var scanners = sync.Pool{New: func() any { return &scanner{keys: make([]keyRef, 0, 32)} }}

// putScanner pools s again, holding nothing of the frame it read.
func putScanner(s *scanner) {
	clear(s.keys[:s.high])
	*s = scanner{keys: s.keys[:0]}
	scanners.Put(s)
}

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

// scanFrame checks that frame is one JSON object of valid UTF-8 with no duplicate keys and no
// nesting beyond MaxDepth, and collects its top-level properties against allow. It reads a
// well-formed frame once, validating as it goes, and allocates nothing for it (escaped keys and
// objects of more than dupMapAfter keys aside). Only a frame it refuses is read again, by each
// check in turn (bounds, UTF-8, syntax, then meaning), so the fault named is the first by that
// order wherever in the frame each lies.
func scanFrame(frame []byte, allow []string) (fields, frameFault) {
	var f fields
	if len(frame) > MaxFrameBytes {
		return f, faultTooLarge
	}
	s := scanners.Get().(*scanner)
	s.b = frame
	ok := s.frame(allow, &f)
	fault := s.fault
	putScanner(s)
	if ok {
		return f, ""
	}
	return fields{}, orderedFault(frame, fault)
}

// orderedFault names what is wrong with a frame scanFrame refused: the wire's bounds first, then
// its encoding, its syntax, and last what it means (fault, which the scan found).
func orderedFault(frame []byte, fault frameFault) frameFault {
	if bounds := boundsFault(frame); bounds != "" {
		return bounds
	}
	switch {
	case !utf8.Valid(frame):
		return "the frame is not valid UTF-8"
	case !valid(frame) || fault == "":
		return "the frame is not a single JSON value (broken syntax or trailing data)"
	}
	return fault
}

// frame scans the whole frame: one object, whitespace around it.
func (s *scanner) frame(allow []string, top *fields) bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	if s.b[s.i] != '{' {
		s.fault = "the frame is JSON but not an object"
		return false
	}
	if !s.object(1, allow, top) {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

func (s *scanner) ws() {
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
			continue
		}
		break
	}
	if s.i > start {
		s.spaces++
	}
}

// str advances over the JSON string whose opening quote is at s.i, checking it (no control
// characters, only JSON's escapes, valid UTF-8), and reports whether it holds an escape and
// whether it is one.
func (s *scanner) str() (esc, ok bool) {
	b := s.b
	for j := s.i + 1; j < len(b); {
		switch c := b[j]; {
		case c == '"':
			s.i = j + 1
			return esc, true
		case c == '\\':
			esc = true
			if j+1 >= len(b) {
				return false, false
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if len(b)-j < 6 || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) || !isHex(b[j+5]) {
					return false, false
				}
				j += 6
			default:
				return false, false
			}
		case c < 0x20:
			return false, false
		case c < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size == 1 {
				return false, false
			}
			j += size
		}
	}
	return false, false
}

// object scans the object at s.i, which would sit at depth. When top is non-nil it is the
// envelope: its properties are matched against allow and recorded in top.
func (s *scanner) object(depth int, allow []string, top *fields) bool {
	if depth > MaxDepth {
		return false
	}
	base := len(s.keys)
	ok := s.members(depth, allow, top)
	s.keys = s.keys[:base]
	return ok
}

func (s *scanner) members(depth int, allow []string, top *fields) bool {
	s.i++ // {
	base := len(s.keys)
	var seen map[string]struct{}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		start := s.i
		esc, ok := s.str()
		if !ok {
			return false
		}
		k := keyRef{raw: s.b[start+1 : s.i-1], esc: esc}
		if esc {
			d, ok := rawjson.Unquote(s.b[start:s.i])
			if !ok {
				s.fault = "the frame holds an undecodable key"
				return false
			}
			k.dec = d
		}
		if seen != nil {
			d := k.decoded()
			if _, dup := seen[d]; dup {
				s.fault = faultRepeatedKey
				return false
			}
			seen[d] = struct{}{}
		} else {
			for _, o := range s.keys[base:] {
				if o.equal(k) {
					s.fault = faultRepeatedKey
					return false
				}
			}
			s.keys = append(s.keys, k)
			s.high = max(s.high, len(s.keys))
			if len(s.keys)-base > dupMapAfter {
				seen = make(map[string]struct{}, 2*dupMapAfter)
				for _, o := range s.keys[base:] {
					seen[o.decoded()] = struct{}{}
				}
			}
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.ws()
		start, spaces := s.i, s.spaces
		if !s.value(depth + 1) {
			return false
		}
		if top != nil {
			top.note(k, s.b[start:s.i], s.spaces != spaces, allow)
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		c := s.b[s.i]
		s.i++
		switch c {
		case ',':
			s.ws()
		case '}':
			return true
		default:
			return false
		}
	}
}

const faultRepeatedKey = frameFault("the frame repeats a key in one object, so its meaning is ambiguous")

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

// value scans the JSON value at s.i, which would sit at depth if it is an object or an array.
func (s *scanner) value(depth int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '{':
		return s.object(depth, nil, nil)
	case '[':
		if depth > MaxDepth {
			return false
		}
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return true
		}
		for {
			if !s.value(depth + 1) {
				return false
			}
			s.ws()
			if s.i >= len(s.b) {
				return false
			}
			c := s.b[s.i]
			s.i++
			switch c {
			case ',':
				s.ws()
			case ']':
				return true
			default:
				return false
			}
		}
	case '"':
		_, ok := s.str()
		return ok
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		end := numberEnd(s.b, s.i)
		if end < 0 {
			return false
		}
		s.i = end
		return true
	}
}

func (s *scanner) literal(word string) bool {
	end := literal(s.b, s.i, word)
	if end < 0 {
		return false
	}
	s.i = end
	return true
}
