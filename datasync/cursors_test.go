package datasync

import (
	"fmt"
	"testing"
)

// A run's cursor history catches every cycle: one within its memory at
// its first repeat, a longer one through its power-of-two marks within
// 2μ+λ pages (μ pages before the cycle, λ in it). A source whose cursors
// never repeat is never taken for a cycle, however long, and the history
// stays bounded.
func TestCursorHistoryCatchesCycles(t *testing.T) {
	const memory = 8
	// pages returns the page at which a source of mu pages before a cycle
	// of lambda pages is caught (0: never, within limit pages).
	caught := func(mu, lambda, limit int) int {
		cursor := func(page int) string { // the cursor page (from 1) is read at
			if page <= mu {
				return fmt.Sprintf("pre-%d", page)
			}
			return fmt.Sprintf("cyc-%d", (page-mu-1)%lambda)
		}
		var h CursorHistory
		for page := 1; page <= limit; page++ {
			h.add(cursor(page), int64(page), memory)
			if h.Seen(cursor(page + 1)) {
				return page
			}
			if len(h.Recent) > memory || len(h.Marks) > 64 {
				t.Fatalf("history of %d recent and %d marks, want at most %d and 64", len(h.Recent), len(h.Marks), memory)
			}
		}
		return 0
	}
	for _, c := range []struct{ mu, lambda int }{{0, 1}, {0, 2}, {1, 2}, {3, 8}, {0, 9}, {5, 100}, {1000, 3}, {1000, 777}, {37, 4096}} {
		got := caught(c.mu, c.lambda, 10*(c.mu+c.lambda)+10)
		switch {
		case got == 0:
			t.Errorf("a cycle of %d pages after %d was never caught", c.lambda, c.mu)
		case c.lambda <= memory && got != c.mu+c.lambda:
			t.Errorf("a cycle of %d pages after %d caught at page %d, want its first repeat (page %d)", c.lambda, c.mu, got, c.mu+c.lambda)
		case got > 2*max(c.mu, 1)+c.lambda:
			t.Errorf("a cycle of %d pages after %d caught at page %d, later than 2μ+λ", c.lambda, c.mu, got)
		}
	}
	var h CursorHistory
	for page := 1; page <= 100000; page++ {
		h.add(fmt.Sprintf("c-%d", page), int64(page), memory)
		if h.Seen(fmt.Sprintf("c-%d", page+1)) {
			t.Fatalf("page %d: a new cursor taken for one seen", page)
		}
	}
	if len(h.Recent) != memory || len(h.Marks) != 17 {
		t.Errorf("after 100,000 pages: %d recent, %d marks; want %d and 17", len(h.Recent), len(h.Marks), memory)
	}
}
