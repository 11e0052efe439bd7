package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/svcplatform/svc/mediaengine/filesource"
	"github.com/svcplatform/svc/mediaengine/flv"
	"github.com/svcplatform/svc/mediaengine/media"
)

// runFloor is the floor: the least a server can do to deliver the same
// bytes. It plays the same clip in real time, makes each FLV tag once (the
// same muxer as the engine, so the bytes match) and writes it, as one HTTP
// chunk, to every connected socket in turn with one write each. No hub, no
// queues, no per-player goroutine, no drop handling: what is left is the
// kernel's cost of moving the bytes.
//
// With statsPath set it also records, per tag, how long writing it to every
// socket took (the spread any fan-out has on these cores) and writes the
// p50/p99 there as JSON when it stops.
func runFloor(addr, clipPath, statsPath string) error {
	clip, err := filesource.LoadFile(clipPath)
	if err != nil {
		return err
	}
	mux, err := flv.NewMuxer(clip.Tracks)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := &floor{}
	var spread []time.Duration
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.admit(c, mux.Header())
		}
	}()
	go func() { <-ctx.Done(); ln.Close() }()
	err = filesource.Play(ctx, clip, frameWriterFunc(func(fr *media.Frame) error {
		p, ok := mux.Frame(fr)
		if !ok {
			return nil
		}
		start := time.Now()
		f.broadcast(chunk(p.Data))
		if statsPath != "" {
			spread = append(spread, time.Since(start))
		}
		return nil
	}), 0)
	if statsPath != "" {
		sort.Slice(spread, func(i, j int) bool { return spread[i] < spread[j] })
		b, _ := json.Marshal(spreadStats{Count: len(spread), P50Ms: msOf(pct(spread, 0.5)), P99Ms: msOf(pct(spread, 0.99))})
		os.WriteFile(statsPath, b, 0o644)
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// spreadStats is what the floor reports with -floor-stats.
type spreadStats struct {
	Count int     `json:"count"`
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
}

type frameWriterFunc func(*media.Frame) error

func (f frameWriterFunc) WriteFrame(fr *media.Frame) error { return f(fr) }

func chunk(b []byte) []byte {
	out := strconv.AppendInt(nil, int64(len(b)), 16)
	out = append(out, '\r', '\n')
	out = append(out, b...)
	return append(out, '\r', '\n')
}

type floor struct {
	mu    sync.Mutex
	conns []net.Conn
}

// admit reads the request head and answers like the engine.
func (f *floor) admit(c net.Conn, header []byte) {
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			c.Close()
			return
		}
		if line == "\r\n" {
			break
		}
	}
	head := "HTTP/1.1 200 OK\r\nContent-Type: video/x-flv\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
	if _, err := c.Write(append([]byte(head), chunk(header)...)); err != nil {
		c.Close()
		return
	}
	f.mu.Lock()
	f.conns = append(f.conns, c)
	f.mu.Unlock()
}

func (f *floor) broadcast(b []byte) {
	f.mu.Lock()
	conns := f.conns
	f.mu.Unlock()
	var dead []net.Conn
	for _, c := range conns {
		if _, err := c.Write(b); err != nil {
			dead = append(dead, c)
		}
	}
	if len(dead) == 0 {
		return
	}
	f.mu.Lock()
	keep := f.conns[:0]
	for _, c := range f.conns {
		alive := true
		for _, d := range dead {
			if c == d {
				alive = false
			}
		}
		if alive {
			keep = append(keep, c)
		} else {
			c.Close()
		}
	}
	clear(f.conns[len(keep):])
	f.conns = keep
	f.mu.Unlock()
}
