package wire

import (
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
)

type refScanner struct {
	b      []byte
	i      int
	keys   []keyRef
	spaces int // how many whitespace runs ws has skipped
}

var refScanners = sync.Pool{New: func() any { return &refScanner{keys: make([]keyRef, 0, 32)} }}

// refScanFrame is scanFrame as it was before it read a frame once (four passes: bounds, UTF-8,
// syntax, then the scan), kept as the reference the one-pass scan must agree with.
//
// It checks that frame is one JSON object with no duplicate keys and no nesting beyond
// MaxDepth, and collects its top-level properties against allow.
func refScanFrame(frame []byte, allow []string) (fields, frameFault) {
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
	s := refScanners.Get().(*refScanner)
	defer func() {
		clear(s.keys[:cap(s.keys)])
		*s = refScanner{keys: s.keys[:0]}
		refScanners.Put(s)
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

func (s *refScanner) ws() {
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
func (s *refScanner) str() ([]byte, bool) {
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
func (s *refScanner) object(depth int, allow []string, top *fields) frameFault {
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

func (s *refScanner) value(depth int) frameFault {
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

// FuzzScanFrameAgreesWithTheFourPasses holds the one-pass scanFrame to the four passes it
// replaced: the same verdict (the same fault named, by the same order of checks) and the same
// properties collected, each with the same whitespace flag, for any bytes.
func FuzzScanFrameAgreesWithTheFourPasses(f *testing.F) {
	for _, s := range []string{
		goodCall,
		nested(MaxDepth), nested(MaxDepth + 1),
		`{"v":1,"callId":"a","c\u0061llId":"b"}`,
		`{"a":1,"a":2,"b":[1,`,
		`{"a": [ 1 , {"b" : "c"} ] , "v" : 1 }`,
		"{\"a\":\"\xff\"}", "{\"a\":\"\x01\"}", `{"a":"\x"}`, `{"a":"\u12g4"}`,
		`[1]`, `"s"`, `{}`, ` {} `, `{} {}`, `{"a":-0.5e+3,"b":true,"c":false,"d":null}`,
		`{"a":01}`, `{"a":1.}`, `{"a":tru}`, `{"a":1,}`, `{,}`, `{"a"}`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"ka":10,"kb":11,"kc":12,"kd":13,"ke":14,"kf":15,"kg":16,"k0":17}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, allow := range [][]string{callFields, answerFields} {
			got, gotFault := scanFrame(frame, allow)
			want, wantFault := refScanFrame(frame, allow)
			if gotFault != wantFault {
				t.Fatalf("%q: the one pass says %q, the four passes %q", frame, gotFault, wantFault)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: the one pass collects %+v, the four passes %+v", frame, got, want)
			}
		}
	})
}

// BenchmarkScanFrame scans a typical call frame and a 4 KiB answer frame (what the page and the
// relay read per call): one pass, no allocation.
func BenchmarkScanFrame(b *testing.B) {
	answer := []byte(`{"v":1,"callId":"call_1","ok":true,"observed":{"path":"bench-4k.txt","bytes":4096,"content":"` + strings.Repeat("x", 4096) + `"}}`)
	for _, c := range []struct {
		name  string
		frame []byte
		allow []string
	}{{"call", []byte(goodCall), callFields}, {"answer-4k", answer, answerFields}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, fault := scanFrame(c.frame, c.allow); fault != "" {
					b.Fatal(fault)
				}
			}
		})
		b.Run(c.name+"-four-passes", func(b *testing.B) {
			b.SetBytes(int64(len(c.frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, fault := refScanFrame(c.frame, c.allow); fault != "" {
					b.Fatal(fault)
				}
			}
		})
	}
}
