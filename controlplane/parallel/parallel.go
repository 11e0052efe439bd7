// Package parallel runs a control node's independent calls a bounded
// number at a time.
package parallel

import (
	"errors"
	"sync"
)

// Each runs fn for every item, at most n at a time, and returns their
// errors joined.
func Each[T any](items []T, n int, fn func(T) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	slots := make(chan struct{}, max(n, 1))
	for _, it := range items {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if err := fn(it); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
