package fleet

import "time"

// KeptLast returns the last sequence of the ledger stream s kept.
func KeptLast(s *ExtensionStore) uint64 { s.readMu.Lock(); defer s.readMu.Unlock(); return s.kept.last }

// WithCallTimeout returns cfg whose routed calls wait d, not channel.DefaultTimeout, when their
// caller asked no wait of its own.
func WithCallTimeout(cfg Config, d time.Duration) Config { cfg.callTimeout = d; return cfg }
