package refusal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

func TestRefusalIsAnErrorWithItsRule(t *testing.T) {
	t.Parallel()
	r := New(UnknownField, "the envelope carries %q, which no envelope has", "grant")
	wrapped := fmt.Errorf("parse call: %w", r)
	if got := RuleOf(wrapped); got != UnknownField {
		t.Fatalf("RuleOf(wrapped) = %q, want %q", got, UnknownField)
	}
	if !errors.Is(wrapped, Of(UnknownField)) {
		t.Fatalf("errors.Is(wrapped, Of(UnknownField)) = false")
	}
	if errors.Is(wrapped, Of(BadVersion)) {
		t.Fatalf("errors.Is matched another rule")
	}
	if RuleOf(errors.New("plain")) != "" {
		t.Fatalf("RuleOf(plain error) is not empty")
	}
	if want := `unknown-field: the envelope carries "grant", which no envelope has`; r.Error() != want {
		t.Fatalf("Error() = %q, want %q", r.Error(), want)
	}
}

func TestRefusalMarshalsToAnswerFields(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(New(NoPage, "no page is connected"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"refused":"no-page","why":"no page is connected"}`; string(b) != want {
		t.Fatalf("marshal = %s, want %s", b, want)
	}
	if want := `{"ok":false,"refused":"no-page","why":"no page is connected"}`; string(New(NoPage, "no page is connected").JSON()) != want {
		t.Fatalf("JSON() = %s", New(NoPage, "no page is connected").JSON())
	}
}

func TestJSONAgreesWithMarshal(t *testing.T) {
	for _, why := range []string{"", "plain", "<b> & \"q\" \\ \n", "caf\u00e9 \u2028 \xff"} {
		r := New(InvalidArgument, "%s", why)
		want, err := json.Marshal(struct {
			OK      bool   `json:"ok"`
			Refused Rule   `json:"refused"`
			Why     string `json:"why"`
		}{false, r.Rule, r.Why})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.JSON(); !bytes.Equal(got, want) {
			t.Errorf("JSON() = %s; json.Marshal %s", got, want)
		}
	}
}
