package mcp

import (
	"encoding/json"
	"strings"
)

// topMembers splits a JSON object into its top-level members, each value the raw JSON it was
// (not copied), without decoding the values: the scan of a 4 KiB string is a loop over its bytes
// looking for its closing quote. It reports false for anything that is not an object. obs must be
// valid JSON, as every observation of the catalogue is (decoded from an executor's frame, or
// encoded by the relay); on bytes that are not, it reports false or splits them as they come.
func topMembers(obs []byte) (map[string]json.RawMessage, bool) {
	i := skipSpace(obs, 0)
	if i >= len(obs) || obs[i] != '{' {
		return nil, false
	}
	members := map[string]json.RawMessage{}
	i = skipSpace(obs, i+1)
	if i < len(obs) && obs[i] == '}' {
		return members, true
	}
	for i < len(obs) {
		if obs[i] != '"' {
			return nil, false
		}
		end := skipValue(obs, i)
		if end < 0 {
			return nil, false
		}
		key := string(obs[i+1 : end-1])
		if !plainKey(key) && json.Unmarshal(obs[i:end], &key) != nil { // as encoding/json reads it
			return nil, false
		}
		i = skipSpace(obs, end)
		if i >= len(obs) || obs[i] != ':' {
			return nil, false
		}
		i = skipSpace(obs, i+1)
		end = skipValue(obs, i)
		if end < 0 {
			return nil, false
		}
		members[key] = json.RawMessage(obs[i:end:end])
		i = skipSpace(obs, end)
		switch {
		case i < len(obs) && obs[i] == ',':
			i = skipSpace(obs, i+1)
		case i < len(obs) && obs[i] == '}':
			return members, true
		default:
			return nil, false
		}
	}
	return nil, false
}

// plainKey reports whether key's bytes are its text: ASCII with no escape.
func plainKey(key string) bool {
	for i := 0; i < len(key); i++ {
		if key[i] == '\\' || key[i] >= 0x80 {
			return false
		}
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at b[i], or -1 when there is
// none: a string to its closing quote, an object or array to its matching bracket (strings
// inside skipped whole), anything else (a number, true, false, null) to the next delimiter.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := skipValue(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	case ',', ':', '}', ']':
		return -1
	default:
		j := i
		for j < len(b) && !strings.ContainsRune(",}] \t\n\r", rune(b[j])) {
			j++
		}
		return j
	}
}
