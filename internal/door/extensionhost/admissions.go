package extensionhost

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/door/extensionhost/wasmtool"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
	"github.com/voicebox-go/voicebox/shared/refusal"
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

// Admissions keeps proposals (proposals/<id>.json), admitted descriptors (<id>.json beside the ledger),
// the modules they name, the ledger and the approval codes in a Store: the host state directory
// (NewAdmissions), or a fleet's shared store (NewAdmissionsIn). The audit log stays in the
// directory. It is safe for concurrent use.
type Admissions struct {
	dir   string
	store Store
	clock func() time.Time
	mu    sync.Mutex
	audit *auditLog

	// parsedFrom is the ledger last parsed, latest what it holds (latestLocked).
	parsedFrom []byte
	latest     map[string]LedgerEntry
}

// spentCode is a code that no longer admits, and the rule a later attempt with it gets.
type spentCode struct {
	Code string       `json:"code"`
	Rule refusal.Rule `json:"rule"`
	At   time.Time    `json:"at"`
}

// pending is a proposal's outstanding code: By is the requester whose request minted it (its
// open codes are counted against that requester), Wrong the wrong attempts at it per requester.
type pending struct {
	Code    string         `json:"code"`
	ID      string         `json:"id"`
	Hash    string         `json:"hash"`
	Expires time.Time      `json:"expires"`
	By      string         `json:"by,omitempty"`
	Wrong   map[string]int `json:"wrong,omitempty"`
}

// NewAdmissions returns the admissions kept in dir (a DirStore); clock nil means time.Now.
func NewAdmissions(dir string, clock func() time.Time) *Admissions {
	return NewAdmissionsIn(dir, NewDirStore(dir), clock)
}

// NewAdmissionsIn returns the admissions kept in st, with the audit log in dir; clock nil means
// time.Now.
func NewAdmissionsIn(dir string, st Store, clock func() time.Time) *Admissions {
	if clock == nil {
		clock = time.Now
	}
	return &Admissions{dir: dir, store: st, clock: clock, audit: &auditLog{path: filepath.Join(dir, AuditFile), clock: clock}}
}

// Dir returns the directory of the audit log (and, with a DirStore, of everything else).
func (s *Admissions) Dir() string { return s.dir }

// ReadModule reads the module name an admitted descriptor's wasm tool names from the store, at
// most limit bytes; the caller checks its digest.
func (s *Admissions) ReadModule(name string, limit int) ([]byte, error) {
	return readModule(s.store, name, limit)
}

