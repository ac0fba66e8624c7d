// Package storetest is the conformance suite of extensionhost.Store: the host state directory
// (DirStore) and a fleet's JetStream store (internal/door/fleet) pass the same cases, and so does the
// approval code's single use built on them.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/door/extensionhost"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Open returns two views of one new, empty store: two DirStores on one directory, or two
// relays' connections to one fleet.
type Open func(t *testing.T) (a, b extensionhost.Store)

// notesRaw is a descriptor the gate admits.
const notesRaw = `{"id":"notes","name":"Notes","capabilities":["clock"],"tools":[{"name":"notes_now","primitive":"now"}]}`

// Run runs the suite.
func Run(t *testing.T, open Open) {
	t.Run("WrittenOnOneReadOnTheOther", func(t *testing.T) {
		a, b := open(t)
		if _, err := b.ReadFile("notes.json", 1024); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a missing file: %v, want fs.ErrNotExist", err)
		}
		if err := a.WriteFile("proposals/notes.json", []byte(notesRaw)); err != nil {
			t.Fatal(err)
		}
		if err := a.WriteFile("notes.json", []byte("v1")); err != nil {
			t.Fatal(err)
		}
		if err := b.WriteFile("notes.json", []byte("v2")); err != nil {
			t.Fatal(err)
		}
		if got, err := a.ReadFile("notes.json", 2); err != nil || string(got) != "v2" {
			t.Fatalf("replaced file = %q %v", got, err)
		}
		if _, err := a.ReadFile("notes.json", 1); !errors.Is(err, extensionhost.ErrStoreFileTooLarge) {
			t.Fatalf("read over its bound: %v", err)
		}
		if got, err := b.ReadFile("proposals/notes.json", 1<<10); err != nil || string(got) != notesRaw {
			t.Fatalf("proposal = %q %v", got, err)
		}
		if top, err := b.List(""); err != nil || !slices.Equal(top, []string{"notes.json"}) {
			t.Fatalf("List top = %q %v (a folder is not a file)", top, err)
		}
		if props, err := b.List("proposals"); err != nil || !slices.Equal(props, []string{"notes.json"}) {
			t.Fatalf("List proposals = %q %v", props, err)
		}
		if none, err := b.List("nothing"); err != nil || len(none) != 0 {
			t.Fatalf("List of a missing folder = %q %v", none, err)
		}
	})

	t.Run("ModulesRoundTrip", func(t *testing.T) {
		a, b := open(t)
		big := bytes.Repeat([]byte("\x00asm0123456789"), 1<<20/14) // near wasmtool's default bound
		if err := a.WriteFile("mods/big.wasm", big); err != nil {
			t.Fatal(err)
		}
		if got, err := b.ReadFile("mods/big.wasm", int64(len(big))); err != nil || !bytes.Equal(got, big) {
			t.Fatalf("module read back: %d bytes, %v", len(got), err)
		}
		if _, err := b.ReadFile("mods/big.wasm", int64(len(big)-1)); !errors.Is(err, extensionhost.ErrStoreFileTooLarge) {
			t.Fatalf("a module over its bound: %v", err)
		}
		if got, err := b.List("mods"); err != nil || !slices.Equal(got, []string{"big.wasm"}) {
			t.Fatalf("List mods = %q %v", got, err)
		}
	})

	t.Run("RemovedOnOneGoneOnTheOther", func(t *testing.T) {
		a, b := open(t)
		a.WriteFile("proposals/x.json", []byte("{}"))
		a.WriteFile("proposals/y.json", []byte("{}"))
		if err := b.Remove("proposals/x.json"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.ReadFile("proposals/x.json", 10); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a removed file reads: %v", err)
		}
		if err := a.Remove("proposals/x.json"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("removed twice: %v", err)
		}
		if got, _ := a.List("proposals"); !slices.Equal(got, []string{"y.json"}) {
			t.Fatalf("List after a removal = %q", got)
		}
	})

	t.Run("BadNames", func(t *testing.T) {
		a, _ := open(t)
		for _, name := range []string{"", ".", "..", "../x.json", "/etc/passwd", "a//b", `a\b`, ".ledger.jsonl", "proposals/.x", "a\x00b", "a/"} {
			if err := a.WriteFile(name, []byte("x")); err == nil {
				t.Errorf("WriteFile(%q) was taken", name)
			}
			if _, err := a.ReadFile(name, 10); err == nil || errors.Is(err, fs.ErrNotExist) {
				t.Errorf("ReadFile(%q) = %v, want a refusal of the name", name, err)
			}
			if err := a.Remove(name); err == nil || errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Remove(%q) = %v, want a refusal of the name", name, err)
			}
		}
		for _, dir := range []string{"..", "/", "a/../b"} {
			if _, err := a.List(dir); err == nil {
				t.Errorf("List(%q) was taken", dir)
			}
		}
	})

	t.Run("LedgerAppendsInOrder", func(t *testing.T) {
		a, b := open(t)
		if got, err := a.ReadLedger(); err != nil || len(got) != 0 {
			t.Fatalf("an empty ledger = %q %v", got, err)
		}
		var want bytes.Buffer
		for i := range 5 {
			line := fmt.Sprintf(`{"action":"admit","id":"e%d"}`, i)
			view := a
			if i%2 == 1 {
				view = b
			}
			if err := view.AppendLedger([]byte(line)); err != nil {
				t.Fatal(err)
			}
			want.WriteString(line + "\n")
		}
		for _, v := range []extensionhost.Store{a, b} {
			if got, err := v.ReadLedger(); err != nil || string(got) != want.String() {
				t.Fatalf("ledger = %q %v, want %q", got, err, want.String())
			}
		}
	})

	t.Run("CodesCompareAndSet", func(t *testing.T) {
		a, b := open(t)
		if doc, rev, err := a.Codes(); err != nil || doc != nil || rev != 0 {
			t.Fatalf("no document = %q %d %v", doc, rev, err)
		}
		if ok, err := a.SwapCodes([]byte(`{"n":1}`), 0); err != nil || !ok {
			t.Fatalf("create = %v %v", ok, err)
		}
		if ok, err := b.SwapCodes([]byte(`{"n":9}`), 0); err != nil || ok {
			t.Fatalf("a second create took (%v)", err)
		}
		doc, rev, err := b.Codes()
		if err != nil || string(doc) != `{"n":1}` || rev == 0 {
			t.Fatalf("document = %q %d %v", doc, rev, err)
		}
		if ok, err := b.SwapCodes([]byte(`{"n":2}`), rev); err != nil || !ok {
			t.Fatalf("swap on the revision read = %v %v", ok, err)
		}
		if ok, _ := a.SwapCodes([]byte(`{"n":3}`), rev); ok {
			t.Fatal("a swap on a stale revision took")
		}
		doc, rev, _ = a.Codes()
		if string(doc) != `{"n":2}` {
			t.Fatalf("document = %q", doc)
		}
		if ok, _ := a.SwapCodes(nil, rev+1); ok {
			t.Fatal("a removal on a wrong revision took")
		}
		if ok, err := a.SwapCodes(nil, rev); err != nil || !ok {
			t.Fatalf("remove = %v %v", ok, err)
		}
		if doc, rev, err := b.Codes(); err != nil || doc != nil || rev != 0 {
			t.Fatalf("a removed document = %q %d %v", doc, rev, err)
		}
		if ok, err := b.SwapCodes([]byte(`{"n":4}`), 0); err != nil || !ok {
			t.Fatalf("create after removal = %v %v", ok, err)
		}
	})

	t.Run("CodesHammer", func(t *testing.T) {
		a, b := open(t)
		const writers = 12
		var wg sync.WaitGroup
		for i := range writers {
			v := a
			if i%2 == 1 {
				v = b
			}
			wg.Go(func() {
				for {
					doc, rev, err := v.Codes()
					if err != nil {
						t.Error(err)
						return
					}
					n, _ := strconv.Atoi(string(doc))
					if ok, err := v.SwapCodes([]byte(strconv.Itoa(n+1)), rev); err != nil {
						t.Error(err)
						return
					} else if ok {
						return
					}
				}
			})
		}
		wg.Wait()
		if doc, _, _ := a.Codes(); string(doc) != strconv.Itoa(writers) {
			t.Fatalf("%d increments by compare-and-set made %q", writers, doc)
		}
	})

	t.Run("ACodeIsRedeemedOnce", func(t *testing.T) {
		a, b := open(t)
		on := func(s extensionhost.Store) *extensionhost.Admissions {
			return extensionhost.NewAdmissionsIn(t.TempDir(), s, nil)
		}
		onA, onB := on(a), on(b)
		if _, err := onA.Stage([]byte(notesRaw)); err != nil {
			t.Fatal(err)
		}
		code, err := onA.RequestCode("notes", "client 127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if again, err := onB.RequestCode("notes", "client 127.0.0.2"); err != nil || again != code {
			t.Fatalf("the other view gave %q %v, want the outstanding code", again, err)
		}
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			s := onA
			if i%2 == 1 {
				s = onB
			}
			wg.Go(func() {
				_, err := s.Approve("notes", code, "client 127.0.0.1", nil)
				switch refusal.RuleOf(err) {
				case "":
					wins.Add(1)
				case refusal.ApprovalCodeUsed, refusal.ApprovalCodeMissing:
				default:
					t.Errorf("a losing redemption: %v", err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d of 8 redeemed one code", wins.Load())
		}
		for _, s := range []*extensionhost.Admissions{onA, onB} {
			if l, _, err := s.Load(); err != nil || len(l) != 1 || l[0].Descriptor.ID != "notes" {
				t.Fatalf("loaded %+v %v", l, err)
			}
		}
		if _, err := onB.Approve("notes", code, "client 127.0.0.1", nil); refusal.RuleOf(err) != refusal.ApprovalCodeUsed {
			t.Fatalf("a spent code later: %v", err)
		}
	})

	t.Run("AttemptsCountAcrossViews", func(t *testing.T) {
		// One requester's wrong attempts, spread over the views, count against it alone; the
		// attempts of all requesters together reach the proposal's ceiling on every view at
		// once, and the code stands.
		a, b := open(t)
		onA, onB := extensionhost.NewAdmissionsIn(t.TempDir(), a, nil), extensionhost.NewAdmissionsIn(t.TempDir(), b, nil)
		views := []*extensionhost.Admissions{onA, onB}
		onA.Stage([]byte(notesRaw))
		code, err := onA.RequestCode("notes", "client 127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		wrong := "00000000"
		if code == wrong {
			wrong = "11111111"
		}
		for i := range extensionhost.MaxCodeAttempts {
			if _, err := views[i%2].Approve("notes", wrong, "client 127.0.0.2", nil); refusal.RuleOf(err) != refusal.ApprovalCodeWrong {
				t.Fatalf("wrong attempt %d: %v", i+1, err)
			}
		}
		if _, err := onA.Approve("notes", code, "client 127.0.0.2", nil); refusal.RuleOf(err) != refusal.ApprovalGuessesExhausted {
			t.Fatalf("the guesser's attempt after its %d wrong ones on two views: %v", extensionhost.MaxCodeAttempts, err)
		}
		for i := extensionhost.MaxCodeAttempts; i < extensionhost.MaxWrongGuesses; i++ {
			guesser := fmt.Sprintf("client 127.0.1.%d", i/extensionhost.MaxCodeAttempts)
			if _, err := views[i%2].Approve("notes", wrong, guesser, nil); refusal.RuleOf(err) != refusal.ApprovalCodeWrong {
				t.Fatalf("wrong attempt %d (%s): %v", i+1, guesser, err)
			}
		}
		for _, v := range views {
			if _, err := v.Approve("notes", code, "client 127.0.0.1", nil); refusal.RuleOf(err) != refusal.ApprovalRateLimited {
				t.Fatalf("an attempt past the proposal's %d wrong ones: %v", extensionhost.MaxWrongGuesses, err)
			}
		}
		if codes, err := extensionhost.PendingCodesIn(b, time.Now()); err != nil || len(codes) != 1 || codes[0].Code != code {
			t.Fatalf("after the guessing the outstanding codes are %+v, %v; want the code, standing", codes, err)
		}
	})
}
