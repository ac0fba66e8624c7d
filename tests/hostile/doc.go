// Package hostile is the hostile suite: every attack a review has made on Voicebox, performed
// again on every run against the real thing, so a wall that once held keeps holding.
//
// Each case starts the real relay binary (tests/harness.StartRelay; bin/relay, built by
// ./build.sh build) and attacks it over real sockets, or drives real Chromium against it
// (tests/harness.NewTab). Each asserts three things: the wall (what the attack wanted did not
// happen), the named refusal the attacker was given ({rule, why}, the ids of shared/refusal),
// and that the next legitimate request is served. Cases that need many connections, long waits
// or large bodies are bounded in count and time and stop by themselves; nothing here is timed
// (speed is measured by the benchmarks, BenchmarkHealthWithStalledBodies among them).
//
// SECURITY.md at the top of the repository lists the cases, the wall each one proves and who
// enforces it.
//
// # Adding a case
//
// A new hole becomes one more case: write a test in the file of its area (or a new file, with
// //go:build !js), named for the wall it proves (TestXIsRefused...), that starts its own relay,
// performs the attack as it was found, and checks the wall, the rule and the next request (see
// served). Give the fix its own rule id in shared/refusal if none fits, add a line to
// SECURITY.md's table, and run it with
//
//	./build.sh build && go test -count=1 ./tests/hostile/ -run TestName
//
// `./build.sh test` runs the package with the end-to-end layer.
//
// # Doors
//
// Every door the project has (a route, a socket frame, a worker method, a message type a page
// script dispatches on, a descriptor field) is enumerated from the code by doors_test.go, and
// TestEveryDoorHasAHostileCase fails for one without a row in SECURITY.md's Doors table naming the
// case(s) that attack it. The sweeps (sweep_test.go, messages_test.go, fields_test.go) take the
// same enumeration, so a new door of a kind they know is attacked the day it is written.
package hostile
