package parallel

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestEachRunsConcurrentlyWithinItsBound: 12 calls that each wait
// for one another in groups of 4 finish only if 4 run at once; no more
// than 4 ever do; every failure is returned.
func TestEachRunsConcurrentlyWithinItsBound(t *testing.T) {
	var (
		mu            sync.Mutex
		running, most int
		groups        = map[int]*sync.WaitGroup{}
	)
	for g := range 3 {
		groups[g] = &sync.WaitGroup{}
		groups[g].Add(4)
	}
	items := make([]int, 12)
	for i := range items {
		items[i] = i
	}
	done := make(chan error, 1)
	go func() {
		done <- Each(items, 4, func(i int) error {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			// Sequential calls would wait here for ever.
			groups[i/4].Done()
			groups[i/4].Wait()
			mu.Lock()
			running--
			mu.Unlock()
			if i%5 == 0 {
				return fmt.Errorf("call %d failed", i)
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		var joined interface{ Unwrap() []error }
		if !errors.As(err, &joined) || len(joined.Unwrap()) != 3 {
			t.Fatalf("errors: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the calls did not run four at a time")
	}
	if most != 4 {
		t.Fatalf("at most %d ran at once, want 4", most)
	}
}
