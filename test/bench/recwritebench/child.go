package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/filesource"
	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/recorder"
)

// counting passes frames on and counts them.
type counting struct {
	next  filesource.FrameWriter
	fed   *atomic.Uint64
	bytes *atomic.Int64
}

func (c counting) WriteFrame(f *media.Frame) error {
	c.fed.Add(1)
	c.bytes.Add(int64(f.Size()))
	return c.next.WriteFrame(f)
}

// bareWriter writes a stream's media bytes with one write(2) per second of
// media and a new file every 10 s: the floor of writing the same bytes.
type bareWriter struct {
	dir        string
	file       *os.File
	buf        []byte
	fileStart  time.Duration
	partStart  time.Duration
	files      int
	written    *atomic.Int64
	firstFrame bool
}

func (b *bareWriter) WriteFrame(f *media.Frame) error {
	if !b.firstFrame {
		b.firstFrame, b.fileStart, b.partStart = true, f.DTS, f.DTS
	}
	if f.DTS-b.partStart >= time.Second {
		if err := b.flush(); err != nil {
			return err
		}
		b.partStart = f.DTS
		if f.DTS-b.fileStart >= 10*time.Second {
			b.file.Close()
			b.file = nil
			b.fileStart = f.DTS
		}
	}
	for _, n := range f.NALUs {
		b.buf = append(b.buf, n...)
	}
	b.buf = append(b.buf, f.Payload...)
	return nil
}

func (b *bareWriter) flush() error {
	if b.file == nil {
		var err error
		b.files++
		if b.file, err = os.Create(filepath.Join(b.dir, fmt.Sprintf("%05d.bin", b.files))); err != nil {
			return err
		}
	}
	n, err := b.file.Write(b.buf)
	b.written.Add(int64(n))
	b.buf = b.buf[:0]
	return err
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// runChild runs n streams in one mode for seconds and prints its result.
func runChild(mode string, n, seconds int, clipPath, dir, cpuprofile string) error {
	clip, err := filesource.LoadFile(clipPath)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	log := zap.NewNop()
	h := hub.New(hub.Config{}, log)
	defer h.Close()
	var rec *recorder.Recorder
	// The finished files as the recorder reports them (on_record_mp4).
	var files, fileFrames, fileBytes atomic.Int64
	report := func(_ context.Context, f recorder.FileInfo) error {
		files.Add(1)
		fileFrames.Add(int64(f.Frames))
		fileBytes.Add(f.Size)
		return nil
	}
	if mode == "rec" {
		if rec, err = recorder.New(h, recorder.Config{Root: dir, SegmentDuration: 10 * time.Second, SegmentMaxBytes: 1 << 30, PartDuration: time.Second,
			Report: report}, log); err != nil {
			return err
		}
		defer rec.Close()
	}
	path := func(i int) media.Path {
		return media.Path{Vhost: media.DefaultVhost, App: "live", Stream: fmt.Sprintf("cam%04d", i)}
	}
	var fed atomic.Uint64
	var fedBytes, written atomic.Int64
	var pubs []*hub.Publisher
	var bares []*bareWriter
	var writers []filesource.FrameWriter
	for i := range n {
		switch mode {
		case "rec", "feed":
			p, err := h.Publish(path(i), hub.Origin{Kind: "file"}, clip.Tracks)
			if err != nil {
				return err
			}
			if rec != nil {
				if _, err := rec.Start(path(i), 0); err != nil {
					return err
				}
			}
			pubs = append(pubs, p)
			writers = append(writers, counting{p, &fed, &fedBytes})
		case "bare":
			d := filepath.Join(dir, fmt.Sprint(i))
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			b := &bareWriter{dir: d, written: &written}
			bares = append(bares, b)
			writers = append(writers, counting{b, &fed, &fedBytes})
		default:
			return fmt.Errorf("unknown mode %q", mode)
		}
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	cpu0, t0 := cpuSeconds(), time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds)*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(rand.N(time.Second))
			filesource.Play(ctx, clip, w, 0)
		}()
	}
	wg.Wait()
	res := result{Mode: mode, Streams: n, Fed: fed.Load()}
	for _, b := range bares {
		if err := b.flush(); err != nil {
			return err
		}
		b.file.Close()
	}
	for _, p := range pubs {
		p.Close()
	}
	if rec != nil {
		// The stream's end closes each open file; wait for all of them to
		// be finished and reported.
		for deadline := time.Now().Add(60 * time.Second); ; {
			waiting, finished := 0, int64(0)
			res.Dropped = 0
			for _, in := range rec.List() {
				if in.State == "waiting" {
					waiting++
				}
				finished += int64(in.Files)
				res.Dropped += in.Dropped
			}
			if waiting == n && files.Load() == finished {
				res.Written, res.Bytes = uint64(fileFrames.Load()), fileBytes.Load()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%d of %d recordings finished", waiting, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	} else if mode == "bare" {
		res.Bytes, res.Written = written.Load(), res.Fed
	} else {
		res.Bytes = fedBytes.Load()
	}
	res.CPU, res.Wall = cpuSeconds()-cpu0, time.Since(t0).Seconds()
	return json.NewEncoder(os.Stdout).Encode(res)
}
