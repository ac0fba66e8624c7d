package extensionhost

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

const notesRaw = `{"id":"notes","name":"Notes","capabilities":["read"],"bounds":{},"tools":[{"name":"read_note","primitive":"read-file","params":{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"]}}]}`

// fakeClock is a clock a test moves by hand; safe to read from the relay's handlers.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newAdmissions(t *testing.T) (*Admissions, *fakeClock, string) {
	dir := t.TempDir()
	c := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	return NewAdmissions(dir, c.now), c, dir
}

func loadedIDs(t *testing.T, s *Admissions) ([]string, map[string]refusal.Rule) {
	t.Helper()
	l, p, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range l {
		ids = append(ids, x.Descriptor.ID)
	}
	probs := map[string]refusal.Rule{}
	for _, x := range p {
		probs[x.ID] = x.Rule
	}
	return ids, probs
}

func TestStagingNeverLoads(t *testing.T) {
	t.Parallel()
	s, _, _ := newAdmissions(t)
	if _, err := s.Stage([]byte(notesRaw)); err != nil {
		t.Fatal(err)
	}
	if ids, _ := loadedIDs(t, s); len(ids) != 0 {
		t.Fatalf("a staged proposal was loaded: %v", ids)
	}
}

func TestHostTokenAdmissionDenyRevokeAndReload(t *testing.T) {
	t.Parallel()
	s, _, dir := newAdmissions(t)
	s.Stage([]byte(notesRaw))
	if _, err := s.Decide("notes", false, "host-token", nil); err != nil {
		t.Fatal(err)
	}
	if ids, _ := loadedIDs(t, s); len(ids) != 0 {
		t.Fatal("a denied proposal was loaded")
	}
	if _, err := s.Decide("notes", true, "host-token", nil); err != nil {
		t.Fatal(err)
	}
	// A file dropped in by hand, and a corrupt one: reported, never run, never blocking.
	os.WriteFile(filepath.Join(dir, "sneaky.json"), []byte(`{"id":"sneaky","name":"S","capabilities":["clock"],"tools":[{"name":"t","primitive":"now"}]}`), 0o600)
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{not json`), 0o600)
	restarted := NewAdmissions(dir, nil)
	ids, probs := loadedIDs(t, restarted)
	if len(ids) != 1 || ids[0] != "notes" {
		t.Fatalf("loaded %v", ids)
	}
	if probs["sneaky"] != refusal.PresentNotAdmitted || probs["broken"] != refusal.BadDescriptor {
		t.Fatalf("problems %v", probs)
	}
	// Editing the admitted file voids its admission.
	os.WriteFile(filepath.Join(dir, "notes.json"), []byte(notesRaw+" "), 0o600)
	if ids, probs := loadedIDs(t, restarted); len(ids) != 0 || probs["notes"] != refusal.PresentNotAdmitted {
		t.Fatalf("an edited admitted file: loaded %v, problems %v", ids, probs)
	}
	os.WriteFile(filepath.Join(dir, "notes.json"), []byte(notesRaw), 0o600)
	if err := restarted.Revoke("notes"); err != nil {
		t.Fatal(err)
	}
	if ids, _ := loadedIDs(t, restarted); len(ids) != 0 {
		t.Fatal("a revoked descriptor was loaded")
	}
}

// wrongCode returns an 8-digit code that is not code.
func wrongCode(code string) string {
	if code == "00000000" {
		return "00000001"
	}
	return "00000000"
}

func TestConsoleCode(t *testing.T) {
	t.Parallel()
	rule := func(t *testing.T, err error, want refusal.Rule) {
		t.Helper()
		if r, ok := refusal.As(err); !ok || r.Rule != want || r.Why == "" {
			t.Fatalf("err = %v, want %s", err, want)
		}
	}
	t.Run("right code admits once, then is used", func(t *testing.T) {
		s, _, dir := newAdmissions(t)
		s.Stage([]byte(notesRaw))
		code, err := s.RequestCode("notes", "client 127.0.0.1")
		if err != nil || len(code) != CodeDigits {
			t.Fatalf("code %q, %v", code, err)
		}
		fi, err := os.Stat(filepath.Join(dir, PendingFile))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("pending file: %v %v", fi, err)
		}
		if _, err := s.Approve("notes", code, "client 127.0.0.1", nil); err != nil {
			t.Fatal(err)
		}
		if ids, _ := loadedIDs(t, s); len(ids) != 1 {
			t.Fatal("not admitted")
		}
		if codes, _ := PendingCodes(dir, time.Now()); len(codes) != 0 {
			t.Fatalf("the pending file still offers a used code: %+v", codes)
		}
		_, err = s.Approve("notes", code, "client 127.0.0.1", nil)
		rule(t, err, refusal.ApprovalCodeUsed)
	})
	t.Run("wrong attempts lock out their requester, never the code", func(t *testing.T) {
		s, c, _ := newAdmissions(t)
		s.Stage([]byte(notesRaw))
		code, _ := s.RequestCode("notes", "client 127.0.0.1")
		for i := range MaxCodeAttempts {
			_, err := s.Approve("notes", wrongCode(code), "client 127.0.0.2", nil)
			rule(t, err, refusal.ApprovalCodeWrong)
			if i == MaxCodeAttempts-1 && !strings.Contains(err.Error(), "no more from you") {
				t.Fatalf("the last wrong attempt does not say the code takes no more: %v", err)
			}
		}
		_, err := s.Approve("notes", code, "client 127.0.0.2", nil)
		rule(t, err, refusal.ApprovalGuessesExhausted)
		if ids, _ := loadedIDs(t, s); len(ids) != 0 {
			t.Fatal("admitted after five wrong attempts, to the one who made them")
		}
		if again, err := s.RequestCode("notes", "client 127.0.0.2"); err != nil || again != code {
			t.Fatalf("the guesser asking again got %q, %v; want the same code", again, err)
		}
		if _, err := s.Approve("notes", code, "client 127.0.0.1", nil); err != nil {
			t.Fatalf("the person's code after another's wrong attempts: %v", err)
		}
		// The locked-out requester gets a fresh code of its own once the old one is gone.
		s.Stage([]byte(`{"id":"other","name":"O","capabilities":["clock"],"tools":[{"name":"t","primitive":"now"}]}`))
		code, _ = s.RequestCode("other", "client 127.0.0.2")
		for range MaxCodeAttempts {
			s.Approve("other", wrongCode(code), "client 127.0.0.2", nil)
		}
		c.add(CodeLifetime + time.Second)
		if fresh, err := s.RequestCode("other", "client 127.0.0.2"); err != nil || fresh == "" {
			t.Fatalf("a new code after the old one expired: %q, %v", fresh, err)
		} else if _, err := s.Approve("other", fresh, "client 127.0.0.2", nil); err != nil {
			t.Fatalf("the new code: %v", err)
		}
	})
	t.Run("wrong attempts from everyone throttle at the ceiling, never void", func(t *testing.T) {
		s, c, _ := newAdmissions(t)
		s.Stage([]byte(notesRaw))
		code, _ := s.RequestCode("notes", "session person")
		for i := range MaxWrongGuesses {
			_, err := s.Approve("notes", wrongCode(code), fmt.Sprintf("client 127.0.2.%d", i), nil)
			rule(t, err, refusal.ApprovalCodeWrong)
		}
		// Past the ceiling nothing is compared, the right code included, from anyone new.
		_, err := s.Approve("notes", code, "session person", nil)
		rule(t, err, refusal.ApprovalRateLimited)
		_, err = s.Approve("notes", wrongCode(code), "client 127.0.3.1", nil)
		rule(t, err, refusal.ApprovalRateLimited)
		c.add(CodeLifetime / 2)
		if again, err := s.RequestCode("notes", "session person"); err != nil || again != code {
			t.Fatalf("the throttled code asked for again: %q, %v; want it, standing", again, err)
		}
		// Once the wrong attempts leave the window, the person is compared again.
		c.add(CodeRequestWindow - CodeLifetime/2)
		fresh, err := s.RequestCode("notes", "session person")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Approve("notes", fresh, "session person", nil); err != nil {
			t.Fatalf("once the window has room: %v", err)
		}
	})
	t.Run("expired", func(t *testing.T) {
		s, c, _ := newAdmissions(t)
		s.Stage([]byte(notesRaw))
		code, _ := s.RequestCode("notes", "client 127.0.0.1")
		c.add(CodeLifetime + time.Second)
		_, err := s.Approve("notes", code, "client 127.0.0.1", nil)
		rule(t, err, refusal.ApprovalCodeExpired)
		_, err = s.Approve("notes", code, "client 127.0.0.1", nil)
		rule(t, err, refusal.ApprovalCodeExpired)
	})
	t.Run("missing", func(t *testing.T) {
		s, _, _ := newAdmissions(t)
		s.Stage([]byte(notesRaw))
		_, err := s.Approve("notes", "12345678", "client 127.0.0.1", nil)
		rule(t, err, refusal.ApprovalCodeMissing)
		s.Stage([]byte(`{"id":"other","name":"O","capabilities":["clock"],"tools":[{"name":"t","primitive":"now"}]}`))
		code, _ := s.RequestCode("other", "client 127.0.0.1")
		_, err = s.Approve("notes", code, "client 127.0.0.1", nil) // a code is bound to its proposal
		rule(t, err, refusal.ApprovalCodeMissing)
	})
	t.Run("plan changed", func(t *testing.T) {
		s, _, _ := newAdmissions(t)
		s.Stage([]byte(notesRaw))
		code, _ := s.RequestCode("notes", "client 127.0.0.1")
		s.Stage([]byte(`{"id":"notes","name":"Notes","capabilities":["read","write"],"bounds":{},"tools":[{"name":"read_note","primitive":"read-file"},{"name":"w","primitive":"write-file"}]}`))
		_, err := s.Approve("notes", code, "client 127.0.0.1", nil)
		rule(t, err, refusal.ApprovalPlanChanged)
		if ids, _ := loadedIDs(t, s); len(ids) != 0 {
			t.Fatal("the changed proposal was admitted")
		}
	})
	t.Run("requests are rate limited per requester", func(t *testing.T) {
		s, c, _ := newAdmissions(t)
		s.Stage([]byte(notesRaw))
		for range MaxCodeRequests {
			if _, err := s.RequestCode("notes", "client 127.0.0.1"); err != nil {
				t.Fatal(err)
			}
			c.add(time.Second)
		}
		_, err := s.RequestCode("notes", "client 127.0.0.1")
		rule(t, err, refusal.ApprovalRateLimited)
		if _, err := s.RequestCode("notes", "session 0123456789abcdef"); err != nil {
			t.Fatalf("another requester was held to the first one's limit: %v", err)
		}
		c.add(CodeRequestWindow)
		if _, err := s.RequestCode("notes", "client 127.0.0.1"); err != nil {
			t.Fatalf("after the window: %v", err)
		}
	})
	t.Run("asking again never voids the code a person holds", func(t *testing.T) {
		s, c, dir := newAdmissions(t)
		s.Stage([]byte(notesRaw))
		held, _ := s.RequestCode("notes", "session person")
		for i := range MaxCodeRequests {
			again, err := s.RequestCode("notes", fmt.Sprintf("client 127.0.0.%d", i+2))
			if err != nil || again != held {
				t.Fatalf("asking again gave %q, %v; want the outstanding code", again, err)
			}
		}
		s.Stage([]byte(`{"id":"other","name":"O","capabilities":["clock"],"tools":[{"name":"t","primitive":"now"}]}`))
		if _, err := s.RequestCode("other", "client 127.0.0.9"); err != nil {
			t.Fatal(err)
		}
		codes, err := PendingCodes(dir, c.now())
		if err != nil || len(codes) != 2 || codes[0].ID != "notes" || codes[0].Code != held || codes[1].ID != "other" {
			t.Fatalf("pending codes %+v, %v", codes, err)
		}
		if _, err := s.Approve("notes", held, "client 127.0.0.1", nil); err != nil {
			t.Fatalf("the held code after others asked: %v", err)
		}
	})
	t.Run("new codes are limited per extension", func(t *testing.T) {
		s, c, _ := newAdmissions(t)
		s.Stage([]byte(notesRaw))
		for i := range MaxCodesPerExtension {
			if _, err := s.RequestCode("notes", fmt.Sprintf("client 127.0.0.%d", i+2)); err != nil {
				t.Fatal(err)
			}
			// A plan that changes replaces its code with a new one.
			s.Stage([]byte(fmt.Sprintf(`{"id":"notes","name":"Notes %d","capabilities":["clock"],"tools":[{"name":"notes_now","primitive":"now"}]}`, i)))
			c.add(time.Second)
		}
		_, err := s.RequestCode("notes", "client 127.0.0.99")
		rule(t, err, refusal.ApprovalRateLimited)
		s.Stage([]byte(`{"id":"other","name":"O","capabilities":["clock"],"tools":[{"name":"t","primitive":"now"}]}`))
		if _, err := s.RequestCode("other", "client 127.0.0.99"); err != nil {
			t.Fatalf("another extension was held to the first one's limit: %v", err)
		}
	})
	t.Run("codes expiring one after another never reach the extension's limit", func(t *testing.T) {
		s, c, _ := newAdmissions(t)
		s.Stage([]byte(notesRaw))
		for i := range 3 * MaxCodesPerExtension {
			if _, err := s.RequestCode("notes", fmt.Sprintf("client 127.0.4.%d", i)); err != nil {
				t.Fatalf("code %d: %v", i+1, err)
			}
			c.add(CodeLifetime + time.Second)
		}
	})
	t.Run("open codes are bounded per requester, and never lock out one with none", func(t *testing.T) {
		s, _, _ := newAdmissions(t)
		stage := func(id string) {
			s.Stage([]byte(`{"id":"` + id + `","name":"X","capabilities":["clock"],"tools":[{"name":"t` + id + `","primitive":"now"}]}`))
		}
		for i := range MaxOpenCodesPerRequester + 1 {
			id := fmt.Sprintf("m%d", i)
			stage(id)
			_, err := s.RequestCode(id, "client 127.0.0.2")
			if i < MaxOpenCodesPerRequester && err != nil {
				t.Fatal(err)
			}
			if i == MaxOpenCodesPerRequester {
				rule(t, err, refusal.ApprovalRateLimited)
			}
		}
		// Others fill the relay's open codes; each of them asks once.
		for i := MaxOpenCodesPerRequester; len(pendingIDs(t, s)) < MaxOutstandingCodes; i++ {
			id := fmt.Sprintf("x%d", i)
			stage(id)
			if _, err := s.RequestCode(id, fmt.Sprintf("client 127.0.1.%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		stage("mine")
		stage("more")
		if _, err := s.RequestCode("mine", "session person"); err != nil {
			t.Fatalf("a requester with no code open, past the relay's %d: %v", MaxOutstandingCodes, err)
		}
		_, err := s.RequestCode("more", "session person")
		rule(t, err, refusal.ApprovalRateLimited)
	})
}

// pendingIDs is the proposals with an outstanding code.
func pendingIDs(t *testing.T, s *Admissions) []string {
	t.Helper()
	codes, err := PendingCodes(s.dir, s.clock())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range codes {
		ids = append(ids, c.ID)
	}
	return ids
}

// TestARevocationAfterATornLedgerLineHolds: a ledger whose last line was cut off part way (a
// full disk, a crash) takes the next revocation on a line of its own, so the revoked extension
// is not loaded again (the report: the revocation was glued onto the torn line and skipped).
func TestARevocationAfterATornLedgerLineHolds(t *testing.T) {
	t.Parallel()
	s, _, dir := newAdmissions(t)
	s.Stage([]byte(notesRaw))
	if _, err := s.Decide("notes", true, "host-token", nil); err != nil {
		t.Fatal(err)
	}
	ledger := filepath.Join(dir, LedgerFile)
	f, err := os.OpenFile(ledger, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"action":"revoke","id":"no`) // the torn line
	f.Close()
	if err := s.Revoke("notes"); err != nil {
		t.Fatal(err)
	}
	if ids, _ := loadedIDs(t, NewAdmissions(dir, nil)); len(ids) != 0 {
		t.Fatalf("a revoked extension is loaded after a torn ledger line: %v", ids)
	}
	b, _ := os.ReadFile(ledger)
	if lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); len(lines) != 2 || !strings.Contains(lines[1], `"action":"revoke"`) {
		t.Fatalf("the ledger is %q", b)
	}
}
