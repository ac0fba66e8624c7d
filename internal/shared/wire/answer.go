package wire

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Answer is a parsed answer envelope: either an observation (OK, with Observed a compact JSON
// object) or a refusal (Refused and Why, and Budget when the refusal came with budget figures).
type Answer struct {
	CallID   string
	OK       bool
	Observed json.RawMessage
	Refused  refusal.Rule
	Why      string
	Budget   *Budget
}

// Budget is the figures of the budget a refusal was made against, such as an extension's request
// budget when it refuses with budget-exhausted: Used of Max units spent. It travels as an optional
// "budget":{"used":n,"max":n} on a refused answer, so the figures cross /channel unchanged next to
// the rule id. Both are whole numbers from 0 to MaxBudget.
type Budget struct {
	Used int64 `json:"used"`
	Max  int64 `json:"max"`
}

// MaxBudget is the largest budget figure the wire carries: 2^53-1, the largest whole number a
// JavaScript peer holds exactly.
const MaxBudget = 1<<53 - 1

// MaxRuleBytes bounds the rule id in "refused".
const MaxRuleBytes = 64

// BudgetError is a refusal together with the budget figures behind it. An executor returns one
// (for example for budget-exhausted) so that the answer carries the figures; it unwraps to the
// refusal, so refusal.RuleOf sees the rule.
type BudgetError struct {
	Refusal *refusal.Refusal
	Budget  Budget
}

func (e *BudgetError) Error() string {
	return textf.Sprintf("%s (budget %d of %d used)", e.Refusal.Error(), e.Budget.Used, e.Budget.Max)
}

// Unwrap returns the refusal.
func (e *BudgetError) Unwrap() error { return e.Refusal }

var answerFields = []string{"v", "callId", "ok", "observed", "refused", "why", "budget"}

const (
	aV = iota
	aCallID
	aOK
	aObserved
	aRefused
	aWhy
	aBudget
)

// OK returns the answer that reports an observation. Observed must be a JSON object.
func OK(callID string, observed json.RawMessage) Answer {
	return Answer{CallID: callID, OK: true, Observed: observed}
}

// Refuse returns the answer that carries r for callID.
func Refuse(callID string, r *refusal.Refusal) Answer {
	return Answer{CallID: callID, Refused: r.Rule, Why: r.Why}
}

// Err returns nil for an observation; for a refusal, a *refusal.Refusal, or a *BudgetError when
// the answer carries budget figures.
func (a Answer) Err() error {
	if a.OK {
		return nil
	}
	r := &refusal.Refusal{Rule: a.Refused, Why: a.Why}
	if a.Budget != nil {
		return &BudgetError{Refusal: r, Budget: *a.Budget}
	}
	return r
}

// validRule reports whether s is a kebab-case rule id: lower-case letters and digits in words
// joined by single hyphens.
func validRule(s string) bool {
	if s == "" || len(s) > MaxRuleBytes || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && s[i-1] != '-':
		default:
			return false
		}
	}
	return true
}

// ParseAnswer parses one answer frame. On failure it returns a *ParseError naming the first rule
// the frame breaks, in the order the package doc lists.
func ParseAnswer(frame []byte) (Answer, error) {
	f, fault := scanFrame(frame, answerFields)
	if fault != "" {
		return Answer{}, parseFault(refusal.MalformedAnswer, "", "%s", fault)
	}
	callID, idFault := readCallID(f.raw[aCallID], refusal.MalformedAnswer)
	if f.unknown != nil {
		return Answer{}, parseFault(refusal.UnknownField, callID, "an answer has no property %s; it carries only v, callId, ok, observed, refused, why and budget", quoteName(f.unknown))
	}
	if pe := checkVersion(f.raw[aV], callID); pe != nil {
		return Answer{}, pe
	}
	if idFault != nil {
		return Answer{}, idFault
	}
	bad := func(format string, args ...any) (Answer, error) {
		return Answer{}, parseFault(refusal.MalformedAnswer, callID, format, args...)
	}
	a := Answer{CallID: callID}
	switch string(f.raw[aOK]) {
	case "true":
		a.OK = true
	case "false":
	default:
		return bad("the answer's \"ok\" must be true or false")
	}
	if a.OK {
		if !isNull(f.raw[aRefused]) || !isNull(f.raw[aWhy]) || !isNull(f.raw[aBudget]) {
			return bad("an answer with ok:true carries no refused, why or budget")
		}
		if isNull(f.raw[aObserved]) {
			return bad("an answer with ok:true must carry an \"observed\" object; a bare claim of success is not an answer")
		}
		var ok bool
		if a.Observed, ok = compactObject(f.raw[aObserved], f.spaced[aObserved]); !ok {
			return bad("the answer's \"observed\" must be an object")
		}
		return a, nil
	}
	if !isNull(f.raw[aObserved]) {
		return bad("an answer with ok:false carries no \"observed\"")
	}
	rule, ok := stringValue(f.raw[aRefused])
	if !ok || !validRule(rule) {
		return bad("an answer with ok:false must name its rule in \"refused\" as a kebab-case id of at most %d bytes", MaxRuleBytes)
	}
	a.Refused = refusal.Rule(rule)
	if a.Why, ok = stringValue(f.raw[aWhy]); !ok || a.Why == "" {
		return bad("an answer with ok:false must say why in a non-empty \"why\" string")
	}
	if !isNull(f.raw[aBudget]) {
		b, pe := parseBudget(f.raw[aBudget], callID)
		if pe != nil {
			return Answer{}, pe
		}
		a.Budget = &b
	}
	return a, nil
}

