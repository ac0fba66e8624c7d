package fleet

// KeptLast returns the last sequence of the ledger stream s kept.
func KeptLast(s *ExtensionStore) uint64 { s.readMu.Lock(); defer s.readMu.Unlock(); return s.kept.last }
