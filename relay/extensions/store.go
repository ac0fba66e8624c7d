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

// The bounds of console approval codes. Each proposal has at most one outstanding code, and
// asking again while it is outstanding prints the same code again: nobody's asking voids a code a
// person holds. The limits count per requester (a session, or else a client address; see
// server.Requester) and per extension, so one asker cannot use up everyone's requests, and
// guessing stays slow: at most MaxCodesPerExtension codes of MaxCodeAttempts guesses each per
// window for one proposal, and at most MaxOutstandingCodes codes open at once in all.
const (
	// CodeLifetime is how long a code admits.
	CodeLifetime = 2 * time.Minute
	// MaxCodeAttempts wrong codes void a code.
	MaxCodeAttempts = 5
	// CodeDigits is the length of a code.
	CodeDigits = 8
	// MaxCodeRequests is how many codes one requester may ask for within CodeRequestWindow
	// (asking again for an outstanding one counts too); one more is refused
	// approval-rate-limited.
	MaxCodeRequests = 5
	// MaxCodesPerExtension is how many new codes one proposal may be given within
	// CodeRequestWindow, whoever asks; one more is refused approval-rate-limited.
	MaxCodesPerExtension = 5
	// MaxOutstandingCodes bounds the codes open at once, for all proposals together.
	MaxOutstandingCodes = 8
	// CodeRequestWindow is the window the request limits count in.
	CodeRequestWindow = 10 * time.Minute
	// maxRequesters bounds the requesters whose requests are remembered within the window.
	maxRequesters = 1024
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
	dir   string
	clock func() time.Time
	mu    sync.Mutex
	codes map[string]*pending    // the outstanding code of each proposal id
	spent map[string]*spentCode  // how a proposal's last code ended, so a late attempt is told why
	asked map[string][]time.Time // when each requester asked, within CodeRequestWindow
	mints map[string][]time.Time // when each proposal was given a new code, within the window
}

// spentCode is a code that no longer admits, and the rule a later attempt with it gets.
type spentCode struct {
	code string
	rule refusal.Rule
	at   time.Time
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
	return &Store{dir: dir, clock: clock, codes: map[string]*pending{}, spent: map[string]*spentCode{},
		asked: map[string][]time.Time{}, mints: map[string][]time.Time{}}
}

// Dir returns the directory the store keeps its files in. Admitted descriptors live there, so
// the modules their wasm tools name are found there too.
func (s *Store) Dir() string { return s.dir }

