package miniappstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/miniappstore"
	"github.com/voicebox-go/voicebox/internal/shared/miniappstore/miniappstoretest"
)

func TestSuiteMemory(t *testing.T) {
	t.Parallel()
	miniappstoretest.Run(t, func(t *testing.T) fsroot.Root { return fsroot.NewMemory() })
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	mem := fsroot.NewMemory()
	tests := []struct {
		name string
		cfg  miniappstore.Config
	}{
		{"no shelf", miniappstore.Config{Workspace: mem}},
		{"unnamed sandbox", miniappstore.Config{Shelf: mem, Sandboxes: []miniappstore.Sandbox{{Root: mem}}}},
		{"sandbox without root", miniappstore.Config{Shelf: mem, Sandboxes: []miniappstore.Sandbox{{Name: "a"}}}},
		{"sandbox named twice", miniappstore.Config{Shelf: mem, Sandboxes: []miniappstore.Sandbox{{Name: "a", Root: mem}, {Name: "a", Root: mem}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := miniappstore.New(tc.cfg); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
	if _, err := miniappstore.New(miniappstore.Config{Shelf: mem}); err != nil {
		t.Fatalf("no workspace: %v", err)
	}
}

// TestSaveIsAtomic fails each write of a save in turn and checks the previous state survives:
// the earlier copy for an update, no new entry for a first save.
func TestSaveIsAtomic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	boom := errors.New("disk full")
	tests := []struct {
		name   string
		failOn string
		first  bool
	}{
		{"first save, record fails", "notes.meta.json", true},
		{"first save, copy fails", "notes.html", true},
		{"update, record fails", "notes.meta.json", false},
		{"update, copy fails", "notes.html", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws, shelf := fsroot.NewMemory(), fsroot.NewMemory()
			st, err := miniappstore.New(miniappstore.Config{Workspace: ws, Shelf: shelf})
			if err != nil {
				t.Fatal(err)
			}
			if !tc.first {
				if _, err := st.Save(ctx, miniappstore.SaveOptions{Title: "Notes", HTML: []byte("<p>old</p>")}); err != nil {
					t.Fatal(err)
				}
			}
			before, err := st.Discover(ctx)
			if err != nil {
				t.Fatal(err)
			}
			oldRec, _ := shelf.ReadFile(ctx, "notes.meta.json")
			shelf.FailWrites(func(name string, _ int64) error {
				if name == tc.failOn {
					return boom
				}
				return nil
			})
			if _, err := st.Save(ctx, miniappstore.SaveOptions{Title: "Notes", HTML: []byte("<p>new</p>")}); !errors.Is(err, boom) {
				t.Fatalf("Save = %v, want the write error", err)
			}
			shelf.FailWrites(nil)
			after, err := st.Discover(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(before) {
				t.Fatalf("entries %v, before %v", after, before)
			}
			if !tc.first {
				if b, _ := shelf.ReadFile(ctx, "notes.html"); string(b) != "<p>old</p>" {
					t.Fatalf("copy = %q, want the old one", b)
				}
			}
			if b, _ := shelf.ReadFile(ctx, "notes.meta.json"); string(b) != string(oldRec) {
				t.Fatalf("record = %q, want the previous %q", b, oldRec)
			}
			// A retry of the same save succeeds: a half-written first save does not hold the name.
			if _, err := st.Save(ctx, miniappstore.SaveOptions{Title: "Notes", HTML: []byte("<p>new</p>")}); err != nil {
				t.Fatalf("retry: %v", err)
			}
		})
	}
}

// TestHammer runs saves, deletes and discoveries from many goroutines over one store and
// checks afterwards that the workspace file nobody asked about is untouched and that every
// record on the shelf has its copy.
func TestHammer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws, shelf := fsroot.NewMemory(), fsroot.NewMemory()
	const bystander = "<title>Notes</title><p>keep me</p>"
	if err := ws.WriteFile(ctx, "notes.html", []byte(bystander)); err != nil {
		t.Fatal(err)
	}
	st, err := miniappstore.New(miniappstore.Config{Workspace: ws, Shelf: shelf})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				title := []string{"Notes", "Timer", "Clock"}[(g+i)%3]
				switch i % 3 {
				case 0:
					st.Save(ctx, miniappstore.SaveOptions{Title: title, HTML: []byte("<p>x</p>")})
				case 1:
					st.Delete(ctx, "app_"+miniappstore.Slug(title))
				default:
					if _, err := st.Discover(ctx); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if b, err := ws.ReadFile(ctx, "notes.html"); err != nil || string(b) != bystander {
		t.Fatalf("workspace page = %q, %v", b, err)
	}
	list, err := shelf.ReadDir(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range list {
		names[e.Name] = true
	}
	for n := range names {
		if stem, ok := strings.CutSuffix(n, ".meta.json"); ok && !names[stem+".html"] {
			t.Errorf("record %s without its copy", n)
		}
	}
}
