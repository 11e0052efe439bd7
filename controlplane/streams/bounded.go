package streams

import (
	"errors"
	"sync"
)

// endGBAtOnce bounds the GB28181 sessions ended at once when what they
// depend on is gone. Each end may wait on its device's BYE (up to 10 s
// when the device went silent) and on two node commands: one after the
// other, a device with 16 live channels took minutes to release its
// ports; all at once, a node with thousands of devices would open as many
// transactions and commands together.
const endGBAtOnce = 16

// eachAtMost runs fn for every item, at most n at a time, and returns
// their errors joined.
func eachAtMost[T any](items []T, n int, fn func(T) error) error {
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
