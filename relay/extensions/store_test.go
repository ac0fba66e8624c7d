package extensions

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"voicebox/shared/refusal"
)

const notesRaw = `{"id":"notes","name":"Notes","capabilities":["read"],"bounds":{},"tools":[{"name":"read_note","primitive":"read-file","params":{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"]}}]}`

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newStore(t *testing.T) (*Store, *fakeClock, string) {
	dir := t.TempDir()
	c := &fakeClock{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
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

func TestConsoleCode(t *testing.T) {
	t.Parallel()
	t.Run("right code admits once", func(t *testing.T) {
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
		if _, err := s.Approve("notes", code, nil); err == nil {
			t.Fatal("a code worked twice")
		}
	})
	t.Run("wrong code five times voids it", func(t *testing.T) {
		s, _, _ := newStore(t)
		s.Stage([]byte(notesRaw))
		code, _ := s.RequestCode("notes")
		wrong := "00000000"
		if code == wrong {
			wrong = "00000001"
		}
		for range MaxCodeAttempts {
			if _, err := s.Approve("notes", wrong, nil); err == nil {
				t.Fatal("a wrong code admitted")
			}
		}
		if _, err := s.Approve("notes", code, nil); err == nil {
			t.Fatal("the right code worked after five wrong attempts")
		}
	})
	t.Run("expired", func(t *testing.T) {
		s, c, _ := newStore(t)
		s.Stage([]byte(notesRaw))
		code, _ := s.RequestCode("notes")
		c.t = c.t.Add(CodeLifetime + time.Second)
		if _, err := s.Approve("notes", code, nil); err == nil {
			t.Fatal("an expired code admitted")
		}
	})
	t.Run("plan changed", func(t *testing.T) {
		s, _, _ := newStore(t)
		s.Stage([]byte(notesRaw))
		code, _ := s.RequestCode("notes")
		s.Stage([]byte(`{"id":"notes","name":"Notes","capabilities":["read","write"],"bounds":{},"tools":[{"name":"read_note","primitive":"read-file"},{"name":"w","primitive":"write-file"}]}`))
		if _, err := s.Approve("notes", code, nil); refusal.RuleOf(err) != refusal.ApprovalPlanChanged {
			t.Fatalf("err = %v, want approval-plan-changed", err)
		}
	})
}
