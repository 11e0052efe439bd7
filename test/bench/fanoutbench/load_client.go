package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// loadClient plays one HTTP-FLV URL on many connections. Each connection
// parses every tag header (bodies are skipped, not copied) and checks
// continuity: after the first keyframe, video and audio timestamps must
// increase and never jump by more than one frame interval plus the clip's
// loop gap, which is what a lost frame looks like.
type loadClient struct {
	addr, path   string
	maxVideoGap  uint32 // ms
	maxAudioGap  uint32 // ms
	localIPs     []string
	bytes        atomic.Int64
	videoFrames  atomic.Int64
	audioFrames  atomic.Int64
	discontinued atomic.Int64 // continuity violations
	failed       atomic.Int64 // connections that ended early or never started

	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	ttffMu sync.Mutex
	ttff   []time.Duration
}

// open connects n players, at most 64 dialling at once, and waits until
// each has its first keyframe (or timeout).
func (lc *loadClient) open(ctx context.Context, n int, timeout time.Duration) error {
	ready := make(chan struct{}, n)
	sem := make(chan struct{}, 64)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		lc.wg.Add(1)
		go func(i int) {
			defer lc.wg.Done()
			lc.play(ctx, lc.localIPs[i%len(lc.localIPs)], ready, sem)
		}(i)
	}
	deadline := time.After(timeout)
	for i := 0; i < n; i++ {
		select {
		case <-ready:
		case <-deadline:
			return fmt.Errorf("%d of %d players started within %s", i, n, timeout)
		}
	}
	return nil
}

// close ends every connection and waits for the players.
func (lc *loadClient) close() {
	lc.mu.Lock()
	for _, c := range lc.conns {
		c.Close()
	}
	lc.conns = nil
	lc.mu.Unlock()
	lc.wg.Wait()
}

func (lc *loadClient) play(ctx context.Context, localIP string, ready chan<- struct{}, sem chan struct{}) {
	released := false
	release := func() {
		if !released {
			released = true
			<-sem
		}
	}
	defer release()
	start := time.Now()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(localIP)}, Timeout: 10 * time.Second}
	c, err := d.DialContext(ctx, "tcp", lc.addr)
	if err != nil {
		lc.failed.Add(1)
		return
	}
	lc.mu.Lock()
	lc.conns = append(lc.conns, c)
	lc.mu.Unlock()
	err = lc.read(c, start, func() { release(); ready <- struct{}{} })
	if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
		lc.failed.Add(1)
	}
}

func (lc *loadClient) read(c net.Conn, start time.Time, started func()) error {
	if _, err := io.WriteString(c, "GET "+lc.path+" HTTP/1.1\r\nHost: bench\r\n\r\n"); err != nil {
		return err
	}
	br := bufio.NewReaderSize(c, 16<<10)
	status, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.Contains(status, " 200 ") {
		return fmt.Errorf("status %q", strings.TrimSpace(status))
	}
	chunked := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if line == "\r\n" {
			break
		}
		if strings.EqualFold(strings.TrimSpace(line), "Transfer-Encoding: chunked") {
			chunked = true
		}
	}
	var r io.Reader = br
	if chunked {
		r = httputil.NewChunkedReader(br)
	}
	var hdr [13]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	var tag [13]byte
	lastV, lastA := int64(-1), int64(-1)
	begun := false
	for {
		if _, err := io.ReadFull(r, tag[:13]); err != nil { // 11 header + 2 body bytes
			return err
		}
		size := int64(tag[1])<<16 | int64(tag[2])<<8 | int64(tag[3])
		if size < 2 {
			return fmt.Errorf("tag of %d bytes", size)
		}
		ts := int64(tag[4])<<16 | int64(tag[5])<<8 | int64(tag[6]) | int64(tag[7])<<24
		if _, err := io.CopyN(io.Discard, r, size-2+4); err != nil {
			return err
		}
		lc.bytes.Add(11 + size + 4)
		switch tag[0] {
		case 9:
			key := tag[11]>>4&7 == 1
			seqHeader := tag[12] == 0
			if tag[11]&0x80 != 0 { // Enhanced FLV
				seqHeader = tag[11]&0x0f == 0
			}
			if seqHeader {
				continue
			}
			if !begun {
				if !key {
					continue
				}
				begun = true
				lc.ttffMu.Lock()
				lc.ttff = append(lc.ttff, time.Since(start))
				lc.ttffMu.Unlock()
				started()
			} else if ts <= lastV || ts-lastV > int64(lc.maxVideoGap) {
				lc.discontinued.Add(1)
			}
			lastV = ts
			lc.videoFrames.Add(1)
		case 8:
			if !begun {
				continue
			}
			if lastA >= 0 && (ts <= lastA || ts-lastA > int64(lc.maxAudioGap)) {
				lc.discontinued.Add(1)
			}
			lastA = ts
			lc.audioFrames.Add(1)
		}
	}
}

// counters is a snapshot of the client's totals.
type counters struct {
	bytes, video, audio, discontinued, failed int64
}

func (lc *loadClient) snapshot() counters {
	return counters{lc.bytes.Load(), lc.videoFrames.Load(), lc.audioFrames.Load(), lc.discontinued.Load(), lc.failed.Load()}
}

func (a counters) minus(b counters) counters {
	return counters{a.bytes - b.bytes, a.video - b.video, a.audio - b.audio, a.discontinued - b.discontinued, a.failed - b.failed}
}

func (lc *loadClient) takeTTFF() []time.Duration {
	lc.ttffMu.Lock()
	defer lc.ttffMu.Unlock()
	out := lc.ttff
	lc.ttff = nil
	return out
}
