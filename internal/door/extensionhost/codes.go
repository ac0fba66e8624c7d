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

	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The bounds of console approval codes. Each proposal has at most one outstanding code, and
// asking again while it is outstanding prints the same code again: nobody's asking voids a code a
// person holds, and nobody's guessing does either. Every limit that could lock a person out counts
// per requester (a session, or without the gate a client address; see server.Requester): the
// requests one asks, the codes one has open, the wrong attempts one makes at a code. The limits
// that keep guessing slow count for everyone together, and they throttle, never void:
//
// A code is compared at most MaxWrongGuesses times wrongly per proposal within
// CodeRequestWindow, whoever guesses and from however many addresses: 25 per 10 minutes, 3,600 a
// day, against 10^8 codes of CodeDigits digits. The chance of guessing a proposal's code is at
// most 3.6e-5 a day of guessing without pause, about 1.3% a year, every wrong attempt audited;
// the same bound as when five wrong attempts voided a code and a proposal got five codes per
// window. Past the ceiling an attempt is refused approval-rate-limited without being compared,
// and the code stands: it admits once the window has room, for whoever holds it.
const (
	// CodeLifetime is how long a code admits.
	CodeLifetime = 2 * time.Minute
	// MaxCodeAttempts is how many wrong attempts one requester may make at one code; its next
	// attempt is refused approval-guesses-exhausted without being compared. The code still
	// admits for everyone else.
	MaxCodeAttempts = 5
	// MaxWrongGuesses is how many wrong attempts at one proposal's codes are compared within
	// CodeRequestWindow, from all requesters together (five requesters' worth); past it every
	// attempt is refused approval-rate-limited, uncompared, until the window has room again.
	MaxWrongGuesses = 25
	// CodeDigits is the length of a code.
	CodeDigits = 8
	// MaxCodeRequests is how many codes one requester may ask for within CodeRequestWindow
	// (asking again for an outstanding one counts too); one more is refused
	// approval-rate-limited.
	MaxCodeRequests = 5
	// MaxCodesPerExtension is how many new codes one proposal may be given within
	// CodeRequestWindow, whoever asks; one more is refused approval-rate-limited. A code ends
	// only by use, expiry or a changed plan (never by guesses), so expiries alone never reach it.
	MaxCodesPerExtension = 5
	// MaxOpenCodesPerRequester bounds the codes open at once that one requester's requests
	// minted; one more is refused approval-rate-limited.
	MaxOpenCodesPerRequester = 3
	// MaxOutstandingCodes bounds the codes open at once, for all proposals together, for a
	// requester that has one open already. A requester with none open is never refused by it,
	// so others' codes cannot lock the person out of asking.
	MaxOutstandingCodes = 64
	// CodeRequestWindow is the window the request and guess limits count in.
	CodeRequestWindow = 10 * time.Minute
	// maxRequesters bounds the requesters whose requests are remembered within the window; a
	// new one past it makes the relay forget the one that asked longest ago.
	maxRequesters = 1024
)

// maxCodeSwaps bounds how often one code operation reads the codes' document again after
// another relay (or another store on the same directory) changed it first; past it the operation
// is refused fleet-unavailable (the store is too busy to agree with).
const maxCodeSwaps = 16

// codeState is the approval codes' document (Store.Codes): the outstanding code of each proposal
// id, how each proposal's last code ended (so a late attempt is told why), and, within
// CodeRequestWindow, when each requester asked, when each proposal was given a new code and when
// a wrong attempt was made at it. It is one document so that every relay on the store counts the
// same attempts and limits.
type codeState struct {
	Codes  map[string]*pending    `json:"codes,omitempty"`
	Spent  map[string]*spentCode  `json:"spent,omitempty"`
	Asked  map[string][]time.Time `json:"asked,omitempty"`
	Mints  map[string][]time.Time `json:"mints,omitempty"`
	Wrongs map[string][]time.Time `json:"wrongs,omitempty"`
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
	if st.Wrongs == nil {
		st.Wrongs = map[string][]time.Time{}
	}
	return st
}

// encode is the document to store; empty when nothing is left to remember.
func (st *codeState) encode() []byte {
	if len(st.Codes) == 0 && len(st.Spent) == 0 && len(st.Asked) == 0 && len(st.Mints) == 0 && len(st.Wrongs) == 0 {
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
// MaxCodesPerExtension new codes, a requester with MaxOpenCodesPerRequester codes open, or one
// with a code open when MaxOutstandingCodes are, is refused approval-rate-limited. The limits
// count across every relay on the store.
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
		if p := st.Codes[id]; p != nil && p.Hash == hash {
			st.ask(requester, now)
			code = p.Code
			return true, nil
		}
		if mints := st.Mints[id]; len(mints) >= MaxCodesPerExtension {
			return dirty, refusal.New(refusal.ApprovalRateLimited, "%s was given %d approval codes in the last %s; the next can be asked for in %s", id, len(mints), CodeRequestWindow, mints[0].Add(CodeRequestWindow).Sub(now).Round(time.Second))
		}
		mine := 0
		for oid, p := range st.Codes {
			if p.By == requester && oid != id {
				mine++
			}
		}
		if mine >= MaxOpenCodesPerRequester {
			return dirty, refusal.New(refusal.ApprovalRateLimited, "you have %d approval codes open already; use one, or wait until they expire (%s)", mine, CodeLifetime)
		}
		if _, replacing := st.Codes[id]; mine > 0 && !replacing && len(st.Codes) >= MaxOutstandingCodes {
			return dirty, refusal.New(refusal.ApprovalRateLimited, "%d approval codes are open already and you hold %d; use yours, or wait until it expires (%s)", len(st.Codes), mine, CodeLifetime)
		}
		n, err := rand.Int(rand.Reader, big.NewInt(100_000_000))
		if err != nil {
			return false, err
		}
		// An earlier plan's code, which could never admit the new one, is replaced.
		st.Codes[id] = &pending{Code: fmt.Sprintf("%08d", n.Int64()), ID: id, Hash: hash, Expires: now.Add(CodeLifetime), By: requester}
		delete(st.Spent, id)
		st.ask(requester, now)
		st.Mints[id] = append(st.Mints[id], now)
		code = st.Codes[id].Code
		return true, nil
	})
	if err != nil {
		return "", err
	}
	return code, nil
}

