package extensionhost

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/durable"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// AuditFile is the extensions' audit log in the host state directory (0600): one JSON line for
// every staging, decision, revocation and call, allowed or refused, as the original Voicebox
// keeps one. It never holds a secret's value, a response body or file content; URLs in it are
// redacted (Redact).
const AuditFile = ".extensions-audit.jsonl"

// MaxAuditBytes bounds the audit log. The line that would take it past the bound first moves it
// to AuditFile + ".1" (replacing an older one), so the two together hold at most twice this.
const MaxAuditBytes = 8 << 20

// maxAuditWhy bounds the sentence a record keeps of a refusal.
const maxAuditWhy = 512

// The acts an audit record is of.
const (
	ActStage   = "stage"
	ActAdmit   = "admit"
	ActDeny    = "deny"
	ActApprove = "approve"
	ActRevoke  = "revoke"
	ActDismiss = "dismiss"
	ActCall    = "call"
)

// The decisions of a record.
const (
	Allow  = "allow"
	Refuse = "refuse"
)

// AuditRecord is one line of the audit log.
type AuditRecord struct {
	At        time.Time    `json:"at"`
	Act       string       `json:"act"`
	ID        string       `json:"id"`
	Tool      string       `json:"tool,omitempty"`
	Primitive string       `json:"primitive,omitempty"`
	Decision  string       `json:"decision"`
	Rule      refusal.Rule `json:"rule,omitempty"`
	Why       string       `json:"why,omitempty"`
	By        string       `json:"by,omitempty"`   // host-token or console-code
	Hash      string       `json:"hash,omitempty"` // the plan's, for decisions
	// Observed is what a call observed, without content: for http-get the status, servedBy, via
	// and request; for wasm the digest, the ABI, the input and output sizes.
	Observed map[string]any `json:"observed,omitempty"`
}

// auditLog appends AuditRecords to a file through a durable.Log (a torn last line is cut before
// the next record), rotating it at MaxAuditBytes.
type auditLog struct {
	path     string
	clock    func() time.Time
	mu       sync.Mutex
	failures atomic.Uint64
}

// append writes r, stamped now when it has no time. A failure is counted, never returned: the
// act it records already happened or was already refused.
func (l *auditLog) append(r AuditRecord) {
	if r.At.IsZero() {
		r.At = l.clock()
	}
	r.At = r.At.UTC()
	if len(r.Why) > maxAuditWhy {
		r.Why = r.Why[:maxAuditWhy] + "..."
	}
	if r.Decision == "" {
		r.Decision = Allow
		if r.Rule != "" {
			r.Decision = Refuse
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		l.failures.Add(1)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if fi, err := os.Stat(l.path); err == nil && fi.Size()+int64(len(b))+1 > MaxAuditBytes {
		os.Rename(l.path, l.path+".1")
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		l.failures.Add(1)
		return
	}
	// A call's record is not synced (calls are many); a decision's is, like the ledger line.
	if err := durable.NewLog(l.path, "the audit log", nil).Append(b, r.Act != ActCall); err != nil {
		l.failures.Add(1)
	}
}

// Audit appends r to the audit log.
func (s *Admissions) Audit(r AuditRecord) { s.audit.append(r) }

// AuditFailures returns how many records the audit log failed to take.
func (s *Admissions) AuditFailures() uint64 { return s.audit.failures.Load() }

// ruleWhy returns err's rule and sentence for a record ("internal-error" for an error that is no
// refusal, without its text).
func ruleWhy(err error) (refusal.Rule, string) {
	if r, ok := refusal.As(err); ok {
		return r.Rule, r.Why
	}
	return refusal.InternalError, "the relay could not update its extension state"
}
