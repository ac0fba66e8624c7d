//go:build js

package channel

// hammerCalls is smaller in the browser, where all goroutines share one thread.
const hammerCalls = 1000
