// Package miniappstoretest is the mini-app store's suite, runnable over any fsroot.Root:
// classification, lookup, deletion and saving, each collision spelled out, and a seeded
// property test that no operation changes a file the entry it was asked about does not own.
//
// # Wasm
//
// Nothing differs: the suite is portable Go, and opfs runs it against OPFS roots in Chromium.
package miniappstoretest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/miniappstore"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// NewRoot returns a fresh, empty root for one test.
type NewRoot func(t *testing.T) fsroot.Root

// Run runs the whole suite, making every workspace, shelf and sandbox root with newRoot.
func Run(t *testing.T, newRoot NewRoot) {
	t.Run("Classification", func(t *testing.T) { testClassification(t, newRoot) })
	t.Run("Resolve", func(t *testing.T) { testResolve(t, newRoot) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, newRoot) })
	t.Run("Save", func(t *testing.T) { testSave(t, newRoot) })
	t.Run("Property", func(t *testing.T) { testProperty(t, newRoot) })
}

// Env is a store over a fresh workspace, shelf and one sandbox named "sb".
type Env struct {
	WS, Shelf, SB fsroot.Root
	Store         *miniappstore.Store
}

// NewEnv makes an Env with newRoot.
func NewEnv(t *testing.T, newRoot NewRoot) *Env {
	t.Helper()
	e := &Env{WS: newRoot(t), Shelf: newRoot(t), SB: newRoot(t)}
	st, err := miniappstore.New(miniappstore.Config{
		Workspace: e.WS,
		Shelf:     e.Shelf,
		Sandboxes: []miniappstore.Sandbox{{Name: "sb", Root: e.SB}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.Store = st
	return e
}

// Put writes content to name in r, making its folders.
func Put(t *testing.T, r fsroot.Root, name, content string) {
	t.Helper()
	ctx := context.Background()
	if dir := path.Dir(name); dir != "." {
		if err := r.MkdirAll(ctx, dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.WriteFile(ctx, name, []byte(content)); err != nil {
		t.Fatal(err)
	}
}

// PutRecord writes a shelf record for stem.
func PutRecord(t *testing.T, shelf fsroot.Root, stem string, rec miniappstore.Record) {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	Put(t, shelf, stem+".meta.json", string(b))
}

// Page is an HTML document titled title.
func Page(title, body string) string {
	return "<!doctype html><html><head><title>" + title + "</title></head><body>" + body + "</body></html>"
}

// Snapshot is every file of the env, keyed "ws:path", "shelf:path" or "sb:path".
func (e *Env) Snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for prefix, r := range map[string]fsroot.Root{"ws": e.WS, "shelf": e.Shelf, "sb": e.SB} {
		snapDir(t, r, prefix, "", out)
	}
	return out
}

func snapDir(t *testing.T, r fsroot.Root, prefix, dir string, out map[string]string) {
	ctx := context.Background()
	list, err := r.ReadDir(ctx, dir)
	if err != nil {
		t.Fatalf("snapshot %s:%s: %v", prefix, dir, err)
	}
	for _, ent := range list {
		p := path.Join(dir, ent.Name)
		if ent.Dir {
			snapDir(t, r, prefix, p, out)
			continue
		}
		b, err := r.ReadFile(ctx, p)
		if err != nil {
			t.Fatalf("snapshot %s:%s: %v", prefix, p, err)
		}
		out[prefix+":"+p] = string(b)
	}
}

// changed lists the keys whose content differs between before and after, or that exist in
// only one of them, sorted.
func changed(before, after map[string]string) []string {
	var out []string
	for k, v := range before {
		if w, ok := after[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// wantRule fails unless err is a refusal of rule (or nil when rule is "").
func wantRule(t *testing.T, what string, err error, rule refusal.Rule) {
	t.Helper()
	if got := refusal.RuleOf(err); got != rule || (rule == "" && err != nil) {
		t.Fatalf("%s: err = %v, want rule %q", what, err, rule)
	}
}

type brief struct {
	ID, Kind, Source, Path, Title string
}

func briefs(es []miniappstore.Entry) []brief {
	out := make([]brief, len(es))
	for i, e := range es {
		out[i] = brief{e.AppID, string(e.Kind), e.Source, e.StoragePath, e.Title}
	}
	return out
}

// The collision fixture: a workspace page and a shelf app sharing the slug and file name
// "collision.html", the app with a legacy record (no workspacePath) and the same bytes.
const (
	collisionPage = "<html><head><title>Collision</title></head><body>same bytes</body></html>"
)

func collision(t *testing.T, e *Env, legacy bool) {
	Put(t, e.WS, "collision.html", collisionPage)
	Put(t, e.Shelf, "collision.html", collisionPage)
	rec := miniappstore.Record{AppID: "app_collision", Slug: "collision", Title: "Shelf Collision"}
	if !legacy {
		rec.WorkspacePath = "elsewhere/collision.html"
	}
	PutRecord(t, e.Shelf, "collision", rec)
}

func testClassification(t *testing.T, newRoot NewRoot) {
	tests := []struct {
		name  string
		setup func(t *testing.T, e *Env)
		want  []brief
	}{
		{"empty", func(t *testing.T, e *Env) {}, []brief{}},
		{"shelf file is an app, titled from its <title>", func(t *testing.T, e *Env) {
			Put(t, e.Shelf, "timer.html", Page("Kitchen Timer", ""))
		}, []brief{{"app_timer", "app", "shelf", "timer.html", "Kitchen Timer"}}},
		{"title falls back to the file name", func(t *testing.T, e *Env) {
			Put(t, e.WS, "flappy_bird.html", "<canvas></canvas>")
		}, []brief{{"page_flappy-bird", "page", "workspace", "flappy_bird.html", "Flappy Bird"}}},
		{"workspace depth at most 1, non-html ignored", func(t *testing.T, e *Env) {
			Put(t, e.WS, "a.html", Page("A", ""))
			Put(t, e.WS, "d/b.html", Page("B", ""))
			Put(t, e.WS, "d/e/c.html", Page("C", ""))
			Put(t, e.WS, "notes.txt", "<title>no</title>")
		}, []brief{{"page_a", "page", "workspace", "a.html", "A"}, {"page_b", "page", "workspace", "d/b.html", "B"}}},
		{"sandbox is pages, depth at most 2", func(t *testing.T, e *Env) {
			Put(t, e.SB, "x/y/deep.html", Page("Deep", ""))
			Put(t, e.SB, "x/y/z/deeper.html", Page("Deeper", ""))
		}, []brief{{"page_deep", "page", "sandbox", "x/y/deep.html", "Deep"}}},
		{"record with workspacePath proves the workspace file", func(t *testing.T, e *Env) {
			Put(t, e.WS, "apps/pomodoro_timer.html", Page("Pomo", ""))
			Put(t, e.Shelf, "pomodoro_timer.html", Page("Pomo", ""))
			PutRecord(t, e.Shelf, "pomodoro_timer", miniappstore.Record{AppID: "app_pomodoro_timer", Slug: "pomodoro_timer", Title: "Pomodoro Timer", WorkspacePath: "apps/pomodoro_timer.html"})
		}, []brief{{"app_pomodoro_timer", "app", "workspace", "apps/pomodoro_timer.html", "Pomodoro Timer"}}},
		{"record naming another path proves nothing", func(t *testing.T, e *Env) {
			collision(t, e, false)
		}, []brief{{"app_collision", "app", "shelf", "collision.html", "Shelf Collision"}, {"page_collision", "page", "workspace", "collision.html", "Collision"}}},
		{"legacy record beside identical workspace file proves nothing", func(t *testing.T, e *Env) {
			collision(t, e, true)
		}, []brief{{"app_collision", "app", "shelf", "collision.html", "Shelf Collision"}, {"page_collision", "page", "workspace", "collision.html", "Collision"}}},
		{"record without its shelf copy proves nothing", func(t *testing.T, e *Env) {
			Put(t, e.WS, "orphan.html", Page("Orphan", ""))
			PutRecord(t, e.Shelf, "orphan", miniappstore.Record{AppID: "app_orphan", Slug: "orphan", Title: "Orphan App", WorkspacePath: "orphan.html"})
		}, []brief{{"page_orphan", "page", "workspace", "orphan.html", "Orphan"}}},
		{"a record's appId that is not an app id is not used", func(t *testing.T, e *Env) {
			Put(t, e.Shelf, "odd.html", Page("Odd", ""))
			PutRecord(t, e.Shelf, "odd", miniappstore.Record{AppID: "page_odd", Slug: "odd", Title: "Odd"})
			Put(t, e.WS, "odd.html", Page("Odd", ""))
		}, []brief{{"app_odd", "app", "shelf", "odd.html", "Odd"}, {"page_odd", "page", "workspace", "odd.html", "Odd"}}},
		{"same-slug pages get distinct ids", func(t *testing.T, e *Env) {
			Put(t, e.WS, "clock.html", Page("Clock", ""))
			Put(t, e.SB, "clock.html", Page("Clock", ""))
		}, []brief{{"page_clock", "page", "workspace", "clock.html", "Clock"}, {"page_clock_2", "page", "sandbox", "clock.html", "Clock"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEnv(t, newRoot)
			tc.setup(t, e)
			got, err := e.Store.Discover(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if g, w := fmt.Sprint(briefs(got)), fmt.Sprint(tc.want); g != w {
				t.Fatalf("Discover:\n got %s\nwant %s", g, w)
			}
			for _, en := range got {
				if en.Size <= 0 || en.FileName != path.Base(en.StoragePath) {
					t.Errorf("%s: size %d, fileName %q, storagePath %q", en.AppID, en.Size, en.FileName, en.StoragePath)
				}
			}
		})
	}
}

func testResolve(t *testing.T, newRoot NewRoot) {
	e := NewEnv(t, newRoot)
	// Shared slug and file name: workspace collision.html (a page) and the shelf app.
	collision(t, e, true)
	// Shared title only: a page and an app both titled "Metronome".
	Put(t, e.WS, "tick.html", Page("Metronome", ""))
	Put(t, e.Shelf, "tock.html", Page("Metronome", ""))
	// Normalisation.
	Put(t, e.WS, "pomodoro_timer.html", "<p>pomodoro</p>")
	// Page-only name in a sandbox.
	Put(t, e.SB, "games/snake.html", Page("Snake Game", ""))

	tests := []struct {
		name, query, want string
		rule              refusal.Rule
	}{
		{"id of the app", "app_collision", "app_collision", ""},
		{"id of the page", "page_collision", "page_collision", ""},
		{"shared file name means the app", "collision.html", "app_collision", ""},
		{"shared slug means the app", "Collision", "app_collision", ""},
		{"app title", "Shelf Collision", "app_collision", ""},
		{"shared title means the app", "Metronome", "app_tock", ""},
		{"page by its file name", "tick.html", "page_tick", ""},
		{"slug from a title", "Pomodoro Timer", "page_pomodoro-timer", ""},
		{"slug from an app id", "app_pomodoro_timer", "page_pomodoro-timer", ""},
		{"sandbox page by storage path", "games/snake.html", "page_snake", ""},
		{"sandbox page by title", "snake game", "page_snake", ""},
		{"unknown", "nothing here", "", refusal.MiniAppNotFound},
		{"blank", "  ", "", refusal.MiniAppNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.Store.Resolve(context.Background(), tc.query)
			wantRule(t, "Resolve("+tc.query+")", err, tc.rule)
			if got.AppID != tc.want {
				t.Fatalf("Resolve(%q) = %q, want %q", tc.query, got.AppID, tc.want)
			}
		})
	}
	// The page's own title differs from the app's here, so only the page answers to it.
	Put(t, e.WS, "collision.html", Page("Only The Page", ""))
	got, err := e.Store.Resolve(context.Background(), "only the page")
	if err != nil || got.AppID != "page_collision" {
		t.Fatalf("Resolve(page's own title) = %q, %v; want page_collision", got.AppID, err)
	}
}

func testDelete(t *testing.T, newRoot NewRoot) {
	proven := func(t *testing.T, e *Env) {
		Put(t, e.WS, "d/pomo.html", Page("Pomo", "ws"))
		Put(t, e.Shelf, "pomo.html", Page("Pomo", "shelf"))
		PutRecord(t, e.Shelf, "pomo", miniappstore.Record{AppID: "app_pomo", Slug: "pomo", Title: "Pomo", WorkspacePath: "d/pomo.html"})
	}
	titles := func(t *testing.T, e *Env) {
		Put(t, e.WS, "tick.html", Page("Metronome", "page"))
		Put(t, e.Shelf, "tock.html", Page("Metronome", "app"))
	}
	tests := []struct {
		name    string
		setup   func(t *testing.T, e *Env)
		query   string
		rule    refusal.Rule
		removed []string
	}{
		{"page in a legacy collision leaves the shelf app", func(t *testing.T, e *Env) { collision(t, e, true) }, "page_collision", "", []string{"ws:collision.html"}},
		{"app in a legacy collision leaves the page", func(t *testing.T, e *Env) { collision(t, e, true) }, "app_collision", "", []string{"shelf:collision.html", "shelf:collision.meta.json"}},
		{"shared file name deletes the app only", func(t *testing.T, e *Env) { collision(t, e, false) }, "collision.html", "", []string{"shelf:collision.html", "shelf:collision.meta.json"}},
		{"page in a path collision leaves the shelf app", func(t *testing.T, e *Env) { collision(t, e, false) }, "page_collision", "", []string{"ws:collision.html"}},
		{"shared title deletes the app only", titles, "Metronome", "", []string{"shelf:tock.html"}},
		{"page by title-sharing file name", titles, "tick.html", "", []string{"ws:tick.html"}},
		{"proven workspace app removes its file and shelf artifacts", proven, "app_pomo", "", []string{"shelf:pomo.html", "shelf:pomo.meta.json", "ws:d/pomo.html"}},
		{"shelf copy whose record belongs to another id keeps the record", func(t *testing.T, e *Env) {
			Put(t, e.Shelf, "dup.html", Page("Dup", ""))
			Put(t, e.Shelf, "dup2.html", Page("Dup", ""))
			PutRecord(t, e.Shelf, "dup2", miniappstore.Record{AppID: "app_dup", Slug: "dup"})
			PutRecord(t, e.Shelf, "dup", miniappstore.Record{AppID: "app_dup", Slug: "dup"})
		}, "app_dup_2", "", []string{"shelf:dup2.html"}},
		{"id of a gone app never falls through to the same-slug page", func(t *testing.T, e *Env) { Put(t, e.WS, "timer.html", Page("Timer", "")) },
			"app_timer", refusal.MiniAppNotFound, nil},
		{"id of a gone page never falls through to the same-slug app", func(t *testing.T, e *Env) { Put(t, e.Shelf, "timer.html", Page("Timer", "")) },
			"page_timer", refusal.MiniAppNotFound, nil},
		{"a record with an odd appId still goes with its app", func(t *testing.T, e *Env) {
			Put(t, e.Shelf, "odd.html", Page("Odd", ""))
			PutRecord(t, e.Shelf, "odd", miniappstore.Record{AppID: "page_odd", Slug: "odd"})
			Put(t, e.WS, "odd.html", Page("Odd", ""))
		}, "app_odd", "", []string{"shelf:odd.html", "shelf:odd.meta.json"}},
		{"unknown id", func(t *testing.T, e *Env) { collision(t, e, true) }, "app_nothing", refusal.MiniAppNotFound, nil},
		{"sandbox pages are read-only", func(t *testing.T, e *Env) { Put(t, e.SB, "s.html", Page("S", "")) }, "page_s", refusal.MiniAppReadOnly, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEnv(t, newRoot)
			tc.setup(t, e)
			before := e.Snapshot(t)
			_, err := e.Store.Delete(context.Background(), tc.query)
			wantRule(t, "Delete("+tc.query+")", err, tc.rule)
			after := e.Snapshot(t)
			if g, w := fmt.Sprint(changed(before, after)), fmt.Sprint(tc.removed); g != w && !(len(tc.removed) == 0 && g == "[]") {
				t.Fatalf("Delete(%q) changed %s, want %s", tc.query, g, w)
			}
			for _, k := range tc.removed {
				if _, ok := after[k]; ok {
					t.Errorf("%s was changed, not removed", k)
				}
			}
		})
	}
}

func testSave(t *testing.T, newRoot NewRoot) {
	ctx := context.Background()
	type op func(e *Env) (miniappstore.Entry, error)
	save := func(title, html, ws string) op {
		return func(e *Env) (miniappstore.Entry, error) {
			return e.Store.Save(ctx, miniappstore.SaveOptions{Title: title, HTML: []byte(html), WorkspacePath: ws})
		}
	}
	savePage := func(name, title string) op {
		return func(e *Env) (miniappstore.Entry, error) { return e.Store.SavePage(ctx, name, title) }
	}
	tests := []struct {
		name    string
		setup   func(t *testing.T, e *Env)
		op      op
		rule    refusal.Rule
		why     string // a substring the refusal names
		changed []string
		wantID  string
		after   []brief // the discovery after, when set
	}{
		{"new app by title", func(t *testing.T, e *Env) {}, save("Pomodoro Timer", "<p>v1</p>", ""), "", "",
			[]string{"shelf:pomodoro-timer.html", "shelf:pomodoro-timer.meta.json"}, "app_pomodoro-timer",
			[]brief{{"app_pomodoro-timer", "app", "shelf", "pomodoro-timer.html", "Pomodoro Timer"}}},
		{"same title updates in place", func(t *testing.T, e *Env) {
			if _, err := e.Store.Save(ctx, miniappstore.SaveOptions{Title: "Pomodoro Timer", HTML: []byte("<p>v1</p>")}); err != nil {
				t.Fatal(err)
			}
		}, save("pomodoro timer", "<p>v2</p>", ""), "", "",
			[]string{"shelf:pomodoro-timer.html", "shelf:pomodoro-timer.meta.json"}, "app_pomodoro-timer", nil},
		{"whitespace-only html", func(t *testing.T, e *Env) {}, save("Blank", " \n\t ", ""), refusal.MissingHTML, "", nil, "", nil},
		{"empty html", func(t *testing.T, e *Env) {}, save("Blank", "", ""), refusal.MissingHTML, "", nil, "", nil},
		{"title without letters", func(t *testing.T, e *Env) {}, save("!!!", "<p>x</p>", ""), refusal.InvalidMiniAppName, "", nil, "", nil},
		{"title from <title>", func(t *testing.T, e *Env) {}, save("", Page("Dice Roller", ""), ""), "", "",
			[]string{"shelf:dice-roller.html", "shelf:dice-roller.meta.json"}, "app_dice-roller", nil},
		{"promote a free workspace page", func(t *testing.T, e *Env) {
			Put(t, e.WS, "apps/flappy_bird.html", Page("Flappy", ""))
		}, savePage("apps/flappy_bird.html", ""), "", "",
			[]string{"shelf:flappy-bird.html", "shelf:flappy-bird.meta.json"}, "app_flappy-bird",
			[]brief{{"app_flappy-bird", "app", "workspace", "apps/flappy_bird.html", "Flappy"}}},
		{"promote a page found by its id", func(t *testing.T, e *Env) {
			Put(t, e.WS, "apps/flappy_bird.html", Page("Flappy", ""))
		}, savePage("page_flappy_bird", ""), "", "",
			[]string{"shelf:flappy-bird.html", "shelf:flappy-bird.meta.json"}, "app_flappy-bird", nil},
		{"re-saving a proven app updates it", func(t *testing.T, e *Env) {
			Put(t, e.WS, "pomo.html", Page("Pomo", "new"))
			Put(t, e.Shelf, "pomo.html", Page("Pomo", "old"))
			PutRecord(t, e.Shelf, "pomo", miniappstore.Record{AppID: "app_pomo", Slug: "pomo", Title: "Pomo", WorkspacePath: "pomo.html"})
		}, savePage("pomo.html", ""), "", "", []string{"shelf:pomo.html", "shelf:pomo.meta.json"}, "app_pomo", nil},
		{"re-saving a proven app under a new title keeps its shelf name", func(t *testing.T, e *Env) {
			Put(t, e.WS, "pomo.html", Page("Pomo", "new"))
			Put(t, e.Shelf, "pomo.html", Page("Pomo", "old"))
			PutRecord(t, e.Shelf, "pomo", miniappstore.Record{AppID: "app_pomo", Slug: "pomo", Title: "Pomo", WorkspacePath: "pomo.html"})
		}, savePage("pomo.html", "Focus Clock"), "", "", []string{"shelf:pomo.html", "shelf:pomo.meta.json"}, "app_pomo",
			[]brief{{"app_pomo", "app", "workspace", "pomo.html", "Focus Clock"}}},
		{"workspace page under a legacy record's name", func(t *testing.T, e *Env) { collision(t, e, true) },
			savePage("collision.html", ""), refusal.MiniAppNameTaken, "Shelf Collision", nil, "", nil},
		{"workspace page under another path's name", func(t *testing.T, e *Env) { collision(t, e, false) },
			savePage("collision.html", ""), refusal.MiniAppNameTaken, "app_collision", nil, "", nil},
		{"html save over a workspace app's name", func(t *testing.T, e *Env) { collision(t, e, false) },
			save("Collision", "<p>mine</p>", ""), refusal.MiniAppNameTaken, "Shelf Collision", nil, "", nil},
		{"saving a page never targets a shelf copy", func(t *testing.T, e *Env) { Put(t, e.Shelf, "clock.html", Page("Wall Clock", "")) },
			savePage("clock.html", "Clock"), refusal.MiniAppNotFound, "", nil, "", nil},
		{"workspace save over a bare shelf copy", func(t *testing.T, e *Env) {
			Put(t, e.Shelf, "clock.html", Page("Wall Clock", ""))
			Put(t, e.WS, "clock.html", Page("Clock", ""))
		}, savePage("clock.html", ""), refusal.MiniAppNameTaken, "Wall Clock", nil, "", nil},
		{"unreadable record holds its name", func(t *testing.T, e *Env) { Put(t, e.Shelf, "clock.meta.json", "{not json") },
			save("Clock", "<p>x</p>", ""), refusal.MiniAppNameTaken, "", nil, "", nil},
		{"sandbox page saved to the shelf", func(t *testing.T, e *Env) { Put(t, e.SB, "g/snake.html", Page("Snake", "")) },
			savePage("page_snake", ""), "", "", []string{"shelf:snake.html", "shelf:snake.meta.json"}, "app_snake",
			[]brief{{"app_snake", "app", "shelf", "snake.html", "Snake"}, {"page_snake", "page", "sandbox", "g/snake.html", "Snake"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEnv(t, newRoot)
			tc.setup(t, e)
			before := e.Snapshot(t)
			got, err := tc.op(e)
			wantRule(t, "save", err, tc.rule)
			if tc.why != "" && !strings.Contains(err.Error(), tc.why) {
				t.Errorf("refusal %q does not name %q", err, tc.why)
			}
			after := e.Snapshot(t)
			if g, w := fmt.Sprint(changed(before, after)), fmt.Sprint(tc.changed); g != w && !(len(tc.changed) == 0 && g == "[]") {
				t.Fatalf("changed %s, want %s", g, w)
			}
			if got.AppID != tc.wantID {
				t.Errorf("saved id %q, want %q", got.AppID, tc.wantID)
			}
			if err != nil {
				return
			}
			var rec miniappstore.Record
			if err := json.Unmarshal([]byte(after["shelf:"+got.Slug+".meta.json"]), &rec); err != nil {
				t.Fatal(err)
			}
			if rec.AppID != got.AppID || rec.Slug != got.Slug || rec.Title != got.Title {
				t.Errorf("record %+v does not describe %+v", rec, got)
			}
			if got.Source == "workspace" && rec.WorkspacePath != got.StoragePath {
				t.Errorf("record workspacePath %q, want %q", rec.WorkspacePath, got.StoragePath)
			}
			if tc.after != nil {
				list, err := e.Store.Discover(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := fmt.Sprint(briefs(list)), fmt.Sprint(tc.after); g != w {
					t.Fatalf("Discover after:\n got %s\nwant %s", g, w)
				}
			}
		})
	}

	t.Run("update keeps createdAt and the id", func(t *testing.T) {
		e := NewEnv(t, newRoot)
		first, err := e.Store.Save(ctx, miniappstore.SaveOptions{Title: "Notes", HTML: []byte("<p>1</p>")})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
		second, err := e.Store.Save(ctx, miniappstore.SaveOptions{Title: "Notes", HTML: []byte("<p>2</p>")})
		if err != nil {
			t.Fatal(err)
		}
		if second.AppID != first.AppID || !second.CreatedAt.Equal(first.CreatedAt) || !second.UpdatedAt.After(first.UpdatedAt) {
			t.Fatalf("first %+v, second %+v", first, second)
		}
		if b, _ := e.Shelf.ReadFile(ctx, "notes.html"); string(b) != "<p>2</p>" {
			t.Fatalf("copy = %q", b)
		}
	})
}

// testProperty runs seeded random sequences of save, delete and discover over colliding names
// and checks, around every operation, that nothing outside what the entry asked about owns was
// changed or removed.
func testProperty(t *testing.T, newRoot NewRoot) {
	ctx := context.Background()
	const seeds, steps = 4, 60
	names := []string{"collision", "Collision", "collision.html", "app_collision", "page_collision", "d/collision.html", "timer", "Timer", "timer.html", "page_timer", "app_timer", "Metronome", "x/y/timer.html"}
	titles := []string{"Collision", "Timer", "Metronome", "collision"}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			// Each seed has roots of its own: over OPFS a step mostly awaits the browser, and the
			// seeds' waits overlap.
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			e := NewEnv(t, newRoot)
			collision(t, e, true)
			Put(t, e.WS, "d/collision.html", Page("Metronome", "d"))
			Put(t, e.WS, "timer.html", Page("Timer", "ws"))
			Put(t, e.SB, "x/y/timer.html", Page("Timer", "sb"))
			Put(t, e.Shelf, "metronome.html", Page("Timer", "shelf"))
			for step := range steps {
				before := e.Snapshot(t)
				entries, err := e.Store.Discover(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var what string
				allowed := map[string]bool{}
				switch rng.IntN(5) {
				case 0: // discover
					what = "discover"
				case 1, 2: // delete by a colliding name
					name := names[rng.IntN(len(names))]
					what = "delete " + name
					target, terr := e.Store.Resolve(ctx, name)
					got, err := e.Store.Delete(ctx, name)
					if terr != nil {
						wantRule(t, what, err, refusal.RuleOf(terr))
						break
					}
					if err != nil {
						if target.Source == "sandbox" && refusal.RuleOf(err) == refusal.MiniAppReadOnly {
							break
						}
						if refusal.RuleOf(err) == refusal.MiniAppNotFound && target.AppID != name && (strings.HasPrefix(name, "app_") || strings.HasPrefix(name, "page_")) {
							break // an id deletes that id only, never what it would resolve to
						}
						t.Fatalf("step %d %s: %v", step, what, err)
					}
					if got.AppID != target.AppID {
						t.Fatalf("step %d %s deleted %s, Resolve said %s", step, what, got.AppID, target.AppID)
					}
					for k := range owned(before, got) {
						allowed[k] = true
					}
				case 3: // save html under a colliding title
					title := titles[rng.IntN(len(titles))]
					what = "save " + title
					_, err := e.Store.Save(ctx, miniappstore.SaveOptions{Title: title, HTML: []byte(fmt.Sprintf("<p>%d</p>", step))})
					if heldByOther(before, miniappstore.Slug(title), "") {
						wantRule(t, fmt.Sprintf("step %d %s over another app's name", step, what), err, refusal.MiniAppNameTaken)
						break
					}
					if err == nil {
						slug := miniappstore.Slug(title)
						allowed["shelf:"+slug+".html"] = true
						allowed["shelf:"+slug+".meta.json"] = true
					} else if refusal.RuleOf(err) != refusal.MiniAppNameTaken {
						t.Fatalf("step %d %s: %v", step, what, err)
					}
				case 4: // promote a page, or recreate a deleted workspace file
					if rng.IntN(2) == 0 {
						p := []string{"collision.html", "timer.html", "d/collision.html"}[rng.IntN(3)]
						what = "recreate " + p
						Put(t, e.WS, p, Page(titles[rng.IntN(len(titles))], fmt.Sprint(step)))
						allowed["ws:"+p] = true
						break
					}
					name := names[rng.IntN(len(names))]
					what = "save page " + name
					target, terr := e.Store.Resolve(ctx, name)
					got, err := e.Store.SavePage(ctx, name, "")
					if terr == nil && target.Source == "workspace" && target.Kind == miniappstore.KindPage && heldByOther(before, target.Slug, target.StoragePath) {
						wantRule(t, fmt.Sprintf("step %d %s over another app's name", step, what), err, refusal.MiniAppNameTaken)
						break
					}
					if err == nil {
						allowed["shelf:"+got.Slug+".html"] = true
						allowed["shelf:"+got.Slug+".meta.json"] = true
					} else if r := refusal.RuleOf(err); r != refusal.MiniAppNameTaken && r != refusal.MiniAppNotFound {
						t.Fatalf("step %d %s: %v", step, what, err)
					}
				}
				after := e.Snapshot(t)
				for _, k := range changed(before, after) {
					if !allowed[k] {
						t.Fatalf("step %d %s changed %s, which it does not own (entries before: %v)", step, what, k, briefs(entries))
					}
				}
			}
		})
	}
}

// heldByOther reports whether the shelf name slug, in snap, belongs to an app other than the
// one saved from workspacePath: a copy or record there with another workspacePath, or a
// record that does not parse.
func heldByOther(snap map[string]string, slug, workspacePath string) bool {
	raw, hasRec := snap["shelf:"+slug+".meta.json"]
	_, hasCopy := snap["shelf:"+slug+".html"]
	if !hasRec {
		return hasCopy
	}
	var rec miniappstore.Record
	if json.Unmarshal([]byte(raw), &rec) != nil {
		return true
	}
	return rec.WorkspacePath != workspacePath
}

// owned is what deleting entry may remove, worked out from a snapshot: its own file, and for
// an app the shelf copy and record when that record carries the app's id.
func owned(snap map[string]string, entry miniappstore.Entry) map[string]bool {
	prefix := map[string]string{"workspace": "ws", "shelf": "shelf", "sandbox": "sb"}[entry.Source]
	out := map[string]bool{prefix + ":" + entry.StoragePath: true}
	if entry.Kind != miniappstore.KindApp {
		return out
	}
	for k, v := range snap {
		stem, ok := strings.CutSuffix(strings.TrimPrefix(k, "shelf:"), ".meta.json")
		if !ok || !strings.HasPrefix(k, "shelf:") {
			continue
		}
		var rec miniappstore.Record
		if json.Unmarshal([]byte(v), &rec) != nil {
			continue
		}
		id := rec.AppID
		if !strings.HasPrefix(id, "app_") || miniappstore.Slug(id) != strings.TrimPrefix(id, "app_") {
			id = "app_" + miniappstore.Slug(stem)
		}
		if id == entry.AppID && (entry.Source == "shelf" && entry.StoragePath == stem+".html" || entry.Source == "workspace" && rec.WorkspacePath == entry.StoragePath) {
			out[k] = true
			out["shelf:"+stem+".html"] = true
		}
	}
	return out
}