// Stage validates raw and writes it to proposals/<id>.json. It never loads or runs it. A
// descriptor the gate refuses on its own (any rule but duplicate-tool, which depends on what is
// loaded when it is admitted) is refused with that rule and not staged, so nothing waits for a
// decision that could only be no; an earlier proposal of the same id stays as it was.
func (s *Store) Stage(raw []byte) (*extensions.Descriptor, error) {
	d, r := extensions.Parse(raw)
	if r != nil {
		return nil, r
	}
	if r := extensions.Admit(d, extensions.Machine, nil); r != nil {
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
	if r := extensions.Admit(d, extensions.Machine, nil); r != nil {
		return r // before any module is copied
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

// RequestCode returns the single-use console code for proposal id, bound to its current plan
// hash, for requester (see server.Requester), and writes the outstanding codes to
// .pending-approval.json (0600). The caller prints it on the console; it must never go into an
// HTTP response. While a code for id is outstanding, unexpired and of the same plan, asking again
// returns that same code: no request voids a code someone holds. A requester past MaxCodeRequests
// within CodeRequestWindow, a proposal past MaxCodesPerExtension new codes, or a new code past
// MaxOutstandingCodes open ones, is refused approval-rate-limited.
func (s *Store) RequestCode(id, requester string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, raw, err := s.Proposal(id)
	if err != nil {
		return "", err
	}
	now := s.clock()
	s.pruneLocked(now)
	if asked := s.asked[requester]; len(asked) >= MaxCodeRequests {
		return "", refusal.New(refusal.ApprovalRateLimited, "you asked for %d approval codes in the last %s; you can ask again in %s", len(asked), CodeRequestWindow, asked[0].Add(CodeRequestWindow).Sub(now).Round(time.Second))
	}
	if _, known := s.asked[requester]; !known && len(s.asked) >= maxRequesters {
		return "", refusal.New(refusal.ApprovalRateLimited, "too many others asked for approval codes in the last %s; ask again later", CodeRequestWindow)
	}
	hash := extensions.Disclose(d, extensions.Machine, raw).Hash
	if p := s.codes[id]; p != nil && p.Hash == hash {
		s.asked[requester] = append(s.asked[requester], now)
		return p.Code, nil
	}
	if mints := s.mints[id]; len(mints) >= MaxCodesPerExtension {
		return "", refusal.New(refusal.ApprovalRateLimited, "%s was given %d approval codes in the last %s; the next can be asked for in %s", id, len(mints), CodeRequestWindow, mints[0].Add(CodeRequestWindow).Sub(now).Round(time.Second))
	}
	if _, replacing := s.codes[id]; !replacing && len(s.codes) >= MaxOutstandingCodes {
		return "", refusal.New(refusal.ApprovalRateLimited, "%d approval codes are outstanding already; use one, or wait until they expire (%s)", len(s.codes), CodeLifetime)
	}
	n, err := rand.Int(rand.Reader, big.NewInt(100_000_000))
	if err != nil {
		return "", err
	}
	p := &pending{Code: fmt.Sprintf("%08d", n.Int64()), ID: id, Hash: hash, Expires: now.Add(CodeLifetime)}
	prev := s.codes[id] // an earlier plan's code, which could never admit the new one
	s.codes[id] = p
	if err := s.writePendingLocked(); err != nil {
		if prev != nil {
			s.codes[id] = prev
		} else {
			delete(s.codes, id)
		}
		return "", err
	}
	delete(s.spent, id)
	s.asked[requester] = append(s.asked[requester], now)
	s.mints[id] = append(s.mints[id], now)
	return p.Code, nil
}

// pruneLocked forgets what fell out of the window: requests, mints, expired codes (remembered as
// expired) and the endings of codes.
func (s *Store) pruneLocked(now time.Time) {
	for _, m := range []map[string][]time.Time{s.asked, s.mints} {
		for k, ts := range m {
			i := 0
			for i < len(ts) && now.Sub(ts[i]) >= CodeRequestWindow {
				i++
			}
			if i == len(ts) {
				delete(m, k)
			} else {
				m[k] = ts[i:]
			}
		}
	}
	changed := false
	for id, p := range s.codes {
		if now.After(p.Expires) {
			s.spent[id] = &spentCode{code: p.Code, rule: refusal.ApprovalCodeExpired, at: now}
			delete(s.codes, id)
			changed = true
		}
	}
	for id, sp := range s.spent {
		if now.Sub(sp.at) >= CodeRequestWindow {
			delete(s.spent, id)
		}
	}
	if changed {
		s.writePendingLocked()
	}
}

// writePendingLocked writes the outstanding codes to PendingFile (0600), or removes it when none
// is outstanding.
func (s *Store) writePendingLocked() error {
	path := filepath.Join(s.dir, PendingFile)
	if len(s.codes) == 0 {
		err := os.Remove(path)
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		return err
	}
	list := make([]*pending, 0, len(s.codes))
	for _, p := range s.codes {
		list = append(list, p)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	b, _ := json.Marshal(list)
	return os.WriteFile(path, b, 0o600)
}

// Approve admits proposal id when code is the outstanding code for it, unexpired, within its
// attempts, and the proposal is unchanged since the code was issued. Each way a code can fail has
// its own rule: approval-code-missing (none was asked for this proposal), approval-code-wrong,
// approval-code-exhausted (after MaxCodeAttempts wrong ones), approval-code-expired,
// approval-code-used and approval-plan-changed. Attempts count against id's code only.
func (s *Store) Approve(id, code string, existingTools []string) (extensions.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(s.clock())
	p := s.codes[id]
	if p == nil {
		return extensions.Plan{}, s.spentLocked(id, code)
	}
	p.Attempts++
	if subtle.ConstantTimeCompare([]byte(code), []byte(p.Code)) != 1 {
		if p.Attempts >= MaxCodeAttempts {
			s.endLocked(id, refusal.ApprovalCodeExhausted)
			return extensions.Plan{}, refusal.New(refusal.ApprovalCodeWrong, "wrong approval code; that was attempt %d of %d, so the code is void now: ask for a new one", p.Attempts, MaxCodeAttempts)
		}
		return extensions.Plan{}, refusal.New(refusal.ApprovalCodeWrong, "wrong approval code (%d of %d attempts used)", p.Attempts, MaxCodeAttempts)
	}
	d, raw, err := s.Proposal(id)
	if err != nil {
		return extensions.Plan{}, err
	}
	if extensions.Disclose(d, extensions.Machine, raw).Hash != p.Hash {
		delete(s.codes, id)
		s.writePendingLocked()
		return extensions.Plan{}, refusal.New(refusal.ApprovalPlanChanged, "the proposal changed after the code was issued; review the new plan and ask for a new code")
	}
	s.endLocked(id, refusal.ApprovalCodeUsed)
	return s.decideLocked(id, true, "console-code", existingTools)
}

// endLocked retires id's outstanding code, remembering why for later attempts.
func (s *Store) endLocked(id string, why refusal.Rule) {
	s.spent[id] = &spentCode{code: s.codes[id].Code, rule: why, at: s.clock()}
	delete(s.codes, id)
	s.writePendingLocked()
}

// spentLocked is the refusal for an attempt when no code is outstanding for id.
func (s *Store) spentLocked(id, code string) error {
	if sp := s.spent[id]; sp != nil {
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

// PendingCode is one outstanding approval code, as `relay approval-code` shows it.
type PendingCode struct {
	ID      string
	Code    string
	Expires time.Time
}

// PendingCodes reads .pending-approval.json in dir: the outstanding codes, expired ones left
// out, in order of proposal id.
func PendingCodes(dir string, now time.Time) ([]PendingCode, error) {
	b, err := os.ReadFile(filepath.Join(dir, PendingFile))
	if err != nil {
		return nil, err
	}
	var list []pending
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, err
	}
	var out []PendingCode
	for _, p := range list {
		if !now.After(p.Expires) {
			out = append(out, PendingCode{p.ID, p.Code, p.Expires})
		}
	}
	return out, nil
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
