package store

import (
	"testing"
	"time"
)

func TestNewIDAtAndIDTimeBound(t *testing.T) {
	at := time.Date(2026, 11, 22, 5, 31, 0, 59_643_000, time.UTC)
	id := NewIDAt(at)
	if !IsID(id) || id[14] != '7' {
		t.Fatalf("NewIDAt = %q, want a UUIDv7", id)
	}
	if id == NewIDAt(at) {
		t.Fatal("two ids of one moment are equal")
	}
	if bound := IDTimeBound(at); !(bound <= id) {
		t.Errorf("IDTimeBound(at) = %s is above an id of that millisecond %s", bound, id)
	}
	if bound := IDTimeBound(at.Add(time.Millisecond)); !(id < bound) {
		t.Errorf("an id of the millisecond before %s is not below its bound %s", id, bound)
	}
	if before := NewIDAt(at.Add(-time.Millisecond)); !(before < IDTimeBound(at)) {
		t.Errorf("an id of the previous millisecond %s is not below the bound", before)
	}
	if now := NewID(); !(IDTimeBound(time.Now().Add(-time.Second)) < now && now < IDTimeBound(time.Now().Add(time.Second))) {
		t.Errorf("NewID %s is not within a second of now by IDTimeBound", now)
	}
}

func TestNewIDWithTime(t *testing.T) {
	before := time.Now()
	prev := ""
	for range 1000 {
		id, at := NewIDWithTime()
		if id <= prev {
			t.Fatalf("id %s is not above the previous %s", id, prev)
		}
		prev = id
		if at.Before(before.Truncate(time.Millisecond)) || at.After(time.Now().Add(time.Millisecond)) {
			t.Fatalf("instant %v of %s is not the clock's (%v)", at, id, before)
		}
		// The id is at or above its own millisecond's bound and below the
		// next one's: a cut by id and a cut by the instant agree.
		if !(IDTimeBound(at) <= id && id < IDTimeBound(at.Truncate(time.Millisecond).Add(time.Millisecond))) {
			t.Fatalf("id %s is outside its instant %v's millisecond", id, at)
		}
	}
}
