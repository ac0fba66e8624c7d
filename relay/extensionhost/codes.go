package extensionhost

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
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

// RequestCode returns the single-use console code for proposal id, bound to its current plan
// hash, for requester (see server.Requester), and writes the outstanding codes to
// .pending-approval.json (0600). The caller prints it on the console; it must never go into an
// HTTP response. While a code for id is outstanding, unexpired and of the same plan, asking again
// returns that same code: no request voids a code someone holds. A requester past MaxCodeRequests
// within CodeRequestWindow, a proposal past MaxCodesPerExtension new codes, or a new code past
// MaxOutstandingCodes open ones, is refused approval-rate-limited.
func (s *Admissions) RequestCode(id, requester string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, raw, _, err := s.Candidate(id)
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
func (s *Admissions) pruneLocked(now time.Time) {
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
func (s *Admissions) writePendingLocked() error {
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
// approval-code-used and approval-plan-changed. Attempts count against id's code only. A code's
// refusal is audited; an admission it makes is audited as the decision.
func (s *Admissions) Approve(id, code string, existingTools []string) (extensions.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	plan, decided, err := s.approveLocked(id, code, existingTools)
	if err != nil && !decided {
		rule, why := ruleWhy(err)
		s.Audit(AuditRecord{Act: ActApprove, ID: id, By: "console-code", Rule: rule, Why: why})
	}
	return plan, err
}

// approveLocked is Approve with s.mu held; decided reports that the code was taken and the
// decision made (and audited by decideLocked), whatever it answered.
func (s *Admissions) approveLocked(id, code string, existingTools []string) (plan extensions.Plan, decided bool, err error) {
	s.pruneLocked(s.clock())
	p := s.codes[id]
	if p == nil {
		return extensions.Plan{}, false, s.spentLocked(id, code)
	}
	p.Attempts++
	if subtle.ConstantTimeCompare([]byte(code), []byte(p.Code)) != 1 {
		if p.Attempts >= MaxCodeAttempts {
			s.endLocked(id, refusal.ApprovalCodeExhausted)
			return extensions.Plan{}, false, refusal.New(refusal.ApprovalCodeWrong, "wrong approval code; that was attempt %d of %d, so the code is void now: ask for a new one", p.Attempts, MaxCodeAttempts)
		}
		return extensions.Plan{}, false, refusal.New(refusal.ApprovalCodeWrong, "wrong approval code (%d of %d attempts used)", p.Attempts, MaxCodeAttempts)
	}
	d, raw, _, err := s.Candidate(id)
	if err != nil {
		return extensions.Plan{}, false, err
	}
	if extensions.Disclose(d, extensions.Machine, raw).Hash != p.Hash {
		delete(s.codes, id)
		s.writePendingLocked()
		return extensions.Plan{}, false, refusal.New(refusal.ApprovalPlanChanged, "the proposal changed after the code was issued; review the new plan and ask for a new code")
	}
	s.endLocked(id, refusal.ApprovalCodeUsed)
	plan, err = s.decideLocked(id, true, "console-code", existingTools)
	return plan, true, err
}

// endLocked retires id's outstanding code, remembering why for later attempts.
func (s *Admissions) endLocked(id string, why refusal.Rule) {
	s.spent[id] = &spentCode{code: s.codes[id].Code, rule: why, at: s.clock()}
	delete(s.codes, id)
	s.writePendingLocked()
}

// spentLocked is the refusal for an attempt when no code is outstanding for id.
func (s *Admissions) spentLocked(id, code string) error {
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
