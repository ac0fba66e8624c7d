package names

import "unicode"

// IsVirama is for the table's test.
func IsVirama(r rune) bool { return unicode.Is(viramas, r) }
