// Package channel is the RPC over /channel: a Broker on the asking side that sends call envelopes
// to one peer and waits for their answers, and a Door on the executing side that turns call frames
// into answer frames around an Executor.
//
// The Broker promises that every Ask returns exactly one wire.Answer: the peer's answer, or a
// refusal it names itself. The names depend on the peer's Kind:
//
//	                           Page           Machine
//	peer not connected         no-page        machine-unreachable
//	no answer in time          page-timeout   machine-timeout
//	peer gone while waiting    page-closed    machine-closed
//
// An answer frame that does not parse, or names no waiting call, settles nothing: it is counted in
// Stats and logged, and the call it may have meant keeps waiting until its deadline.
//
// The Door re-verifies every call against its own admitted set before running it (a LiveAdmitted,
// kept current by the relay's admitted control frames, see AdmittedType), contains the
// executor's panics and errors as exec-threw, and lets the executor's own refusals (and their budget
// figures, see wire.BudgetError) cross unchanged.
//
// # Wasm
//
// Nothing differs. In the browser Go runs on one thread, so a Door's executor that blocks (rather
// than yielding to the event loop) holds up every other call in the page.
package channel