// ask records that requester asked at now. A new requester past maxRequesters makes the
// document forget the one whose last request is oldest: the per-requester limit is a courtesy to
// others, and the limits that bound codes and guesses count for everyone together.
func (st *codeState) ask(requester string, now time.Time) {
	if _, known := st.Asked[requester]; !known && len(st.Asked) >= maxRequesters {
		oldest, at := "", now
		for r, ts := range st.Asked {
			if last := ts[len(ts)-1]; !last.After(at) {
				oldest, at = r, last
			}
		}
		delete(st.Asked, oldest)
	}
	st.Asked[requester] = append(st.Asked[requester], now)
}

// prune forgets what fell out of the window: requests, mints, wrong attempts, expired codes (remembered as
// expired) and the endings of codes. It reports whether anything changed.
func (st *codeState) prune(now time.Time) bool {
	changed := false
	for _, m := range []map[string][]time.Time{st.Asked, st.Mints, st.Wrongs} {
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

// Approve admits proposal id when code is the outstanding code for it, unexpired, and the
// proposal is unchanged since the code was issued. requester (see server.Requester) is who
// typed it: its wrong attempts count against it alone, so nobody's guessing voids the code for
// the person holding it. Each way a code can fail has its own rule: approval-code-missing (none
// was asked for this proposal), approval-code-wrong, approval-guesses-exhausted (this requester
// made MaxCodeAttempts wrong attempts at it), approval-rate-limited (MaxWrongGuesses wrong
// attempts at the proposal within CodeRequestWindow, from everyone; the code stands),
// approval-code-expired, approval-code-used and approval-plan-changed. Attempts count on every
// relay on the store together, and a code is taken by one attempt only (compare-and-set on the
// codes' document) before its admission is decided. A code's refusal is audited; an admission it
// makes is audited as the decision.
func (s *Admissions) Approve(id, code, requester string, existingTools []string) (extensions.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.takeCode(id, code, requester)
	if err != nil {
		rule, why := ruleWhy(err)
		s.Audit(AuditRecord{Act: ActApprove, ID: id, By: "console-code", Rule: rule, Why: why})
		return extensions.Plan{}, err
	}
	return s.decideLocked(id, true, "console-code", existingTools)
}

// takeCode spends id's outstanding code when code is it and the plan is the one it was issued
// for, or counts requester's wrong attempt and says why not. An attempt past requester's own
// MaxCodeAttempts, or past MaxWrongGuesses for the proposal, is refused before it is compared.
func (s *Admissions) takeCode(id, code, requester string) error {
	d, raw, _, cerr := s.Candidate(id)
	return s.withCodes(func(st *codeState) (bool, error) {
		now := s.clock()
		dirty := st.prune(now)
		p := st.Codes[id]
		if p == nil {
			return dirty, st.spentRefusal(id, code)
		}
		left := p.Expires.Sub(now).Round(time.Second)
		if p.Wrong[requester] >= MaxCodeAttempts {
			return dirty, refusal.New(refusal.ApprovalGuessesExhausted, "you made %d wrong attempts at the approval code for %s, so it takes no more from you; it expires in %s, then ask for a new one", MaxCodeAttempts, id, left)
		}
		if wrongs := st.Wrongs[id]; len(wrongs) >= MaxWrongGuesses {
			return dirty, refusal.New(refusal.ApprovalRateLimited, "%d wrong approval codes for %s were tried in the last %s, from anyone; the code stands, and the next attempt is taken in %s", len(wrongs), id, CodeRequestWindow, wrongs[0].Add(CodeRequestWindow).Sub(now).Round(time.Second))
		}
		if subtle.ConstantTimeCompare([]byte(code), []byte(p.Code)) != 1 {
			if p.Wrong == nil {
				p.Wrong = map[string]int{}
			}
			p.Wrong[requester]++
			st.Wrongs[id] = append(st.Wrongs[id], now)
			if n := p.Wrong[requester]; n >= MaxCodeAttempts {
				return true, refusal.New(refusal.ApprovalCodeWrong, "wrong approval code; that was your attempt %d of %d at this code, so it takes no more from you: it expires in %s, then ask for a new one", n, MaxCodeAttempts, left)
			}
			return true, refusal.New(refusal.ApprovalCodeWrong, "wrong approval code (%d of your %d attempts at this code used)", p.Wrong[requester], MaxCodeAttempts)
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
