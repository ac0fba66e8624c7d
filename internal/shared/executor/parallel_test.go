package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// parallelRoots are the roots TestParallelWritesKeepTheHistoryInOrder runs on: a memory root
// here, and a directory of this machine where there is one (parallel_notjs_test.go).
var parallelRoots = map[string]func(t *testing.T) fsroot.Root{
	"memory": func(*testing.T) fsroot.Root { return fsroot.NewMemory() },
}

// hangGuard bounds every wait of these tests; nothing asserts how long anything takes.
const hangGuard = 20 * time.Second

// heldRoot is a root whose first write of held stops until release is closed, after saying so
// on entered: a write caught mid-way (a slow disk, a large file).
type heldRoot struct {
	fsroot.Root
	held    string
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func newHeldRoot(root fsroot.Root, held string) *heldRoot {
	return &heldRoot{Root: root, held: held, entered: make(chan struct{}), release: make(chan struct{})}
}

func (r *heldRoot) WriteFile(ctx context.Context, name string, data []byte) error {
	if name == r.held {
		hold := false
		r.once.Do(func() { hold = true })
		if hold {
			close(r.entered)
			<-r.release
		}
	}
	return r.Root.WriteFile(ctx, name, data)
}

// execute runs a call and sends its answer (or error) on a channel, for a call run aside.
func execute(e *executor.Executor, tool, args string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := e.Execute(context.Background(), call(tool, args))
		done <- err
	}()
	return done
}

func await(t *testing.T, what string, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(hangGuard):
		t.Fatalf("%s never answered", what)
	}
}

// TestAWriteWaitsOnlyForItsOwnFile holds the history's lock to what it covers: while one write
// is caught mid-way (its file's content being written), a write of another file answers and the
// history can be listed; a second write of the caught file waits for the first and is recorded
// after it, so undo takes both back in order without a conflict. Before, every change of a
// root held the history's one lock through its writes and syncs, so 200 clients' writes of
// different files queued behind each other (issue 33, item 9: a p99 of 7.7 s).
func TestAWriteWaitsOnlyForItsOwnFile(t *testing.T) {
	t.Parallel()
	mem := fsroot.NewMemory()
	write(t, mem, "slow.txt", "original")
	meta, err := mem.Meta(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	root := newHeldRoot(mem, "slow.txt")
	e := executor.New(root, executor.Options{History: executor.NewHistory(meta, executor.HistoryOptions{})})

	first := execute(e, "write-file", `{"path":"slow.txt","content":"first"}`)
	select {
	case <-root.entered:
	case <-time.After(hangGuard):
		t.Fatal("the first write never reached the root")
	}
	await(t, "a write of another file while slow.txt's write is caught", execute(e, "write-file", `{"path":"other.txt","content":"other"}`))
	await(t, "list-history while slow.txt's write is caught", execute(e, "list-history", `{}`))
	second := execute(e, "write-file", `{"path":"slow.txt","content":"second"}`)
	close(root.release)
	await(t, "the caught write", first)
	await(t, "the second write of slow.txt", second)

	if b, _ := mem.ReadFile(t.Context(), "slow.txt"); string(b) != "second" {
		t.Fatalf("slow.txt holds %q after both writes; want second", b)
	}
	// Newest first by number: other.txt took its number while slow.txt's first write was caught,
	// so undo takes slow.txt's second write, then other.txt's, then slow.txt's first.
	for _, want := range []struct{ path, content string }{{"slow.txt", "first"}, {"other.txt", ""}, {"slow.txt", "original"}} {
		mustRun(t, e, "undo-last", `{}`)
		b, err := mem.ReadFile(t.Context(), want.path)
		if want.content == "" {
			if err == nil {
				t.Fatalf("after undo %s still holds %q; want it gone", want.path, b)
			}
			continue
		}
		if string(b) != want.content {
			t.Fatalf("after undo %s holds %q (%v); want %q", want.path, b, err, want.content)
		}
	}
}

// TestParallelWritesKeepTheHistoryInOrder writes from many goroutines at once, each to its own
// file and to files they share, then holds the history to what one-at-a-time writes would
// leave: every write listed once, numbered in order without repeats; the same list after the
// history is read again from its files; every change undone without a conflict (each file's
// changes are recorded in the order they happened, each earlier version the one the change
// before left) down to no files at all; and every change redone, back to the same contents.
func TestParallelWritesKeepTheHistoryInOrder(t *testing.T) {
	t.Parallel()
	for name, newRoot := range parallelRoots {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const writers, each, sharedFiles = 12, 16, 3
			root := newRoot(t)
			opts := executor.HistoryOptions{MaxEntries: writers * each}
			h, err := executor.OpenHistory(t.Context(), root, opts)
			if err != nil {
				t.Fatal(err)
			}
			e := executor.New(root, executor.Options{History: h})
			errs := make(chan error, writers*each)
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for n := range each {
						file := fmt.Sprintf("w%02d.txt", w)
						if n%2 == 1 {
							file = fmt.Sprintf("shared/s%d.txt", (w+n)%sharedFiles)
						}
						args, _ := json.Marshal(map[string]string{"path": file, "content": fmt.Sprintf("writer %d write %d", w, n)})
						_, err := e.Execute(context.Background(), call("write-file", string(args)))
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatalf("a parallel write: %v", err)
				}
			}
			contents := map[string]string{}
			entries := historyOf(t, e)
			if len(entries) != writers*each {
				t.Fatalf("the history lists %d changes after %d writes", len(entries), writers*each)
			}
			for i, en := range entries {
				if i > 0 && en.Seq >= entries[i-1].Seq {
					t.Fatalf("the history lists %d after %d: not newest first, or a number twice", en.Seq, entries[i-1].Seq)
				}
				if _, ok := contents[en.Path]; !ok {
					b, err := root.ReadFile(t.Context(), en.Path)
					if err != nil {
						t.Fatal(err)
					}
					contents[en.Path] = string(b)
				}
			}
			if len(contents) != writers+sharedFiles {
				t.Fatalf("the history names %d files; want %d", len(contents), writers+sharedFiles)
			}

			reopened, err := executor.OpenHistory(t.Context(), root, opts)
			if err != nil {
				t.Fatal(err)
			}
			again := historyOf(t, executor.New(root, executor.Options{History: reopened}))
			if fmt.Sprint(again) != fmt.Sprint(entries) {
				t.Fatalf("the history read again from its files differs:\n%v\nwant\n%v", again, entries)
			}

			for range entries {
				mustRun(t, e, "undo-last", `{}`)
			}
			for file := range contents {
				if b, err := root.ReadFile(t.Context(), file); err == nil {
					t.Fatalf("after every change was undone %s holds %q; want it gone", file, b)
				}
			}
			for range entries {
				mustRun(t, e, "redo-last", `{}`)
			}
			for file, want := range contents {
				if b, err := root.ReadFile(t.Context(), file); err != nil || string(b) != want {
					t.Fatalf("after every change was redone %s holds %q (%v); want %q", file, b, err, want)
				}
			}
		})
	}
}

// historyOf lists e's history, newest first.
func historyOf(t *testing.T, e *executor.Executor) []executor.HistoryEntry {
	t.Helper()
	out, err := e.Execute(context.Background(), call("list-history", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	var obs struct {
		Entries []executor.HistoryEntry `json:"entries"`
	}
	if err := json.Unmarshal(out, &obs); err != nil {
		t.Fatal(err)
	}
	return obs.Entries
}
