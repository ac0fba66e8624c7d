package voice_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/live/gemini"
	"github.com/voicebox-go/voicebox/internal/core/live/openai"
	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
	"github.com/voicebox-go/voicebox/internal/core/voice"
)

// viewing is a catalogue that also says what is on screen: a new note each time it is asked.
type viewing struct {
	*catalogue
	asked atomic.Int32
}

func (v *viewing) CurrentView(context.Context) string {
	return fmt.Sprintf("# Current view\nOrder Book: view %d", v.asked.Add(1))
}

var _ voice.Viewer = (*viewing)(nil)

// TestTheCurrentViewIsRefreshedAfterEveryTurn: the session starts with the catalogue's
// instruction and the current view note, and after the model's turn the note is asked for again
// and replaces the old one.
func TestTheCurrentViewIsRefreshedAfterEveryTurn(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{openai.Name, gemini.Name} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			fx := vendorfixture.Start(t, vendorfixture.Options{Script: vendorfixture.Script{
				OnText:           func(c *vendorfixture.Conn, text string) { c.Say("Two are open.", vendorfixture.Tone(24000, 20, 440)) },
				OnResponseCreate: func(c *vendorfixture.Conn) { c.Say("Two are open.", vendorfixture.Tone(24000, 20, 440)) },
			}})
			cat := &viewing{catalogue: &catalogue{decls: nil}}
			r := startRelay(t, relayOpts{fx: fx, provider: provider, catalogue: cat, env: map[string]string{"OPENAI_API_KEY": fx.Key(), "GEMINI_API_KEY": fx.Key()}})
			p := dialPage(t, r, nil)
			p.frame("state", "ready", 1)
			conn := fx.Conn(t, 0, bound)
			setup := conn.Frames()[0].Raw
			if !bytes.Contains(setup, []byte(`never claim what you did not observe.\n\n# Current view\nOrder Book: view 1`)) {
				t.Fatalf("the session started with %s", setup)
			}
			p.sendJSON(`{"type":"text","text":"how many orders are open?"}`)
			p.frame("state", "turn-complete", 1)
			if provider == gemini.Name {
				return // Gemini cannot change its instruction mid-session: it keeps the first note
			}
			// The script answers both the text and the response it asks for, so two turns may end
			// before the relay sends its update: the note it carries is a new one (view 2 or a
			// later ask), never the first.
			fr := conn.WaitType(t, bound, "session.update", 2)
			if !bytes.Contains(fr.Raw, []byte(`# Current view\nOrder Book: view `)) || strings.Contains(string(fr.Raw), "view 1\"") {
				t.Fatalf("after the turn the session got %s", fr.Raw)
			}
		})
	}
}