// Stage validates raw and writes it to proposals/<id>.json. It never loads or runs it. A
// descriptor the gate refuses on its own (any rule but duplicate-tool, which depends on what is
// loaded when it is admitted) is refused with that rule and not staged, so nothing waits for a
// decision that could only be no; an earlier proposal of the same id stays as it was.
// Every staging, and every refusal to stage, is audited.
func (s *Admissions) Stage(raw []byte) (*extensions.Descriptor, error) {
	d, err := s.stage(raw)
	rec := AuditRecord{Act: ActStage}
	if d != nil {
		rec.ID = d.ID
		rec.Hash = extensions.Disclose(d, extensions.Machine, raw).Hash
	}
	if err != nil {
		rec.Rule, rec.Why = ruleWhy(err)
	}
	s.Audit(rec)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// refuseStage audits a refusal to stage id and returns it.
func (s *Admissions) refuseStage(id string, err error) error {
	rule, why := ruleWhy(err)
	s.Audit(AuditRecord{Act: ActStage, ID: id, Rule: rule, Why: why})
	return err
}

func (s *Admissions) stage(raw []byte) (*extensions.Descriptor, error) {
	d, r := extensions.Parse(raw)
	if r != nil {
		return nil, r
	}
	if r := extensions.Admit(d, extensions.Machine, nil); r != nil {
		return d, r
	}
	return d, s.store.WriteFile(proposalName(d.ID), raw)
}

// proposalName is the store's name of proposal id, and descriptorName of admitted descriptor id.
func proposalName(id string) string   { return "proposals/" + id + ".json" }
func descriptorName(id string) string { return id + ".json" }

// StageCatalogue stages raw, a descriptor shipped in fsys (the catalogue), and copies the WASM
// modules its tools name from fsys into the store's directory at the same relative paths, where
// the descriptor finds them once admitted. Copying runs nothing.
func (s *Admissions) StageCatalogue(raw []byte, fsys fs.FS) error {
	d, r := extensions.Parse(raw)
	if r != nil {
		return s.refuseStage("", r)
	}
	if r := extensions.Admit(d, extensions.Machine, nil); r != nil {
		return s.refuseStage(d.ID, r) // before any module is copied
	}
	for _, t := range d.Tools {
		if t.Primitive != extensions.Wasm || t.Wasm == nil {
			continue
		}
		if err := fsroot.Check(t.Wasm.Module); err != nil {
			return s.refuseStage(d.ID, err)
		}
		b, err := fs.ReadFile(fsys, t.Wasm.Module)
		if err != nil {
			return s.refuseStage(d.ID, refusal.New(refusal.NotFound, "the catalogue does not ship the module %s", t.Wasm.Module))
		}
		if err := s.store.WriteFile(t.Wasm.Module, b); err != nil {
			return s.refuseStage(d.ID, err)
		}
	}
	_, err := s.Stage(raw)
	return err
}

// checkModules refuses to admit d when a wasm tool's module is not in the store's directory
// with the pinned digest, or its bytes are not a module the bounds can hold
// (wasmabi.CheckBytes); both are checked again at every call.
func (s *Admissions) checkModules(d *extensions.Descriptor) error {
	for _, t := range d.Tools {
		if t.Primitive != extensions.Wasm || t.Wasm == nil {
			continue
		}
		b, err := s.ReadModule(t.Wasm.Module, wasmtool.DefaultMaxModuleBytes)
		if err != nil {
			return err
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != t.Wasm.SHA256 {
			return refusal.New(refusal.DigestMismatch, "%s; put the file tool %s pins in the extensions directory first", wasmabi.MismatchWhy("the module "+t.Wasm.Module, hex.EncodeToString(sum[:]), t.Wasm.SHA256), t.Name)
		}
		if _, err := wasmabi.CheckBytes(b, wasmabi.MaxMemoryPages, false); err != nil {
			return err
		}
	}
	return nil
}

// Candidate returns what a decision on id is about, and whether it is a file present in the
// directory rather than a proposal: the proposal id, or else the descriptor file <id>.json lying
// beside the ledger (dropped there by hand, or admitted before), which is admitted where it lies.
func (s *Admissions) Candidate(id string) (d *extensions.Descriptor, raw []byte, present bool, err error) {
	d, raw, err = s.Proposal(id)
	if refusal.RuleOf(err) != refusal.NotFound {
		return d, raw, false, err
	}
	if !extensions.ValidID(id) {
		return nil, nil, false, refusal.New(refusal.NotFound, "no proposal or descriptor file is named %q", id)
	}
	raw, rerr := s.store.ReadFile(descriptorName(id), extensions.MaxDescriptorBytes)
	if rerr == nil {
		d, r := extensions.Parse(raw)
		if r != nil {
			return nil, nil, true, r
		}
		if d.ID != id {
			return nil, nil, true, refusal.New(refusal.BadDescriptor, "the file %s.json holds the descriptor %q; a descriptor lies in the file of its own id", id, d.ID)
		}
		return d, raw, true, nil
	}
	if refusal.RuleOf(rerr) == refusal.FleetUnavailable {
		return nil, nil, false, rerr
	}
	return nil, nil, false, refusal.New(refusal.NotFound, "no proposal or descriptor file is named %q", id)
}

// Proposal returns the staged descriptor id and its raw bytes.
func (s *Admissions) Proposal(id string) (*extensions.Descriptor, []byte, error) {
	if !extensions.ValidID(id) {
		return nil, nil, refusal.New(refusal.NotFound, "no proposal is named %q", id)
	}
	raw, err := s.store.ReadFile(proposalName(id), extensions.MaxDescriptorBytes)
	if refusal.RuleOf(err) == refusal.FleetUnavailable {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, refusal.New(refusal.NotFound, "no proposal is named %q", id)
	}
	d, r := extensions.Parse(raw)
	if r != nil {
		return nil, nil, r
	}
	return d, raw, nil
}

func (s *Admissions) appendLedger(e LedgerEntry) error {
	b, _ := json.Marshal(e)
	return s.store.AppendLedger(b)
}

// Decide records a host's decision on id (see Candidate): admit moves a proposal beside the
// ledger, or takes a present file where it lies, and writes an admission line bound to its hash;
// deny writes a deny line and leaves it as it was. Each decision, and each refusal to admit, is
// audited.
func (s *Admissions) Decide(id string, admit bool, by string, existingTools []string) (extensions.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decideLocked(id, admit, by, existingTools)
}

func (s *Admissions) decideLocked(id string, admit bool, by string, existingTools []string) (extensions.Plan, error) {
	act := ActAdmit
	if !admit {
		act = ActDeny
	}
	plan, err := s.decide(id, admit, by, existingTools)
	rec := AuditRecord{Act: act, ID: id, By: by, Hash: plan.Hash}
	if err != nil {
		rec.Rule, rec.Why = ruleWhy(err)
	} else if !admit {
		rec.Decision, rec.Why = Refuse, "denied by the host: the person read the plan and refused it"
	}
	s.Audit(rec)
	return plan, err
}

func (s *Admissions) decide(id string, admit bool, by string, existingTools []string) (extensions.Plan, error) {
	d, raw, present, err := s.Candidate(id)
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
	if !present {
		if err := s.store.WriteFile(descriptorName(id), raw); err != nil {
			return plan, err
		}
	}
	if err := s.appendLedger(LedgerEntry{Action: "admit", ID: id, Hash: plan.Hash, By: by, At: s.clock()}); err != nil {
		return plan, err
	}
	if !present {
		s.store.Remove(proposalName(id))
	}
	return plan, nil
}

// Revoke records a revocation of id; it is not loaded again. An id whose latest ledger line is
// not an admission (never admitted, revoked already, not an id at all) is refused not-found and
// nothing is recorded: the ledger and the audit hold only what happened to an extension.
func (s *Admissions) Revoke(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	admitted, err := s.admittedLocked(id)
	if err != nil {
		return err
	}
	if !admitted {
		return refusal.New(refusal.NotFound, "no admitted extension is named %q; the listing (GET /api/extensions) names those that are", clipID(id))
	}
	err = s.appendLedger(LedgerEntry{Action: "revoke", ID: id, At: s.clock()})
	rec := AuditRecord{Act: ActRevoke, ID: id}
	if err != nil {
		rec.Rule, rec.Why = ruleWhy(err)
	}
	s.Audit(rec)
	return err
}

// admittedLocked reports whether id's latest ledger line (denials aside, as Load reads it) is an
// admission. The caller holds s.mu.
func (s *Admissions) admittedLocked(id string) (bool, error) {
	if !extensions.ValidID(id) {
		return false, nil
	}
	latest, err := s.latestLocked()
	if err != nil {
		return false, err
	}
	return latest[id].Action == "admit", nil
}

// latestLocked returns each id's latest ledger line other than a denial, as the store's ledger
// holds them now. A store that hands back the very bytes it handed last time (the fleet's, while
// its stream is unchanged) has them not parsed again. The caller holds s.mu and does not change
// the map.
func (s *Admissions) latestLocked() (map[string]LedgerEntry, error) {
	b, err := s.store.ReadLedger()
	if err != nil {
		return nil, err
	}
	if s.latest != nil && len(b) == len(s.parsedFrom) && (len(b) == 0 || &b[0] == &s.parsedFrom[0]) {
		return s.latest, nil
	}
	latest := map[string]LedgerEntry{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var e LedgerEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Action != "deny" {
			latest[e.ID] = e
		}
	}
	s.parsedFrom, s.latest = b, latest
	return latest, nil
}

// clipID cuts an id a caller sent to what a refusal echoes.
func clipID(id string) string {
	if len(id) > 64 {
		return id[:64] + "..."
	}
	return id
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
// or their refusal) and never block the rest, and so is an admission whose descriptor file is
// gone (descriptor-missing).
func (s *Admissions) Load() ([]Loaded, []Problem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	latest, err := s.latestLocked()
	if err != nil {
		return nil, nil, err
	}
	files, err := s.store.List("")
	if err != nil {
		return nil, nil, err
	}
	var loaded []Loaded
	var problems []Problem
	var tools []string
	present := map[string]bool{}
	for _, f := range files {
		id, ok := strings.CutSuffix(f, ".json")
		if !ok {
			continue
		}
		present[id] = true
		raw, err := s.store.ReadFile(f, extensions.MaxDescriptorBytes)
		if refusal.RuleOf(err) == refusal.FleetUnavailable {
			return nil, nil, err
		}
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
	for _, id := range slices.Sorted(maps.Keys(latest)) {
		if latest[id].Action == "admit" && !present[id] {
			problems = append(problems, Problem{id, refusal.DescriptorMissing, "the ledger admits it, but its descriptor file is gone from the state directory; put the file back as it was admitted, or revoke it"})
		}
	}
	return loaded, problems, nil
}

// AdmittedFile reads the descriptor file of admitted id as it is now in the store (an error
// wraps fs.ErrNotExist when it is gone).
func (s *Admissions) AdmittedFile(id string) ([]byte, error) {
	return s.store.ReadFile(id+".json", extensions.MaxDescriptorBytes)
}

// ProposalIDs lists the staged proposals.
func (s *Admissions) ProposalIDs() []string {
	files, _ := s.store.List("proposals")
	ids := make([]string, 0, len(files))
	for _, f := range files {
		if id, ok := strings.CutSuffix(f, ".json"); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// Dismiss removes the waiting proposal id: nothing is admitted, denied or recorded in the
// ledger, the descriptor is gone from proposals/ (the audit says so). A proposal that is not
// there is refused not-found.
func (s *Admissions) Dismiss(id string) error {
	if !extensions.ValidID(id) {
		return refusal.New(refusal.NotFound, "no proposal is named %q", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.store.Remove(proposalName(id)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return refusal.New(refusal.NotFound, "no proposal %q is waiting", id)
		}
		return err
	}
	s.Audit(AuditRecord{Act: ActDismiss, ID: id})
	return nil
}
