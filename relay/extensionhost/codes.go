package extensionhost

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/voicebox-go/voicebox/shared/extensions"
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

// maxCodeSwaps bounds how often one code operation reads the codes' document again after
// another relay (or another store on the same directory) changed it first; past it the operation
// is refused fleet-unavailable (the store is too busy to agree with).
const maxCodeSwaps = 16

// codeState is the approval codes' document (Store.Codes): the outstanding code of each proposal
// id, how each proposal's last code ended (so a late attempt is told why), and when each
// requester asked and each proposal was given a new code, within CodeRequestWindow. It is one
// document so that every relay on the store counts the same attempts and limits.
type codeState struct {
	Codes map[string]*pending    `json:"codes,omitempty"`
	Spent map[string]*spentCode  `json:"spent,omitempty"`
	Asked map[string][]time.Time `json:"asked,omitempty"`
	Mints map[string][]time.Time `json:"mints,omitempty"`
}

// decodeCodes reads the document; the list of outstanding codes earlier relays wrote is read as
// such, and a document that does not parse reads as empty (no code is outstanding).
func decodeCodes(b []byte) *codeState {
	st := &codeState{}
	if len(b) > 0 && b[0] == '[' {
		var list []*pending
		if json.Unmarshal(b, &list) == nil {
			st.Codes = map[string]*pending{}
			for _, p := range list {
				if p != nil {
					st.Codes[p.ID] = p
				}
			}
		}
	} else if len(b) > 0 {
		if json.Unmarshal(b, st) != nil {
			st = &codeState{}
		}
	}
	if st.Codes == nil {
		st.Codes = map[string]*pending{}
	}
	if st.Spent == nil {
		st.Spent = map[string]*spentCode{}
	}
	if st.Asked == nil {
		st.Asked = map[string][]time.Time{}
	}
	if st.Mints == nil {
		st.Mints = map[string][]time.Time{}
	}
	return st
}

// encode is the document to store; empty when nothing is left to remember.
func (st *codeState) encode() []byte {
	if len(st.Codes) == 0 && len(st.Spent) == 0 && len(st.Asked) == 0 && len(st.Mints) == 0 {
		return nil
	}
	b, _ := json.Marshal(st)
	return b
}

// withCodes runs fn on the codes' document and stores what it changed (dirty) by compare-and-set;
// when another writer changed the document first, fn runs again on the new one. It returns fn's
// error once its change is stored.
func (s *Admissions) withCodes(fn func(st *codeState) (dirty bool, err error)) error {
	for range maxCodeSwaps {
		b, rev, err := s.store.Codes()
		if err != nil {
			return err
		}
		st := decodeCodes(b)
		dirty, ferr := fn(st)
		if !dirty {
			return ferr
		}
		ok, err := s.store.SwapCodes(st.encode(), rev)
		if err != nil {
			return err
		}
		if ok {
			return ferr
		}
	}
	return refusal.New(refusal.FleetUnavailable, "the approval codes changed %d times while this request was made; try again in a moment", maxCodeSwaps)
}

// RequestCode returns the single-use console code for proposal id, bound to its current plan
// hash, for requester (see server.Requester), and writes the outstanding codes to the store's
// codes document (.pending-approval.json, 0600, in a state directory). The caller prints it on
// the console; it must never go into an HTTP response. While a code for id is outstanding,
// unexpired and of the same plan, asking again returns that same code: no request voids a code
// someone holds. A requester past MaxCodeRequests within CodeRequestWindow, a proposal past
// MaxCodesPerExtension new codes, or a new code past MaxOutstandingCodes open ones, is refused
// approval-rate-limited. The limits count across every relay on the store.
func (s *Admissions) RequestCode(id, requester string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, raw, _, err := s.Candidate(id)
	if err != nil {
		return "", err
	}
	hash := extensions.Disclose(d, extensions.Machine, raw).Hash
	var code string
	err = s.withCodes(func(st *codeState) (bool, error) {
		now := s.clock()
		dirty := st.prune(now)
		if asked := st.Asked[requester]; len(asked) >= MaxCodeRequests {
			return dirty, refusal.New(refusal.ApprovalRateLimited, "you asked for %d approval codes in the last %s; you can ask again in %s", len(asked), CodeRequestWindow, asked[0].Add(CodeRequestWindow).Sub(now).Round(time.Second))
		}
		if _, known := st.Asked[requester]; !known && len(st.Asked) >= maxRequesters {
			return dirty, refusal.New(refusal.ApprovalRateLimited, "too many others asked for approval codes in the last %s; ask again later", CodeRequestWindow)
		}
		if p := st.Codes[id]; p != nil && p.Hash == hash {
			st.Asked[requester] = append(st.Asked[requester], now)
			code = p.Code
			return true, nil
		}
		if mints := st.Mints[id]; len(mints) >= MaxCodesPerExtension {
			return dirty, refusal.New(refusal.ApprovalRateLimited, "%s was given %d approval codes in the last %s; the next can be asked for in %s", id, len(mints), CodeRequestWindow, mints[0].Add(CodeRequestWindow).Sub(now).Round(time.Second))
		}
		if _, replacing := st.Codes[id]; !replacing && len(st.Codes) >= MaxOutstandingCodes {
			return dirty, refusal.New(refusal.ApprovalRateLimited, "%d approval codes are outstanding already; use one, or wait until they expire (%s)", len(st.Codes), CodeLifetime)
		}
		n, err := rand.Int(rand.Reader, big.NewInt(100_000_000))
		if err != nil {
			return false, err
		}
		// An earlier plan's code, which could never admit the new one, is replaced.
		st.Codes[id] = &pending{Code: fmt.Sprintf("%08d", n.Int64()), ID: id, Hash: hash, Expires: now.Add(CodeLifetime)}
		delete(st.Spent, id)
		st.Asked[requester] = append(st.Asked[requester], now)
		st.Mints[id] = append(st.Mints[id], now)
		code = st.Codes[id].Code
		return true, nil
	})
	if err != nil {
		return "", err
	}
	return code, nil
}

