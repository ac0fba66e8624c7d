// Package wire is the envelope format of the /channel RPC: the call a router sends to an executor
// and the answer that comes back, parsed strictly so that nothing rides along.
//
// A call is {"v":1,"callId","tool","descriptorId","args","boundsEcho"}. An answer is either
// {"v":1,"callId","ok":true,"observed"} or {"v":1,"callId","ok":false,"refused","why"}, and a refused
// answer may add "budget":{"used","max"} (see Budget).
//
// ParseCall and ParseAnswer check a frame in a fixed order and report the first rule it breaks as a
// *ParseError wrapping a *refusal.Refusal:
//
//  1. the frame itself: at most MaxFrameBytes, UTF-8, exactly one JSON object, no duplicate key at
//     any depth, nesting at most MaxDepth (malformed-call or malformed-answer, and no callId is
//     read from such a frame);
//  2. every top-level property is one the envelope defines (unknown-field);
//  3. "v" is 1 (bad-version);
//  4. "callId" is a non-empty string of at most MaxIDBytes (malformed-call, malformed-answer);
//  5. for a call: "descriptorId", "tool", "boundsEcho" are present (unattributed-call) and well
//     typed (malformed-call), "args" is an object when present (malformed-call); for an answer:
//     "ok" is a boolean, ok:true carries an "observed" object and nothing of a refusal, ok:false
//     carries a rule id in "refused" and a sentence in "why" and no "observed" (malformed-answer).
//
// A JSON null counts as an absent property. Property names match exactly (case matters), unlike
// encoding/json's struct decoding.
//
// Verify re-checks a parsed call against the receiver's own admitted set: a descriptor it has not
// admitted is unattributed-call; an echo whose value differs from the admitted bounds is
// bounds-mismatch. Values are compared as JSON values: key order, whitespace and the spelling of a
// number (1, 1.0, 10e-1) do not matter.
//
// Every accepted envelope marshals (MarshalJSON) to a frame that parses back to an equal value.
//
// # Wasm
//
// Nothing differs in behaviour: the package is standard-library Go and runs the same in the page
// and the relay. It is slower there (a typical call parses in about ten times the native time).
package wire
