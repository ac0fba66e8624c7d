package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

func (a Answer) equal(o Answer) bool {
	if (a.Budget == nil) != (o.Budget == nil) || a.Budget != nil && *a.Budget != *o.Budget {
		return false
	}
	return a.CallID == o.CallID && a.OK == o.OK && bytes.Equal(a.Observed, o.Observed) &&
		a.Refused == o.Refused && a.Why == o.Why
}

func TestParseAnswerRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		frame  string
		rule   refusal.Rule
		callID string
	}{
		{"empty", ``, refusal.MalformedAnswer, ""},
		{"array", `[]`, refusal.MalformedAnswer, ""},
		{"number", `1`, refusal.MalformedAnswer, ""},
		{"trailing data", `{"v":1,"callId":"c","ok":true,"observed":{}}{}`, refusal.MalformedAnswer, ""},
		{"duplicate ok", `{"v":1,"callId":"c","ok":false,"ok":true,"observed":{}}`, refusal.MalformedAnswer, ""},
		{"duplicate in observed", `{"v":1,"callId":"c","ok":true,"observed":{"n":1,"n":2}}`, refusal.MalformedAnswer, ""},
		{"oversized", `{"v":1,"callId":"c","ok":true,"observed":{"x":"` + strings.Repeat("a", MaxFrameBytes) + `"}}`, refusal.MalformedAnswer, ""},

		{"ambient decision", `{"v":1,"callId":"c","ok":true,"observed":{},"decision":"allow"}`, refusal.UnknownField, "c"},
		{"call field on an answer", `{"v":1,"callId":"c","ok":true,"observed":{},"tool":"t"}`, refusal.UnknownField, "c"},
		{"unknown in budget", `{"v":1,"callId":"c","ok":false,"refused":"budget-exhausted","why":"w","budget":{"used":1,"max":1,"grant":9}}`, refusal.UnknownField, "c"},

		{"version 0", `{"v":0,"callId":"c","ok":true,"observed":{}}`, refusal.BadVersion, "c"},
		{"version missing", `{"callId":"c","ok":true,"observed":{}}`, refusal.BadVersion, "c"},

		{"callId missing", `{"v":1,"ok":true,"observed":{}}`, refusal.MalformedAnswer, ""},
		{"callId number", `{"v":1,"callId":1,"ok":true,"observed":{}}`, refusal.MalformedAnswer, ""},

		{"ok missing", `{"v":1,"callId":"c","observed":{}}`, refusal.MalformedAnswer, "c"},
		{"ok as string", `{"v":1,"callId":"c","ok":"true","observed":{}}`, refusal.MalformedAnswer, "c"},
		{"bare claim", `{"v":1,"callId":"c","ok":true}`, refusal.MalformedAnswer, "c"},
		{"observed null", `{"v":1,"callId":"c","ok":true,"observed":null}`, refusal.MalformedAnswer, "c"},
		{"observed string", `{"v":1,"callId":"c","ok":true,"observed":"done"}`, refusal.MalformedAnswer, "c"},
		{"observed array", `{"v":1,"callId":"c","ok":true,"observed":[]}`, refusal.MalformedAnswer, "c"},
		{"ok true with refusal", `{"v":1,"callId":"c","ok":true,"observed":{},"refused":"no-page","why":"w"}`, refusal.MalformedAnswer, "c"},
		{"ok true with budget", `{"v":1,"callId":"c","ok":true,"observed":{},"budget":{"used":1,"max":2}}`, refusal.MalformedAnswer, "c"},

		{"refused missing", `{"v":1,"callId":"c","ok":false,"why":"w"}`, refusal.MalformedAnswer, "c"},
		{"why missing", `{"v":1,"callId":"c","ok":false,"refused":"fetch-failed"}`, refusal.MalformedAnswer, "c"},
		{"why empty", `{"v":1,"callId":"c","ok":false,"refused":"fetch-failed","why":""}`, refusal.MalformedAnswer, "c"},
		{"why number", `{"v":1,"callId":"c","ok":false,"refused":"fetch-failed","why":5}`, refusal.MalformedAnswer, "c"},
		{"refused not kebab", `{"v":1,"callId":"c","ok":false,"refused":"Fetch Failed","why":"w"}`, refusal.MalformedAnswer, "c"},
		{"refused double hyphen", `{"v":1,"callId":"c","ok":false,"refused":"fetch--failed","why":"w"}`, refusal.MalformedAnswer, "c"},
		{"refused too long", `{"v":1,"callId":"c","ok":false,"refused":"` + strings.Repeat("a", MaxRuleBytes+1) + `","why":"w"}`, refusal.MalformedAnswer, "c"},
		{"refusal with observed", `{"v":1,"callId":"c","ok":false,"refused":"fetch-failed","why":"w","observed":{}}`, refusal.MalformedAnswer, "c"},
		{"budget not object", `{"v":1,"callId":"c","ok":false,"refused":"budget-exhausted","why":"w","budget":3}`, refusal.MalformedAnswer, "c"},
		{"budget negative", `{"v":1,"callId":"c","ok":false,"refused":"budget-exhausted","why":"w","budget":{"used":-1,"max":3}}`, refusal.MalformedAnswer, "c"},
		{"budget fraction", `{"v":1,"callId":"c","ok":false,"refused":"budget-exhausted","why":"w","budget":{"used":1.5,"max":3}}`, refusal.MalformedAnswer, "c"},
		{"budget max missing", `{"v":1,"callId":"c","ok":false,"refused":"budget-exhausted","why":"w","budget":{"used":1}}`, refusal.MalformedAnswer, "c"},
		{"budget over 2^53", `{"v":1,"callId":"c","ok":false,"refused":"budget-exhausted","why":"w","budget":{"used":1,"max":9007199254740992}}`, refusal.MalformedAnswer, "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := ParseAnswer([]byte(tt.frame))
			if err == nil {
				t.Fatalf("ParseAnswer accepted %.200s as %+v", tt.frame, a)
			}
			if got := refusal.RuleOf(err); got != tt.rule {
				t.Fatalf("rule = %q, want %q (%v)", got, tt.rule, err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.CallID != tt.callID {
				t.Fatalf("error %#v, want a *ParseError with CallID %q", err, tt.callID)
			}
			if !a.equal(Answer{}) {
				t.Fatalf("a refused frame returned a half-parsed answer %+v", a)
			}
		})
	}
}

func TestParseAnswerAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		frame string
		want  Answer
	}{
		{"observed", `{"v":1,"callId":"c","ok":true,"observed":{"bytes":12, "text":"hi"}}`, OK("c", json.RawMessage(`{"bytes":12,"text":"hi"}`))},
		{"empty observation", `{"v":1,"callId":"c","ok":true,"observed":{}}`, OK("c", json.RawMessage(`{}`))},
		{"refusal", `{"v":1,"callId":"c","ok":false,"refused":"host-not-allowed","why":"example.org is not in the descriptor's hosts"}`, Refuse("c", refusal.New(refusal.HostNotAllowed, "example.org is not in the descriptor's hosts"))},
		{"refusal nulls", `{"v":1,"callId":"c","ok":false,"refused":"fetch-failed","why":"w","observed":null,"budget":null}`, Answer{CallID: "c", Refused: refusal.FetchFailed, Why: "w"}},
		{"budget", `{"v":1,"callId":"c","ok":false,"refused":"budget-exhausted","why":"3 of 3 requests used","budget":{"max":3,"used":3}}`, Answer{CallID: "c", Refused: refusal.BudgetExhausted, Why: "3 of 3 requests used", Budget: &Budget{Used: 3, Max: 3}}},
		{"future rule id", `{"v":1,"callId":"c","ok":false,"refused":"outside-root","why":"w"}`, Answer{CallID: "c", Refused: "outside-root", Why: "w"}},
		{"unicode why", `{"v":1,"callId":"c","ok":false,"refused":"fetch-failed","why":"\u2028<b>&"}`, Answer{CallID: "c", Refused: refusal.FetchFailed, Why: "\u2028<b>&"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := ParseAnswer([]byte(tt.frame))
			if err != nil {
				t.Fatalf("ParseAnswer refused: %v", err)
			}
			if !a.equal(tt.want) {
				t.Fatalf("got %+v\nwant %+v", a, tt.want)
			}
			roundTripAnswer(t, a)
		})
	}
}

func roundTripAnswer(t *testing.T, a Answer) {
	t.Helper()
	b, err := a.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON of an accepted answer: %v", err)
	}
	again, err := ParseAnswer(b)
	if err != nil {
		t.Fatalf("the marshalled answer %s does not parse: %v", b, err)
	}
	if !again.equal(a) {
		t.Fatalf("round trip changed the answer:\n%+v\n%+v", a, again)
	}
}

func TestAnswerErrCarriesRuleAndBudget(t *testing.T) {
	t.Parallel()
	if err := OK("c", json.RawMessage(`{}`)).Err(); err != nil {
		t.Fatalf("Err of an observation = %v", err)
	}
	err := Answer{CallID: "c", Refused: refusal.BudgetExhausted, Why: "w", Budget: &Budget{Used: 5, Max: 5}}.Err()
	var be *BudgetError
	if !errors.As(err, &be) || be.Budget != (Budget{Used: 5, Max: 5}) {
		t.Fatalf("Err = %#v, want a *BudgetError with 5 of 5", err)
	}
	if refusal.RuleOf(err) != refusal.BudgetExhausted {
		t.Fatalf("RuleOf = %q", refusal.RuleOf(err))
	}
	if refusal.RuleOf(Refuse("c", refusal.New(refusal.PageClosed, "gone")).Err()) != refusal.PageClosed {
		t.Fatalf("plain refusal lost its rule")
	}
}

func TestAnswerMarshalRefusesInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		a    Answer
	}{
		{"no callId", OK("", json.RawMessage(`{}`))},
		{"ok without observed", Answer{CallID: "c", OK: true}},
		{"observed not object", OK("c", json.RawMessage(`[]`))},
		{"ok with rule", Answer{CallID: "c", OK: true, Observed: json.RawMessage(`{}`), Refused: "x"}},
		{"refusal without why", Answer{CallID: "c", Refused: refusal.FetchFailed}},
		{"refusal without rule", Answer{CallID: "c", Why: "w"}},
		{"refusal bad rule", Answer{CallID: "c", Refused: "Bad Rule", Why: "w"}},
		{"refusal with observed", Answer{CallID: "c", Refused: refusal.FetchFailed, Why: "w", Observed: json.RawMessage(`{}`)}},
		{"negative budget", Answer{CallID: "c", Refused: refusal.BudgetExhausted, Why: "w", Budget: &Budget{Used: -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if b, err := tt.a.MarshalJSON(); err == nil {
				t.Fatalf("MarshalJSON wrote %s", b)
			}
		})
	}
}
