package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"testing/fstest"
	"time"
)

// TestStaticFilesRevalidate: the page's files served from an fs.FS without modification times
// (as the relay's embedded page is) carry a strong ETag, one per representation, and a request
// that names it is answered 304: the browser keeps the response it has, and the code Chromium
// compiled from it (a 200 of the same bytes would be a response of another time).
func TestStaticFilesRevalidate(t *testing.T) {
	t.Parallel()
	files := fstest.MapFS{}
	for name, body := range pageFiles {
		files[name] = &fstest.MapFile{Data: []byte(body)} // no ModTime, as embed.FS
	}
	s, err := New(Config{Files: files, Build: "test-build", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)

	seen := map[string]string{}
	for _, c := range []struct{ name, path, accept string }{
		{"page", "/", ""},
		{"script", "/app.js", ""},
		{"wasm", "/voicebox.wasm", ""},
		{"wasm brotli", "/voicebox.wasm", "br"},
		{"wasm gzip", "/voicebox.wasm", "gzip"},
	} {
		resp, _ := get(t, ts.URL+c.path, map[string]string{"Accept-Encoding": c.accept})
		tag := resp.Header.Get("ETag")
		if resp.StatusCode != 200 || len(tag) < 3 || tag[0] != '"' || resp.Header.Get("Last-Modified") != "" {
			t.Fatalf("%s: status %d, ETag %q, Last-Modified %q; want 200 with a strong ETag and no time", c.name, resp.StatusCode, tag, resp.Header.Get("Last-Modified"))
		}
		if other, dup := seen[tag]; dup {
			t.Errorf("%s has the ETag of %s", c.name, other)
		}
		seen[tag] = c.name
		again, body := get(t, ts.URL+c.path, map[string]string{"Accept-Encoding": c.accept, "If-None-Match": tag})
		if again.StatusCode != 304 || body != "" {
			t.Errorf("%s asked again with its ETag: status %d, body %q; want 304 and none", c.name, again.StatusCode, body)
		}
		if again.Header.Get("ETag") != tag {
			t.Errorf("%s's 304 carries ETag %q, want %q", c.name, again.Header.Get("ETag"), tag)
		}
		if c.path == "/voicebox.wasm" && again.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("%s's 304: Vary = %q, want Accept-Encoding", c.name, again.Header.Get("Vary"))
		}
		stale, _ := get(t, ts.URL+c.path, map[string]string{"Accept-Encoding": c.accept, "If-None-Match": `"other"`})
		if stale.StatusCode != 200 {
			t.Errorf("%s asked with another ETag: status %d, want 200", c.name, stale.StatusCode)
		}
	}
}

// TestAnEditedFileGetsANewTagAndTheTagsStayOneAFile: a file served again after an edit (another
// size or time) gets the tag of its new bytes, and the validators keep one entry a file however
// often it is edited (a relay serving --public DIR while its page is worked on).
func TestAnEditedFileGetsANewTagAndTheTagsStayOneAFile(t *testing.T) {
	var e etags
	fsys := fstest.MapFS{}
	tagOf := func(body string, mod time.Time) string {
		fsys["page.js"] = &fstest.MapFile{Data: []byte(body), ModTime: mod}
		f, err := fsys.Open("page.js")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		info, _ := f.Stat()
		return e.of("page.js", info, f.(io.ReadSeeker))
	}
	start := time.Unix(1_700_000_000, 0)
	first := tagOf("one", start)
	if again := tagOf("one", start); again != first {
		t.Fatalf("the same file answered %s, then %s", first, again)
	}
	seen := map[string]bool{first: true}
	for i := range 50 {
		tag := tagOf(fmt.Sprintf("edit %d", i), start.Add(time.Duration(i+1)*time.Second))
		if seen[tag] {
			t.Fatalf("edit %d kept an earlier tag %s", i, tag)
		}
		seen[tag] = true
	}
	if n := len(e.tags); n != 1 {
		t.Fatalf("the validators hold %d entries for one file", n)
	}
}
