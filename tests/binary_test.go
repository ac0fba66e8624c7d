//go:build !js

package tests

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestTheBuiltBinaryRunsAlone copies the relay that ./build.sh build made (bin/relay), and the
// release binary ./build.sh dist made for this machine when there is one, into an empty folder,
// starts it there with no flags and nothing beside it, and fetches the page, the worker's loader
// and the wasm, plain and compressed: the page is inside the binary. bin/relay is built with
// public/, so what it serves is public/ byte for byte, and the page boots from it in Chromium; a
// dist binary may be older than public/, so its wasm is checked for what it is instead.
func TestTheBuiltBinaryRunsAlone(t *testing.T) {
	t.Parallel()
	root := harness.RepoRoot()
	bins := map[string]string{"build": filepath.Join(root, "bin", "relay")}
	if dist := filepath.Join(root, "dist", "relay-"+runtime.GOOS+"-"+runtime.GOARCH); fileExists(dist) {
		bins["dist"] = dist
	}
	public := filepath.Join(root, "public")
	for name, bin := range bins {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			relay := harness.StartAlone(t, bin)
			if index, _ := fetch(t, relay.URL+"/", ""); !bytes.Contains(index, []byte("<title>Voicebox</title>")) {
				t.Fatalf("GET / answered %.200q, not the page", index)
			}
			if loader, _ := fetch(t, relay.URL+"/wasm_exec.js", ""); !bytes.Contains(loader, []byte("Go")) {
				t.Fatalf("GET /wasm_exec.js answered %.200q", loader)
			}
			wasm, _ := fetch(t, relay.URL+"/voicebox.wasm", "identity")
			if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
				t.Fatalf("GET /voicebox.wasm answered %d bytes that are not WebAssembly", len(wasm))
			}
			gz, encoding := fetch(t, relay.URL+"/voicebox.wasm", "gzip")
			if plain, err := gunzip(gz); encoding != "gzip" || err != nil || !bytes.Equal(plain, wasm) {
				t.Fatalf("the gzip copy (Content-Encoding %q) is not the wasm: %v", encoding, err)
			}
			if br, encoding := fetch(t, relay.URL+"/voicebox.wasm", "br"); encoding != "br" || len(br) == 0 || len(br) >= len(wasm) {
				t.Fatalf("the brotli copy: Content-Encoding %q, %d bytes of %d", encoding, len(br), len(wasm))
			}
			for _, encoding := range []string{"identity", "br"} {
				revalidates(t, relay.URL+"/voicebox.wasm", encoding)
			}
			if name != "build" {
				return
			}
			for _, f := range []struct{ path, encoding, file string }{
				{"/", "", "index.html"},
				{"/worker.js", "", "worker.js"},
				{"/wasm_exec.js", "", "wasm_exec.js"},
				{"/voicebox.wasm", "identity", "voicebox.wasm"},
				{"/voicebox.wasm", "br", "voicebox.wasm.br"},
				{"/voicebox.wasm", "gzip", "voicebox.wasm.gz"},
			} {
				want, err := os.ReadFile(filepath.Join(public, f.file))
				if err != nil {
					t.Fatalf("%v (./build.sh build writes it)", err)
				}
				if got, _ := fetch(t, relay.URL+f.path, f.encoding); !bytes.Equal(got, want) {
					t.Errorf("GET %s (Accept-Encoding %q): %d bytes; want the %d bytes of public/%s", f.path, f.encoding, len(got), len(want), f.file)
				}
			}
			tab := harness.NewTab(t)
			tab.Navigate(relay.URL)
			status := harness.WaitFor[string](tab, `document.querySelector('#status').dataset.state !== 'loading' && document.querySelector('#status').textContent`, readyBound)
			if want := "ready · build " + relayBuild(t, relay); status != want {
				t.Fatalf("the page from the binary alone says %q, want %q", status, want)
			}
		})
	}
}

func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// fetch GETs url with Accept-Encoding set as given (the client then decodes nothing) and returns
// the body as sent and its Content-Encoding.
func fetch(t *testing.T, url, encoding string) ([]byte, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return body, resp.Header.Get("Content-Encoding")
}

// revalidates checks that url, fetched with Accept-Encoding encoding, carries a strong ETag and
// that a request naming it is answered 304 with no body: the binary's embedded page has no
// modification times, so without the tag a browser downloads the wasm again at every load and
// drops the code it compiled from it.
func revalidates(t *testing.T, url, encoding string) {
	t.Helper()
	get := func(tag string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Accept-Encoding", encoding)
		if tag != "" {
			req.Header.Set("If-None-Match", tag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	tag := get("").Header.Get("ETag")
	if len(tag) < 3 || tag[0] != '"' {
		t.Fatalf("GET %s (Accept-Encoding %q): ETag %q, want a strong validator", url, encoding, tag)
	}
	if again := get(tag); again.StatusCode != http.StatusNotModified || again.ContentLength > 0 {
		t.Fatalf("GET %s with If-None-Match %s: %d (%d bytes), want 304 and no body", url, tag, again.StatusCode, again.ContentLength)
	}
}

func fileExists(name string) bool {
	info, err := os.Stat(name)
	return err == nil && info.Mode().IsRegular()
}
