//go:build !js

package channel

// hammerCalls is how many calls TestBrokerHammer asks at once natively (the race detector allows
// 8128 live goroutines, and each call takes one).
const hammerCalls = 4000
