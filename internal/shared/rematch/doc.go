// Package rematch answers whether a regular expression matches somewhere in a string, in time
// linear in the string, for the part of RE2's syntax that the patterns of tool schemas use. It
// is the host's matcher of the WebMCP draft's `pattern` keyword (internal/shared/toolschema), on
// the relay and in the page alike; the page is spared Go's regexp and its Unicode tables.
//
// A pattern is parsed to a tree, compiled to a program of at most MaxInstructions instructions
// and run as a Thompson simulation (every thread advances one rune at a time; no backtracking),
// for at most MaxSteps steps: a pattern is an app's and a string a model's, and neither may hold
// the worker. Matching answers a bool only, so greedy and lazy quantifiers give the same verdict
// and groups capture nothing.
//
// # Syntax
//
// Taken as Go's regexp (RE2, Perl flags) reads it:
//   - literals; escapes \a \f \t \n \r \v, \xHH, \x{H...}, a backslash before punctuation, \Q...\E
//   - `.`; classes [...] and [^...] with ranges, \d \w \s \D \W \S and [:name:] (ASCII)
//   - assertions ^ $ \A \z \b \B
//   - groups (...), (?:...), (?P<name>...), (?<name>...), and flags i, m, s, U as (?flags) and
//     (?flags:...)
//   - alternation |, quantifiers * + ? {n} {n,} {n,m} and their lazy forms, counts at most
//     MaxRepeat
//
// Refused with an error naming the construct: Unicode classes (\p, \P), octal escapes and
// backreferences (\0-\9), lookaround, anything Go's regexp refuses, and a program over
// MaxInstructions. Every pattern Compile takes, Go's regexp takes with the same verdict on every
// string (held by the package's tests against regexp).
package rematch
