package executor

import (
	"encoding/binary"
)

// mediaKind is a type read-media recognises by its first bytes: its kind ("image" or "audio"),
// its MIME type, and the test of the file's head.
type mediaKind struct {
	kind, mime string
	is         func(head []byte) bool
}

// mediaKinds are the image and audio types read-media knows, tried in this order: the image and
// audio signatures of h2non/filetype v1.1.3 with its MIME names (which the tool answered with
// before; TestSniffAgreesWithFiletype holds them to it), written here because that package's
// tables of every other kind cost the page 24 KB brotli (measured 2026-12-05). Unlike its map,
// the order is fixed, so a head two signatures fit always gets the same answer.
var mediaKinds = []mediaKind{
	{"image", "image/jpeg", func(b []byte) bool { return hasAt(b, 0, "\xFF\xD8\xFF") }},
	{"image", "image/jp2", func(b []byte) bool {
		return len(b) > 12 && hasAt(b, 0, "\x00\x00\x00\x0C\x6A\x50\x20\x20\x0D\x0A\x87\x0A\x00")
	}},
	{"image", "image/png", func(b []byte) bool { return hasAt(b, 0, "\x89PNG") }},
	{"image", "image/gif", func(b []byte) bool { return hasAt(b, 0, "GIF") }},
	{"image", "image/webp", func(b []byte) bool { return hasAt(b, 8, "WEBP") }},
	{"image", "image/x-canon-cr2", func(b []byte) bool { return len(b) > 10 && tiffHeader(b) && hasAt(b, 8, "CR\x02") }},
	{"image", "image/tiff", func(b []byte) bool { return len(b) > 10 && tiffHeader(b) && !hasAt(b, 8, "CR\x02") }},
	{"image", "image/bmp", func(b []byte) bool { return hasAt(b, 0, "BM") }},
	{"image", "image/vnd.ms-photo", func(b []byte) bool { return hasAt(b, 0, "II\xBC") }},
	{"image", "image/vnd.adobe.photoshop", func(b []byte) bool { return hasAt(b, 0, "8BPS") }},
	{"image", "image/vnd.microsoft.icon", func(b []byte) bool { return hasAt(b, 0, "\x00\x00\x01\x00") }},
	{"image", "image/heif", isHEIF},
	{"image", "image/vnd.dwg", func(b []byte) bool { return hasAt(b, 0, "AC10") }},
	{"audio", "audio/midi", func(b []byte) bool { return hasAt(b, 0, "MThd") }},
	{"audio", "audio/mpeg", func(b []byte) bool { return len(b) > 2 && (hasAt(b, 0, "ID3") || hasAt(b, 0, "\xFF\xFB")) }},
	{"audio", "audio/m4a", func(b []byte) bool { return len(b) > 10 && (hasAt(b, 4, "ftypM4A") || hasAt(b, 0, "M4A ")) }},
	{"audio", "audio/ogg", func(b []byte) bool { return hasAt(b, 0, "OggS") }},
	{"audio", "audio/x-flac", func(b []byte) bool { return hasAt(b, 0, "fLaC") }},
	{"audio", "audio/x-wav", func(b []byte) bool { return hasAt(b, 0, "RIFF") && hasAt(b, 8, "WAVE") }},
	{"audio", "audio/amr", func(b []byte) bool { return len(b) > 11 && hasAt(b, 0, "#!AMR\n") }},
	{"audio", "audio/aac", func(b []byte) bool { return hasAt(b, 0, "\xFF\xF1") || hasAt(b, 0, "\xFF\xF9") }},
	{"audio", "audio/x-aiff", func(b []byte) bool { return hasAt(b, 0, "FORM") && hasAt(b, 8, "AIFF") }},
}

// sniffMedia returns the kind and MIME type of the first of mediaKinds head fits, or "", "".
func sniffMedia(head []byte) (kind, mime string) {
	for _, k := range mediaKinds {
		if k.is(head) {
			return k.kind, k.mime
		}
	}
	return "", ""
}

// hasAt reports whether b holds sig at offset at.
func hasAt(b []byte, at int, sig string) bool {
	return len(b) >= at+len(sig) && string(b[at:at+len(sig)]) == sig
}

// tiffHeader reports whether b starts with TIFF's byte-order mark and magic 42.
func tiffHeader(b []byte) bool { return hasAt(b, 0, "II*\x00") || hasAt(b, 0, "MM\x00*") }

// isHEIF reports whether b is an ISO base media file whose "ftyp" box, held whole in b, names
// the brand heic, as its major brand or as a compatible brand of a mif1 or msf1 file (the
// brands read in fours up to the box's length, the last one possibly past it, as filetype does).
func isHEIF(b []byte) bool {
	if len(b) < 17 || !hasAt(b, 4, "ftyp") {
		return false
	}
	boxLen := int(binary.BigEndian.Uint32(b))
	if boxLen > len(b) {
		return false
	}
	major := string(b[8:12])
	if major == "heic" {
		return true
	}
	if major != "mif1" && major != "msf1" {
		return false
	}
	for i := 16; i < boxLen && i+4 <= len(b); i += 4 {
		if string(b[i:i+4]) == "heic" {
			return true
		}
	}
	return false
}
