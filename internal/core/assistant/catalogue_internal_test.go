package assistant

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// TestPageDeclarationsOneByOne: a declaration of the page's list that is not an object is refused
// invalid-tool-declaration naming its index, and costs only itself.
func TestPageDeclarationsOneByOne(t *testing.T) {
	t.Parallel()
	good := `{"name":"app_0123abcd__start","description":"Start","parameters":{"type":"object"}}`
	tests := []struct {
		name   string
		tools  string
		kept   int
		refuse []string // the index each refusal names, in order
	}{
		{"all good", `[` + good + `]`, 1, nil},
		{"a string among them", `["start",` + good + `]`, 1, []string{"declaration 0: "}},
		{"null, a number and an array", `[` + good + `,null,7,[]]`, 1, []string{"declaration 1: ", "declaration 2: ", "declaration 3: "}},
		{"an object of the wrong field types", `[{"name":5,"description":"d"},` + good + `]`, 1, []string{"declaration 0: "}},
		{"not a list", `{"tools":[]}`, 0, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decls, errs := pageDeclarations(json.RawMessage(tt.tools))
			if len(decls) != tt.kept || len(errs) != len(tt.refuse) {
				t.Fatalf("kept %d, refused %v; want %d kept, %d refused", len(decls), errs, tt.kept, len(tt.refuse))
			}
			for i, err := range errs {
				r, ok := refusal.As(err)
				if !ok || r.Rule != refusal.InvalidToolDeclaration || !strings.HasPrefix(r.Why, tt.refuse[i]) {
					t.Errorf("refusal %d = %v, want invalid-tool-declaration starting %q", i, err, tt.refuse[i])
				}
			}
		})
	}
}
