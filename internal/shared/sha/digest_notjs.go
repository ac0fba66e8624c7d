//go:build !js

package sha

import (
	"crypto/sha256"
	"hash"
)

// Sum256 returns the SHA-256 digest of b.
func Sum256(b []byte) [Size]byte { return sha256.Sum256(b) }

// New returns a running SHA-256.
func New() hash.Hash { return sha256.New() }
