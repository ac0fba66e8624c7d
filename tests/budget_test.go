package tests

import (
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestTheMessageBudgetWindowSlides: an app's message budget (public/message-budget.js) counts
// the messages within the last second, whenever that second began. A window that began at the
// app's first message and ended a second later let a burst across its end through: 100 at its
// end and 450 at the next one's start, 550 within 60 ms (fails before: ” for the first run), and
// so a flood of 600 at once escaped when it came near a second's end. Bursts a second apart stay
// within it; an owed answer is free; a message after the one over is over too, and the count a
// stopped app's card shows is one over the budget.
func TestTheMessageBudgetWindowSlides(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	tab.Navigate(relay.URL)
	type outcome struct {
		Why   string `json:"why"`
		At    int    `json:"at"`
		Count int    `json:"count"`
	}
	got := harness.Eval[[]outcome](tab, `(async () => {
		const { MessageBudget } = await import('/message-budget.js');
		// bursts: [arrival of the first in ms, how many, owed], each 1/1024 ms after the last (exact in binary).
		const run = (bursts) => {
			const b = new MessageBudget();
			let n = 0;
			for (const [at, count, owed] of bursts) {
				for (let i = 0; i < count; i++) {
					n++;
					const why = b.charge('x', owed === true, at + i / 1024);
					if (why) return { why: why + (b.charge('x', false, at + i / 1024) === why ? '' : ' (the next passed)'), at: n, count: b.count };
				}
			}
			return { why: '', at: n, count: b.count };
		};
		return [
			run([[0, 1], [950, 100], [1010, 450]]),
			run([[0, 500], [1000, 500], [2000, 500]]),
			run([[0, 400], [990, 101]]),
			run([[0, 500], [10, 5000, true]]),
			run([[0, 501]]),
		];
	})()`)
	want := []struct {
		over bool
		at   int
	}{{true, 502}, {false, 1500}, {true, 501}, {false, 5500}, {true, 501}}
	for i, w := range want {
		g := got[i]
		switch {
		case w.over && (g.Why != "it sent more than 500 messages within 1000 ms" || g.At != w.at || g.Count != 501):
			t.Errorf("run %d: %+v, want over at message %d with 501 counted", i, g, w.at)
		case !w.over && g.Why != "":
			t.Errorf("run %d: %+v, want within the budget", i, g)
		}
	}
}
