// Package sha is SHA-256 for both programs: Sum256 and New give what crypto/sha256's do.
//
// In the relay they are crypto/sha256's. In the page (GOOS=js) they are this package's own
// SHA-256 (sha256.go, FIPS 180-4 written out), because crypto/sha256 there costs about 38 KB of
// brotli, most of it not SHA-256 but the FIPS module its import chain registers at init (AES,
// GCM, the DRBG, SHA-3, SHA-512, HMAC and their self-tests). The page hashes uploads, the undo
// history's contents and tool descriptors; none of it is a secret, and the digest is the same
// bytes either way (TestOwnSHA256MatchesCryptoSHA256, FuzzOwnSHA256, native and in the browser).
package sha

// Size is the length of a SHA-256 digest in bytes.
const Size = 32

// BlockSize is SHA-256's block length in bytes.
const BlockSize = 64
