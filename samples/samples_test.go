package samples

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestAllListsEveryFile holds All to the directory: every .html file here is a sample, in
// file-name order, with the file's bytes, and nothing else is.
func TestAllListsEveryFile(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range entries { // os.ReadDir sorts by name
		if strings.HasSuffix(e.Name(), ".html") {
			want = append(want, e.Name())
		}
	}
	all := All()
	if len(all) != len(want) {
		t.Fatalf("All has %d samples; the directory has %d .html files (%v): list each in samples.go", len(all), len(want), want)
	}
	for i, s := range all {
		if s.Name+".html" != want[i] {
			t.Errorf("sample %d is %q; the directory's file %d is %q", i, s.Name, i, want[i])
			continue
		}
		data, err := os.ReadFile(want[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(s.HTML, data) {
			t.Errorf("sample %q is not the bytes of %s", s.Name, want[i])
		}
	}
	all[0].HTML[0] ^= 0xff
	if All()[0].HTML[0] == all[0].HTML[0] {
		t.Error("a caller's change to a sample's HTML shows in the next All")
	}
}
