package datasync

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// CursorHistory is what a run remembers of the cursors it read import
// pages at, so that a source whose cursors come back (a → b → a) fails
// the run instead of feeding it for ever. It keeps hashes (the first 8
// bytes of the cursor's SHA-256, in hex), not the cursors, and is
// bounded:
//
//   - Recent are the cursors of the run's last pages, at most
//     Options.CursorMemory (1000 by default, about 19 KB in the run's
//     row), oldest first;
//   - Marks are the cursors of the run's pages 1, 2, 4, 8, … (one per
//     power of two, so at most 63).
//
// A cursor still among Recent is caught the first time it comes back: any
// cycle of up to CursorMemory pages ends the run at its first repeat. A
// longer cycle is caught through Marks: the first mark taken inside the
// cycle (by page 2μ, μ being the pages read before the cycle began) comes
// back one turn of the cycle later. Either way the run ends after a
// bounded number of pages, each of which is itself bounded in time.
//
// The history is stored with the run (and so survives a resumed job); a
// retry is a new run and starts with none.
type CursorHistory struct {
	Recent []string `json:"recent,omitempty"` // see the type comment
	Marks  []string `json:"marks,omitempty"`  // see the type comment
}

// DefaultCursorMemory is Options.CursorMemory's default.
const DefaultCursorMemory = 1000

func cursorHash(cursor string) string {
	sum := sha256.Sum256([]byte(cursor))
	return hex.EncodeToString(sum[:8])
}

// Seen reports whether the run read a page at cursor (as far as the
// history remembers).
func (h *CursorHistory) Seen(cursor string) bool {
	c := cursorHash(cursor)
	return slices.Contains(h.Recent, c) || slices.Contains(h.Marks, c)
}

// add remembers cursor as the cursor of the run's page number page
// (from 1), keeping at most memory recent cursors.
func (h *CursorHistory) add(cursor string, page int64, memory int) {
	c := cursorHash(cursor)
	h.Recent = append(h.Recent, c)
	if over := len(h.Recent) - max(memory, 1); over > 0 {
		h.Recent = slices.Delete(h.Recent, 0, over)
	}
	if page > 0 && page&(page-1) == 0 && !slices.Contains(h.Marks, c) {
		h.Marks = append(h.Marks, c)
	}
}

// empty reports whether the history remembers nothing.
func (h *CursorHistory) empty() bool { return len(h.Recent) == 0 && len(h.Marks) == 0 }