// prune forgets what fell out of the window: requests, mints, expired codes (remembered as
// expired) and the endings of codes. It reports whether anything changed.
func (st *codeState) prune(now time.Time) bool {
	changed := false
	for _, m := range []map[string][]time.Time{st.Asked, st.Mints} {
		for k, ts := range m {
			i := 0
			for i < len(ts) && now.Sub(ts[i]) >= CodeRequestWindow {
				i++
			}
			if i == 0 {
				continue
			}
			changed = true
			if i == len(ts) {
				delete(m, k)
			} else {
				m[k] = ts[i:]
			}
		}
	}
	for id, p := range st.Codes {
		if now.After(p.Expires) {
			st.Spent[id] = &spentCode{Code: p.Code, Rule: refusal.ApprovalCodeExpired, At: now}
			delete(st.Codes, id)
			changed = true
		}
	}
	for id, sp := range st.Spent {
		if now.Sub(sp.At) >= CodeRequestWindow {
			delete(st.Spent, id)
			changed = true
		}
	}
	return changed
}

// Approve admits proposal id when code is the outstanding code for it, unexpired, within its
// attempts, and the proposal is unchanged since the code was issued. Each way a code can fail has
// its own rule: approval-code-missing (none was asked for this proposal), approval-code-wrong,
// approval-code-exhausted (after MaxCodeAttempts wrong ones), approval-code-expired,
// approval-code-used and approval-plan-changed. Attempts count against id's code only, on every
// relay on the store together, and a code is taken by one attempt only (compare-and-set on the
// codes' document) before its admission is decided. A code's refusal is audited; an admission it
// makes is audited as the decision.
func (s *Admissions) Approve(id, code string, existingTools []string) (extensions.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.takeCode(id, code)
	if err != nil {
		rule, why := ruleWhy(err)
		s.Audit(AuditRecord{Act: ActApprove, ID: id, By: "console-code", Rule: rule, Why: why})
		return extensions.Plan{}, err
	}
	return s.decideLocked(id, true, "console-code", existingTools)
}

// takeCode spends id's outstanding code when code is it and the plan is the one it was issued
// for, or counts the attempt and says why not.
func (s *Admissions) takeCode(id, code string) error {
	d, raw, _, cerr := s.Candidate(id)
	return s.withCodes(func(st *codeState) (bool, error) {
		now := s.clock()
		dirty := st.prune(now)
		p := st.Codes[id]
		if p == nil {
			return dirty, st.spentRefusal(id, code)
		}
		p.Attempts++
		if subtle.ConstantTimeCompare([]byte(code), []byte(p.Code)) != 1 {
			if p.Attempts >= MaxCodeAttempts {
				st.end(id, refusal.ApprovalCodeExhausted, now)
				return true, refusal.New(refusal.ApprovalCodeWrong, "wrong approval code; that was attempt %d of %d, so the code is void now: ask for a new one", p.Attempts, MaxCodeAttempts)
			}
			return true, refusal.New(refusal.ApprovalCodeWrong, "wrong approval code (%d of %d attempts used)", p.Attempts, MaxCodeAttempts)
		}
		if cerr != nil {
			return true, cerr
		}
		if extensions.Disclose(d, extensions.Machine, raw).Hash != p.Hash {
			delete(st.Codes, id)
			return true, refusal.New(refusal.ApprovalPlanChanged, "the proposal changed after the code was issued; review the new plan and ask for a new code")
		}
		st.end(id, refusal.ApprovalCodeUsed, now)
		return true, nil
	})
}

// end retires id's outstanding code, remembering why for later attempts.
func (st *codeState) end(id string, why refusal.Rule, now time.Time) {
	st.Spent[id] = &spentCode{Code: st.Codes[id].Code, Rule: why, At: now}
	delete(st.Codes, id)
}

// spentRefusal is the refusal for an attempt when no code is outstanding for id.
func (st *codeState) spentRefusal(id, code string) error {
	if sp := st.Spent[id]; sp != nil {
		switch sp.Rule {
		case refusal.ApprovalCodeExpired:
			return refusal.New(sp.Rule, "the approval code for %s expired (codes last %s); ask for a new one", id, CodeLifetime)
		case refusal.ApprovalCodeExhausted:
			return refusal.New(sp.Rule, "the approval code for %s took %d wrong attempts and is void; ask for a new one", id, MaxCodeAttempts)
		case refusal.ApprovalCodeUsed:
			if subtle.ConstantTimeCompare([]byte(code), []byte(sp.Code)) == 1 {
				return refusal.New(sp.Rule, "that code already admitted %s; a code works once", id)
			}
		}
	}
	return refusal.New(refusal.ApprovalCodeMissing, "no approval code is outstanding for %q; ask for one first (Request approval code)", id)
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
	return pendingCodes(decodeCodes(b), now), nil
}

// PendingCodesIn reads the outstanding codes of st (a fleet's store, for `relay approval-code
// --nats`), expired ones left out, in order of proposal id.
func PendingCodesIn(st Store, now time.Time) ([]PendingCode, error) {
	b, _, err := st.Codes()
	if err != nil {
		return nil, err
	}
	return pendingCodes(decodeCodes(b), now), nil
}

func pendingCodes(st *codeState, now time.Time) []PendingCode {
	var out []PendingCode
	for _, p := range st.Codes {
		if !now.After(p.Expires) {
			out = append(out, PendingCode{p.ID, p.Code, p.Expires})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