var budgetFields = []string{"used", "max"}

// parseBudget reads the "budget" object of a refused answer (already scanned as part of the frame).
func parseBudget(raw []byte, callID string) (Budget, *ParseError) {
	if raw[0] != '{' {
		return Budget{}, parseFault(refusal.MalformedAnswer, callID, "the answer's \"budget\" must be an object {used, max}")
	}
	f, fault := scanFrame(raw, budgetFields)
	if fault != "" {
		return Budget{}, parseFault(refusal.MalformedAnswer, callID, "the answer's \"budget\": %s", fault)
	}
	if f.unknown != nil {
		return Budget{}, parseFault(refusal.UnknownField, callID, "a budget has no property %s; it carries only used and max", quoteName(f.unknown))
	}
	var b Budget
	for i, dst := range []*int64{&b.Used, &b.Max} {
		n, err := strconv.ParseInt(string(f.raw[i]), 10, 64)
		if err != nil || n < 0 || n > MaxBudget {
			return Budget{}, parseFault(refusal.MalformedAnswer, callID, "the answer's budget %q must be a whole number from 0 to %d", budgetFields[i], int64(MaxBudget))
		}
		*dst = n
	}
	return b, nil
}

var errBadAnswer = errors.New("wire: answer is not valid: empty or overlong callId, ok with a refused, why or budget, or a refusal without a kebab-case rule and a why")

// ErrObservedNotObject is what Answer.MarshalJSON returns for an answer with ok whose Observed is
// not one JSON object, so a sender can name the executor that produced it.
var ErrObservedNotObject = errors.New("wire: an answer's observed value is not one JSON object")

// MarshalJSON writes the answer as a compact version-1 answer frame, with no HTML escaping. It
// fails for an answer ParseAnswer would refuse: with ErrObservedNotObject when that is because
// Observed is not one JSON object.
func (a Answer) MarshalJSON() ([]byte, error) {
	b, _, err := a.appendFrame(nil)
	return b, err
}

// AppendFrame appends a's frame to dst as MarshalJSON writes it (failing as it does), and checks
// the frame against the bounds CheckFrame holds a frame to, refusing it by rule as CheckFrame
// would: its size, then the depth of its brackets, counted as the frame was written rather than
// by reading it again (TestAppendFrameAgreesWithCheckFrame).
func (a Answer) AppendFrame(dst []byte, rule refusal.Rule) ([]byte, *refusal.Refusal, error) {
	b, depth, err := a.appendFrame(dst)
	if err != nil {
		return b, nil, err
	}
	frame := b[len(dst):]
	switch {
	case len(frame) > MaxFrameBytes:
		return b, refusal.New(rule, "%s", faultTooLarge), nil
	case depth > MaxDepth:
		return b, refusal.New(rule, "%s", faultTooDeep), nil
	}
	return b, nil, nil
}

// appendFrame is MarshalJSON appending to dst, and the depth of the frame's brackets.
func (a Answer) appendFrame(dst []byte) ([]byte, int, error) {
	if !validID(a.CallID) {
		return dst, 0, errBadAnswer
	}
	b := slices.Grow(dst, 48+len(a.CallID)+len(a.Observed)+len(a.Why))
	b = append(b, `{"v":1,"callId":`...)
	b = appendString(b, a.CallID)
	if a.OK {
		if a.Refused != "" || a.Why != "" || a.Budget != nil {
			return dst, 0, errBadAnswer
		}
		b = append(b, `,"ok":true,"observed":`...)
		b, depth, ok := appendObject(b, a.Observed)
		if !ok {
			return dst, 0, ErrObservedNotObject
		}
		return append(b, '}'), 1 + depth, nil
	}
	if !validRule(string(a.Refused)) || a.Why == "" || a.Observed != nil {
		return dst, 0, errBadAnswer
	}
	b = append(b, `,"ok":false,"refused":`...)
	b = appendString(b, string(a.Refused))
	b = append(b, `,"why":`...)
	b = appendString(b, a.Why)
	depth := 1
	if a.Budget != nil {
		if a.Budget.Used < 0 || a.Budget.Used > MaxBudget || a.Budget.Max < 0 || a.Budget.Max > MaxBudget {
			return dst, 0, errBadAnswer
		}
		b = append(b, `,"budget":{"used":`...)
		b = strconv.AppendInt(b, a.Budget.Used, 10)
		b = append(b, `,"max":`...)
		b = strconv.AppendInt(b, a.Budget.Max, 10)
		b = append(b, '}')
		depth = 2
	}
	return append(b, '}'), depth, nil
}
