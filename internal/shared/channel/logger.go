package channel

// Logger is what a Broker or a Door writes its warnings to. A *slog.Logger is one; the package
// names this small interface instead of slog so that the page's wasm, which never logs here, does
// not link log/slog (about 100 KB of code). A nil Logger discards; a typed nil pointer inside a
// non-nil Logger is a caller's mistake.
type Logger interface {
	Warn(msg string, args ...any)
}

// discard is the Logger of a Broker or Door given none.
type discard struct{}

func (discard) Warn(string, ...any) {}
