package extensions

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/relay/extensions/wasmtool"
	"github.com/voicebox-go/voicebox/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The bounds of console approval codes.
const (
	CodeLifetime    = 2 * time.Minute
	MaxCodeAttempts = 5
	CodeDigits      = 8
	// MaxCodeRequests codes may be asked for within CodeRequestWindow; one more is refused
	// approval-rate-limited. With MaxCodeAttempts guesses per code, that bounds how fast anyone
	// able to reach the relay can guess at the 10^8 codes.
	MaxCodeRequests   = 5
	CodeRequestWindow = 10 * time.Minute
)

// LedgerFile and PendingFile are the store's files in the host state directory.
const (
	LedgerFile  = ".ledger.jsonl"
	PendingFile = ".pending-approval.json"
)

// LedgerEntry is one line of the ledger.
type LedgerEntry struct {
	Action string    `json:"action"` // admit, deny or revoke
	ID     string    `json:"id"`
	Hash   string    `json:"hash,omitempty"`
	By     string    `json:"by,omitempty"` // host-token or console-code
	At     time.Time `json:"at"`
}

// Store keeps proposals (proposals/<id>.json), admitted descriptors (<id>.json beside the ledger)
// and the ledger in one directory. It is safe for concurrent use.
type Store struct {
	dir      string
	clock    func() time.Time
	mu       sync.Mutex
	code     *pending
	spent    *spentCode  // how the last code ended, so a late attempt is told why
	requests []time.Time // when codes were asked for, within CodeRequestWindow
}

// spentCode is a code that no longer admits, and the rule a later attempt with it gets.
type spentCode struct {
	id, code string
	rule     refusal.Rule
}

type pending struct {
	Code     string    `json:"code"`
	ID       string    `json:"id"`
	Hash     string    `json:"hash"`
	Expires  time.Time `json:"expires"`
	Attempts int       `json:"attempts"`
}

// NewStore returns a store over dir; clock nil means time.Now.
func NewStore(dir string, clock func() time.Time) *Store {
	if clock == nil {
		clock = time.Now
	}
	return &Store{dir: dir, clock: clock}
}

// Dir returns the directory the store keeps its files in. Admitted descriptors live there, so
// the modules their wasm tools name are found there too.
func (s *Store) Dir() string { return s.dir }

// Stage validates raw and writes it to proposals/<id>.json. It never loads or runs it.
func (s *Store) Stage(raw []byte) (*extensions.Descriptor, error) {
	d, r := extensions.Parse(raw)
	if r != nil {
		return nil, r
	}
	if err := os.MkdirAll(filepath.Join(s.dir, "proposals"), 0o700); err != nil {
		return nil, err
	}
	return d, os.WriteFile(filepath.Join(s.dir, "proposals", d.ID+".json"), raw, 0o600)
}

// StageCatalogue stages raw, a descriptor shipped in fsys (the catalogue), and copies the WASM
// modules its tools name from fsys into the store's directory at the same relative paths, where
// the descriptor finds them once admitted. Copying runs nothing.
func (s *Store) StageCatalogue(raw []byte, fsys fs.FS) error {
	d, r := extensions.Parse(raw)
	if r != nil {
		return r
	}
	for _, t := range d.Tools {
		if t.Primitive != extensions.Wasm || t.Wasm == nil {
			continue
		}
		if err := fsroot.Check(t.Wasm.Module); err != nil {
			return err
		}
		b, err := fs.ReadFile(fsys, t.Wasm.Module)
		if err != nil {
			return refusal.New(refusal.NotFound, "the catalogue does not ship the module %s", t.Wasm.Module)
		}
		if err := s.putModule(t.Wasm.Module, b); err != nil {
			return err
		}
	}
	_, err := s.Stage(raw)
	return err
}

// putModule writes b to name inside the store's directory (through os.Root, by a temporary file
// and a rename, so a reader never sees half a module).
func (s *Store) putModule(name string, b []byte) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	tmp := path.Join(path.Dir(name), "."+path.Base(name)+".tmp")
	if err := root.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return root.Rename(tmp, name)
}

