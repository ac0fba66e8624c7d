package executor

// ShrinkSegments sets a RootAudit's segment bound and count, so rollover and pruning are quick
// to test.
func ShrinkSegments(a *RootAudit, segBytes, keep int) { a.segBytes, a.keep = segBytes, keep }
