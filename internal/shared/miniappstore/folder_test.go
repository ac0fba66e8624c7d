package miniappstore

import (
	"context"
	"path"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

func TestFolderOf(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		path, dir string
		ok        bool
	}{
		{"clock/index.html", "clock", true},
		{"apps/clock/index.html", "apps/clock", true},
		{"index.html", "", false},
		{"clock/main.html", "", false},
		{"clock/INDEX.html", "", false},
	} {
		dir, ok := FolderOf(tt.path)
		if dir != tt.dir || ok != tt.ok {
			t.Errorf("FolderOf(%q) = %q, %v; want %q, %v", tt.path, dir, ok, tt.dir, tt.ok)
		}
	}
}

func TestFolderFilesStayInsideTheFolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := fsroot.NewMemory()
	for name, body := range map[string]string{
		"app/index.html": "<!doctype html>", "app/helper.mjs": "export const x = 1;", "app/img/logo.svg": "<svg/>",
		"outside.mjs": "export const secret = 1;", "other/index.html": "x",
	} {
		if err := root.MkdirAll(ctx, path.Dir(name)); err != nil && path.Dir(name) != "." {
			t.Fatal(err)
		}
		if err := root.WriteFile(ctx, name, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	files, err := FolderFiles(ctx, root, "app")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	if strings.Join(got, ",") != "helper.mjs,img/logo.svg,index.html" {
		t.Fatalf("FolderFiles = %v", got)
	}
	if b, err := ReadFolderFile(ctx, root, "app", "img/logo.svg"); err != nil || string(b) != "<svg/>" {
		t.Fatalf("ReadFolderFile(img/logo.svg) = %q, %v", b, err)
	}
	for rel, rule := range map[string]refusal.Rule{
		"../outside.mjs": refusal.OutsideRoot, "img/../../outside.mjs": refusal.OutsideRoot, "/outside.mjs": refusal.OutsideRoot,
		".secret": refusal.DotfileRefused, "img/.hidden.png": refusal.DotfileRefused, "": refusal.OutsideRoot, "a\\b": refusal.OutsideRoot,
	} {
		_, err := ReadFolderFile(ctx, root, "app", rel)
		if r, ok := refusal.As(err); !ok || r.Rule != rule {
			t.Errorf("ReadFolderFile(%q) = %v, want rule %s", rel, err, rule)
		}
	}
}

func TestFolderFilesBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	many := fsroot.NewMemory()
	many.MkdirAll(ctx, "app")
	for i := 0; i <= MaxFolderFiles; i++ {
		many.WriteFile(ctx, "app/f"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+itoa(i), nil)
	}
	if _, err := FolderFiles(ctx, many, "app"); !isRule(err, refusal.MiniAppTooLarge) {
		t.Errorf("a folder of %d files: %v", MaxFolderFiles+1, err)
	}
	big := fsroot.NewMemory()
	big.MkdirAll(ctx, "app")
	big.WriteFile(ctx, "app/big.bin", make([]byte, MaxFolderFileBytes+1))
	if _, err := FolderFiles(ctx, big, "app"); !isRule(err, refusal.MiniAppTooLarge) {
		t.Errorf("a file over the bound: %v", err)
	}
	if _, err := ReadFolderFile(ctx, big, "app", "big.bin"); !isRule(err, refusal.MiniAppTooLarge) {
		t.Errorf("reading a file over the bound: %v", err)
	}
}

func isRule(err error, rule refusal.Rule) bool {
	r, ok := refusal.As(err)
	return ok && r.Rule == rule
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func TestAFolderAppIsSavedAndDeletedAsOneUnit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws, shelf := fsroot.NewMemory(), fsroot.NewMemory()
	for _, d := range []string{"clock", "clock/lib"} {
		ws.MkdirAll(ctx, d)
	}
	for name, body := range map[string]string{
		"clock/index.html": "<!doctype html><title>Clock</title>", "clock/helper.mjs": "export {}", "clock/lib/util.mjs": "export {}",
	} {
		ws.WriteFile(ctx, name, []byte(body))
	}
	st, err := New(Config{Workspace: ws, Shelf: shelf})
	if err != nil {
		t.Fatal(err)
	}
	e, err := st.SavePage(ctx, "clock/index.html", "")
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != KindApp || e.Source != SourceWorkspace || e.Folder != "clock" {
		t.Fatalf("saved: %+v", e)
	}
	rec, err := readRecord(ctx, shelf, e.stem+recordExt)
	if err != nil || !shelfFolder(rec.Folder) {
		t.Fatalf("the record names no folder: %+v, %v", rec, err)
	}
	got, err := FolderFiles(ctx, shelf, rec.Folder)
	if err != nil || len(got) != 2 || got[0].Path != "helper.mjs" || got[1].Path != "lib/util.mjs" {
		t.Fatalf("the shelf folder holds %+v, %v", got, err)
	}
	// Saved again, the folder is replaced as a whole: the new one written, the old one gone.
	ws.WriteFile(ctx, "clock/extra.css", []byte("p{}"))
	if _, err := st.SavePage(ctx, "clock/index.html", ""); err != nil {
		t.Fatal(err)
	}
	rec2, _ := readRecord(ctx, shelf, e.stem+recordExt)
	if rec2.Folder == rec.Folder {
		t.Fatal("a second save reused the folder in place")
	}
	if _, err := shelf.Stat(ctx, rec.Folder); err == nil {
		t.Fatalf("the previous folder %s is still on the shelf", rec.Folder)
	}
	if got, _ := FolderFiles(ctx, shelf, rec2.Folder); len(got) != 3 {
		t.Fatalf("the new folder holds %+v", got)
	}
	// Deleted, the copy, the record and the folder go together.
	if _, err := st.Delete(ctx, e.AppID); err != nil {
		t.Fatal(err)
	}
	left, _ := shelf.ReadDir(ctx, "")
	if len(left) != 0 {
		t.Fatalf("the shelf keeps %+v after the delete", left)
	}
}