// checkModules refuses to admit d when a wasm tool's module is not in the store's directory
// with the pinned digest (the digest is checked again at every call).
func (s *Store) checkModules(d *extensions.Descriptor) error {
	for _, t := range d.Tools {
		if t.Primitive != extensions.Wasm || t.Wasm == nil {
			continue
		}
		b, err := wasmtool.ReadModule(s.dir, t.Wasm.Module, wasmtool.DefaultMaxModuleBytes)
		if err != nil {
			return err
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != t.Wasm.SHA256 {
			return refusal.New(refusal.DigestMismatch, "the module %s in the extensions directory does not have the sha256 tool %s pins; put the right file there first", t.Wasm.Module, t.Name)
		}
	}
	return nil
}

// Proposal returns the staged descriptor id and its raw bytes.
func (s *Store) Proposal(id string) (*extensions.Descriptor, []byte, error) {
	if !extensions.ValidID(id) {
		return nil, nil, refusal.New(refusal.NotFound, "no proposal is named %q", id)
	}
	raw, err := os.ReadFile(filepath.Join(s.dir, "proposals", id+".json"))
	if err != nil {
		return nil, nil, refusal.New(refusal.NotFound, "no proposal is named %q", id)
	}
	d, r := extensions.Parse(raw)
	if r != nil {
		return nil, nil, r
	}
	return d, raw, nil
}

func (s *Store) appendLedger(e LedgerEntry) error {
	f, err := os.OpenFile(filepath.Join(s.dir, LedgerFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	b, _ := json.Marshal(e)
	_, err = f.Write(append(b, '\n'))
	return err
}

// Decide records a host's decision on proposal id: admit moves it beside the ledger and writes an
// admission line bound to its hash; deny writes a deny line and leaves it staged.
func (s *Store) Decide(id string, admit bool, by string, existingTools []string) (extensions.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decideLocked(id, admit, by, existingTools)
}

func (s *Store) decideLocked(id string, admit bool, by string, existingTools []string) (extensions.Plan, error) {
	d, raw, err := s.Proposal(id)
	if err != nil {
		return extensions.Plan{}, err
	}
	plan := extensions.Disclose(d, extensions.Machine, raw)
	if !admit {
		return plan, s.appendLedger(LedgerEntry{Action: "deny", ID: id, Hash: plan.Hash, By: by, At: s.clock()})
	}
	if r := extensions.Admit(d, extensions.Machine, existingTools); r != nil {
		return plan, r
	}
	if err := s.checkModules(d); err != nil {
		return plan, err
	}
	if err := os.WriteFile(filepath.Join(s.dir, id+".json"), raw, 0o600); err != nil {
		return plan, err
	}
	if err := s.appendLedger(LedgerEntry{Action: "admit", ID: id, Hash: plan.Hash, By: by, At: s.clock()}); err != nil {
		return plan, err
	}
	os.Remove(filepath.Join(s.dir, "proposals", id+".json"))
	return plan, nil
}

// Revoke records a revocation of id; it is not loaded again.
func (s *Store) Revoke(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appendLedger(LedgerEntry{Action: "revoke", ID: id, At: s.clock()})
}

// RequestCode mints a single-use console code for proposal id, bound to its current plan hash,
// and writes it to .pending-approval.json (0600). The caller prints it on the console; it must
// never go into an HTTP response. One code is outstanding at a time: a new request replaces it.
// At most MaxCodeRequests requests succeed within CodeRequestWindow (approval-rate-limited).
func (s *Store) RequestCode(id string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, raw, err := s.Proposal(id)
	if err != nil {
		return "", err
	}
	now := s.clock()
	recent := s.requests[:0]
	for _, t := range s.requests {
		if now.Sub(t) < CodeRequestWindow {
			recent = append(recent, t)
		}
	}
	s.requests = recent
	if len(recent) >= MaxCodeRequests {
		wait := recent[0].Add(CodeRequestWindow).Sub(now).Round(time.Second)
		return "", refusal.New(refusal.ApprovalRateLimited, "%d approval codes were asked for in the last %s; the next can be asked for in %s", len(recent), CodeRequestWindow, wait)
	}
	n, err := rand.Int(rand.Reader, big.NewInt(100_000_000))
	if err != nil {
		return "", err
	}
	p := &pending{Code: fmt.Sprintf("%08d", n.Int64()), ID: id, Hash: extensions.Disclose(d, extensions.Machine, raw).Hash, Expires: now.Add(CodeLifetime)}
	b, _ := json.Marshal(p)
	if err := os.WriteFile(filepath.Join(s.dir, PendingFile), b, 0o600); err != nil {
		return "", err
	}
	s.code, s.spent = p, nil
	s.requests = append(s.requests, now)
	return p.Code, nil
}

// Approve admits proposal id when code is the outstanding code for it, unexpired, within its
// attempts, and the proposal is unchanged since the code was issued. Each way a code can fail has
// its own rule: approval-code-missing (none was asked for this proposal), approval-code-wrong,
// approval-code-exhausted (after MaxCodeAttempts wrong ones), approval-code-expired,
// approval-code-used and approval-plan-changed.
func (s *Store) Approve(id, code string, existingTools []string) (extensions.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.code
	if p == nil || p.ID != id {
		return extensions.Plan{}, s.spentLocked(id, code)
	}
	if s.clock().After(p.Expires) {
		s.endLocked(refusal.ApprovalCodeExpired)
		return extensions.Plan{}, s.spentLocked(id, code)
	}
	p.Attempts++
	if subtle.ConstantTimeCompare([]byte(code), []byte(p.Code)) != 1 {
		if p.Attempts >= MaxCodeAttempts {
			s.endLocked(refusal.ApprovalCodeExhausted)
			return extensions.Plan{}, refusal.New(refusal.ApprovalCodeWrong, "wrong approval code; that was attempt %d of %d, so the code is void now: ask for a new one", p.Attempts, MaxCodeAttempts)
		}
		return extensions.Plan{}, refusal.New(refusal.ApprovalCodeWrong, "wrong approval code (%d of %d attempts used)", p.Attempts, MaxCodeAttempts)
	}
	d, raw, err := s.Proposal(id)
	if err != nil {
		return extensions.Plan{}, err
	}
	if extensions.Disclose(d, extensions.Machine, raw).Hash != p.Hash {
		s.clearLocked()
		return extensions.Plan{}, refusal.New(refusal.ApprovalPlanChanged, "the proposal changed after the code was issued; review the new plan and ask for a new code")
	}
	s.endLocked(refusal.ApprovalCodeUsed)
	return s.decideLocked(id, true, "console-code", existingTools)
}

// endLocked retires the outstanding code, remembering why for later attempts.
func (s *Store) endLocked(why refusal.Rule) {
	s.spent = &spentCode{id: s.code.ID, code: s.code.Code, rule: why}
	s.clearLocked()
}

// spentLocked is the refusal for an attempt when no code is outstanding for id.
func (s *Store) spentLocked(id, code string) error {
	sp := s.spent
	if sp != nil && sp.id == id {
		switch sp.rule {
		case refusal.ApprovalCodeExpired:
			return refusal.New(sp.rule, "the approval code for %s expired (codes last %s); ask for a new one", id, CodeLifetime)
		case refusal.ApprovalCodeExhausted:
			return refusal.New(sp.rule, "the approval code for %s took %d wrong attempts and is void; ask for a new one", id, MaxCodeAttempts)
		case refusal.ApprovalCodeUsed:
			if subtle.ConstantTimeCompare([]byte(code), []byte(sp.code)) == 1 {
				return refusal.New(sp.rule, "that code already admitted %s; a code works once", id)
			}
		}
	}
	return refusal.New(refusal.ApprovalCodeMissing, "no approval code is outstanding for %q; ask for one first (Request approval code)", id)
}

func (s *Store) clearLocked() {
	s.code = nil
	os.Remove(filepath.Join(s.dir, PendingFile))
}

// Loaded is an admitted descriptor the registry runs.
type Loaded struct {
	Descriptor *extensions.Descriptor
	Raw        []byte
}

// Problem is a file the registry does not run, with its reason.
type Problem struct {
	ID   string       `json:"id"`
	Rule refusal.Rule `json:"refused"`
	Why  string       `json:"why"`
}

// Load reads the directory: only descriptors whose latest ledger line is an admission of their
// exact hash, and that pass Admit again, are loaded. Others are reported (present-not-admitted,
// or their refusal) and never block the rest.
func (s *Store) Load() ([]Loaded, []Problem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	latest := map[string]LedgerEntry{}
	if b, err := os.ReadFile(filepath.Join(s.dir, LedgerFile)); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var e LedgerEntry
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Action != "deny" {
				latest[e.ID] = e
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	files, _ := filepath.Glob(filepath.Join(s.dir, "*.json"))
	sort.Strings(files)
	var loaded []Loaded
	var problems []Problem
	var tools []string
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".json")
		if strings.HasPrefix(id, ".") {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			problems = append(problems, Problem{id, refusal.FileError, "the file could not be read"})
			continue
		}
		d, r := extensions.Parse(raw)
		if r != nil {
			problems = append(problems, Problem{id, r.Rule, r.Why})
			continue
		}
		e, ok := latest[d.ID]
		if !ok || e.Action != "admit" || d.ID != id || e.Hash != extensions.Disclose(d, extensions.Machine, raw).Hash {
			problems = append(problems, Problem{id, refusal.PresentNotAdmitted, "the file is here but the ledger holds no admission of it as it is now; it is not run"})
			continue
		}
		if r := extensions.Admit(d, extensions.Machine, tools); r != nil {
			problems = append(problems, Problem{id, r.Rule, r.Why})
			continue
		}
		for _, t := range d.Tools {
			tools = append(tools, t.Name)
		}
		loaded = append(loaded, Loaded{d, raw})
	}
	return loaded, problems, nil
}

// ProposalIDs lists the staged proposals.
func (s *Store) ProposalIDs() []string {
	files, _ := filepath.Glob(filepath.Join(s.dir, "proposals", "*.json"))
	ids := make([]string, 0, len(files))
	for _, f := range files {
		ids = append(ids, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	sort.Strings(ids)
	return ids
}

// PendingCode reads .pending-approval.json in dir: what `relay approval-code` shows.
func PendingCode(dir string) (id, code string, expires time.Time, err error) {
	b, err := os.ReadFile(filepath.Join(dir, PendingFile))
	if err != nil {
		return "", "", time.Time{}, err
	}
	var p pending
	if err := json.Unmarshal(b, &p); err != nil {
		return "", "", time.Time{}, err
	}
	return p.ID, p.Code, p.Expires, nil
}

// Dismiss removes the waiting proposal id: nothing is admitted, denied or recorded, the
// descriptor is gone from proposals/. A proposal that is not there is refused not-found.
func (s *Store) Dismiss(id string) error {
	if !extensions.ValidID(id) {
		return refusal.New(refusal.NotFound, "no proposal is named %q", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Remove(filepath.Join(s.dir, "proposals", id+".json")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return refusal.New(refusal.NotFound, "no proposal %q is waiting", id)
		}
		return err
	}
	return nil
}
