package mediaengine

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/flv"
)

// flvClient plays an HTTP-FLV URL in the background, recording when each
// video tag arrives against its timestamp.
type flvClient struct {
	status int
	tags   atomic.Int64
	done   chan struct{}

	mu   sync.Mutex
	lag  []time.Duration // arrival time minus tag time, relative to the first tag
	err  error
	resp *http.Response
}

func openFLV(t *testing.T, url string) *flvClient {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	c := &flvClient{status: resp.StatusCode, done: make(chan struct{}), resp: resp}
	t.Cleanup(func() {
		resp.Body.Close()
		<-c.done
	})
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		close(c.done)
		return c
	}
	go func() {
		defer close(c.done)
		r := flv.NewReader(resp.Body)
		var start time.Time
		var first uint32
		for {
			tag, err := r.Next()
			if err != nil {
				c.mu.Lock()
				c.err = err
				c.mu.Unlock()
				return
			}
			c.tags.Add(1)
			if tag.Type != flv.TagVideo {
				continue
			}
			if _, seq, _ := flv.VideoInfo(tag.Data); seq {
				continue
			}
			now := time.Now()
			if start.IsZero() {
				start, first = now, tag.Timestamp
			}
			c.mu.Lock()
			c.lag = append(c.lag, now.Sub(start)-time.Duration(tag.Timestamp-first)*time.Millisecond)
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *flvClient) ended(d time.Duration) bool {
	select {
	case <-c.done:
		return true
	case <-time.After(d):
		return false
	}
}

func httpGet(url string) (*http.Response, error) { return http.Get(url) }
