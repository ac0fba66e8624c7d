package sessiontest

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/session"
)

// OpenRecords returns two views of one new, empty set of records: the same value twice for
// records in one process's memory, two connections for shared ones (two relays of a fleet).
type OpenRecords func(t *testing.T) (a, b session.Records)

// RunRecords is the conformance suite of session.Records: every implementation passes it, the
// memory one and the fleet's. What one view writes the other reads; a ticket is spent once across
// both, even when many redeem it at once.
func RunRecords(t *testing.T, open OpenRecords) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	hash := func(s string) [32]byte { return sha256.Sum256([]byte(s)) }
	rec := func(name string, created time.Time, life time.Duration) session.Record {
		h := hash(name)
		return session.Record{Hash: h, Info: session.Info{ID: fmt.Sprintf("%x", h[:8]), Created: created, Expires: created.Add(life), Client: "192.0.2.1"}}
	}

	t.Run("TicketIsSpentOnceOnEitherView", func(t *testing.T) {
		a, b := open(t)
		must(t, a.AddTicket(hash("t1"), time.Time{}))
		if ok, err := b.TakeTicket(hash("t1"), now.Add(1000*time.Hour)); err != nil || !ok {
			t.Fatalf("a ticket without a deadline, taken on the other view: %v %v", ok, err)
		}
		for _, r := range []session.Records{a, b} {
			if ok, err := r.TakeTicket(hash("t1"), now); err != nil || ok {
				t.Fatalf("a spent ticket was taken again: %v %v", ok, err)
			}
		}
		if ok, err := a.TakeTicket(hash("never"), now); err != nil || ok {
			t.Fatalf("an unknown ticket was taken: %v %v", ok, err)
		}
	})

	t.Run("TicketDeadline", func(t *testing.T) {
		a, b := open(t)
		must(t, a.AddTicket(hash("late"), now.Add(time.Minute)))
		must(t, a.AddTicket(hash("early"), now.Add(time.Minute)))
		if ok, err := b.TakeTicket(hash("early"), now.Add(time.Minute-time.Second)); err != nil || !ok {
			t.Fatalf("a ticket was refused before its deadline: %v %v", ok, err)
		}
		if ok, err := b.TakeTicket(hash("late"), now.Add(time.Minute)); err != nil || ok {
			t.Fatalf("a ticket was taken at its deadline: %v %v", ok, err)
		}
	})

	t.Run("ManyRedeemOneWins", func(t *testing.T) {
		a, b := open(t)
		must(t, a.AddTicket(hash("race"), time.Time{}))
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 16 {
			r := a
			if i%2 == 1 {
				r = b
			}
			wg.Go(func() {
				ok, err := r.TakeTicket(hash("race"), now)
				if err != nil {
					t.Error(err)
				}
				if ok {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d of 16 redeemed one ticket", wins.Load())
		}
	})

	t.Run("SessionsLiveUntilTheyExpire", func(t *testing.T) {
		a, b := open(t)
		one, two := rec("one", now, time.Hour), rec("two", now.Add(time.Minute), 2*time.Hour)
		must(t, a.AddSession(one))
		must(t, b.AddSession(two))
		got, ok, err := b.Session(one.Info.ID, now.Add(time.Minute))
		if err != nil || !ok || got.Hash != one.Hash || !got.Info.Expires.Equal(one.Info.Expires) || !got.Info.Created.Equal(one.Info.Created) || got.Info.Client != one.Info.Client {
			t.Fatalf("Session on the other view = %+v %v %v, want %+v", got, ok, err, one)
		}
		if _, ok, err := a.Session(one.Info.ID, one.Info.Expires); err != nil || ok {
			t.Fatalf("a session was live at its expiry: %v %v", ok, err)
		}
		if _, ok, err := a.Session("0000000000000000", now); err != nil || ok {
			t.Fatalf("an unknown session: %v %v", ok, err)
		}
		list, err := a.Sessions(now.Add(time.Minute))
		if err != nil || len(list) != 2 {
			t.Fatalf("Sessions = %+v %v, want both", list, err)
		}
		list, err = b.Sessions(one.Info.Expires)
		if err != nil || len(list) != 1 || list[0].Info.ID != two.Info.ID {
			t.Fatalf("Sessions after the first expired = %+v %v", list, err)
		}
	})

	t.Run("RemoveOnce", func(t *testing.T) {
		a, b := open(t)
		one := rec("gone", now, time.Hour)
		must(t, a.AddSession(one))
		if ok, err := b.RemoveSession(one.Info.ID); err != nil || !ok {
			t.Fatalf("RemoveSession on the other view: %v %v", ok, err)
		}
		if ok, err := a.RemoveSession(one.Info.ID); err != nil || ok {
			t.Fatalf("removed twice: %v %v", ok, err)
		}
		if _, ok, err := a.Session(one.Info.ID, now); err != nil || ok {
			t.Fatalf("a removed session is still there: %v %v", ok, err)
		}
	})

	t.Run("EndsAreWatched", func(t *testing.T) {
		a, b := open(t)
		w, ok := a.(session.EndWatcher)
		if !ok {
			t.Skip("records of one process: nobody else removes a session")
		}
		ended := make(chan string, 4)
		stop, err := w.WatchEnds(func(id string) { ended <- id })
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		one := rec("watched", now, time.Hour)
		must(t, a.AddSession(one))
		if ok, err := b.RemoveSession(one.Info.ID); err != nil || !ok {
			t.Fatalf("remove: %v %v", ok, err)
		}
		select {
		case id := <-ended:
			if id != one.Info.ID {
				t.Fatalf("heard %q end, want %q", id, one.Info.ID)
			}
		case <-time.After(patience):
			t.Fatal("the other view's removal was never heard")
		}
	})
}

// patience bounds the waits of the suites; nothing should come near it.
const patience = 10 * time.Second

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
