package extensions

import (
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

func newStore(t *testing.T) (*Store, *fakeClock, string) {
	dir := t.TempDir()
	c := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	return NewStore(dir, c.now), c, dir
}

func loadedIDs(t *testing.T, s *Store) ([]string, map[string]refusal.Rule) {
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
	s, _, _ := newStore(t)
	if _, err := s.Stage([]byte(notesRaw)); err != nil {
		t.Fatal(err)
	}
	if ids, _ := loadedIDs(t, s); len(ids) != 0 {
		t.Fatalf("a staged proposal was loaded: %v", ids)
	}
}

func TestHostTokenAdmissionDenyRevokeAndReload(t *testing.T) {
	t.Parallel()
	s, _, dir := newStore(t)
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
	restarted := NewStore(dir, nil)
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
		s, _, dir := newStore(t)
		s.Stage([]byte(notesRaw))
		code, err := s.RequestCode("notes")
		if err != nil || len(code) != CodeDigits {
			t.Fatalf("code %q, %v", code, err)
		}
		fi, err := os.Stat(filepath.Join(dir, PendingFile))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("pending file: %v %v", fi, err)
		}
		if _, err := s.Approve("notes", code, nil); err != nil {
			t.Fatal(err)
		}
		if ids, _ := loadedIDs(t, s); len(ids) != 1 {
			t.Fatal("not admitted")
		}
		if _, err := os.Stat(filepath.Join(dir, PendingFile)); !os.IsNotExist(err) {
			t.Fatal("the pending file outlived its code")
		}
		_, err = s.Approve("notes", code, nil)
		rule(t, err, refusal.ApprovalCodeUsed)
	})
	t.Run("wrong code five times voids it", func(t *testing.T) {
		s, _, _ := newStore(t)
		s.Stage([]byte(notesRaw))
		code, _ := s.RequestCode("notes")
		for i := range MaxCodeAttempts {
			_, err := s.Approve("notes", wrongCode(code), nil)
			rule(t, err, refusal.ApprovalCodeWrong)
			if i == MaxCodeAttempts-1 && !strings.Contains(err.Error(), "void") {
				t.Fatalf("the last wrong attempt does not say the code is void: %v", err)
			}
		}
		_, err := s.Approve("notes", code, nil)
		rule(t, err, refusal.ApprovalCodeExhausted)
		if ids, _ := loadedIDs(t, s); len(ids) != 0 {
			t.Fatal("admitted after five wrong attempts")
		}
		if fresh, err := s.RequestCode("notes"); err != nil {
			t.Fatal(err)
		} else if _, err := s.Approve("notes", fresh, nil); err != nil {
			t.Fatalf("a new code after the void one: %v", err)
		}
	})
	t.Run("expired", func(t *testing.T) {
		s, c, _ := newStore(t)
		s.Stage([]byte(notesRaw))
		code, _ := s.RequestCode("notes")
		c.add(CodeLifetime + time.Second)
		_, err := s.Approve("notes", code, nil)
		rule(t, err, refusal.ApprovalCodeExpired)
		_, err = s.Approve("notes", code, nil)
		rule(t, err, refusal.ApprovalCodeExpired)
	})
	t.Run("missing", func(t *testing.T) {
		s, _, _ := newStore(t)
		s.Stage([]byte(notesRaw))
		_, err := s.Approve("notes", "12345678", nil)
		rule(t, err, refusal.ApprovalCodeMissing)
		s.Stage([]byte(`{"id":"other","name":"O","capabilities":["clock"],"tools":[{"name":"t","primitive":"now"}]}`))
		code, _ := s.RequestCode("other")
		_, err = s.Approve("notes", code, nil) // a code is bound to its proposal
		rule(t, err, refusal.ApprovalCodeMissing)
	})
	t.Run("plan changed", func(t *testing.T) {
		s, _, _ := newStore(t)
		s.Stage([]byte(notesRaw))
		code, _ := s.RequestCode("notes")
		s.Stage([]byte(`{"id":"notes","name":"Notes","capabilities":["read","write"],"bounds":{},"tools":[{"name":"read_note","primitive":"read-file"},{"name":"w","primitive":"write-file"}]}`))
		_, err := s.Approve("notes", code, nil)
		rule(t, err, refusal.ApprovalPlanChanged)
		if ids, _ := loadedIDs(t, s); len(ids) != 0 {
			t.Fatal("the changed proposal was admitted")
		}
	})
	t.Run("requests are rate limited", func(t *testing.T) {
		s, c, _ := newStore(t)
		s.Stage([]byte(notesRaw))
		for range MaxCodeRequests {
			if _, err := s.RequestCode("notes"); err != nil {
				t.Fatal(err)
			}
			c.add(time.Second)
		}
		_, err := s.RequestCode("notes")
		rule(t, err, refusal.ApprovalRateLimited)
		c.add(CodeRequestWindow)
		if _, err := s.RequestCode("notes"); err != nil {
			t.Fatalf("after the window: %v", err)
		}
	})
}
