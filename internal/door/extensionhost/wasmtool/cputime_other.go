//go:build !linux

package wasmtool

// startClock measures a run on the wall clock: only Linux lets the relay read one thread's CPU
// time, so elsewhere a busy machine's load counts against the budget.
func startClock() runClock { return wallClock() }
