// Package glass is a source with the wall-clock time burned into every
// frame and the means to read it back, for glass-to-glass latency: from
// the moment a frame is made to the moment a player shows it.
//
// Frames are 640x360 at 25 fps; the time of drawing (the low 32 bits of
// Unix milliseconds) is drawn as black and white blocks, each row of
// blocks followed by its complement so a damaged read is recognised. A
// player reads them from its decoded picture (ReadStamp, or the page's
// script on a canvas in a browser), which needs no OCR and no clock but
// the machine's.
package glass

import (
	"context"
	_ "embed"
	"fmt"
	"os/exec"
	"time"
)

// Page is the browser side: it plays the WHEP URL given as ?whep=, reads
// the stamp of every frame it presents (requestVideoFrameCallback) from a
// canvas, and after ?warmup= and ?window= milliseconds posts a Report as
// JSON to /report.
//
//go:embed page.html
var Page string

// Report is what Page posts.
type Report struct {
	Error string `json:"error"`
	// Samples are the frames' latencies in milliseconds; Bad counts the
	// frames whose stamp could not be read, Seen all frames measured.
	Samples       []float64 `json:"samples"`
	Bad           int       `json:"bad"`
	Seen          int       `json:"seen"`
	JitterBuffer  float64   `json:"jitterBufferMs"`
	FramesDecoded int       `json:"framesDecoded"`
	FramesDropped int       `json:"framesDropped"`
	Width         int       `json:"width"`
	Height        int       `json:"height"`
}

// The picture: blocks of Block x Block pixels, Cols a row; rows 0 and 1
// hold the stamp's high and low 16 bits, rows 2 and 3 their complements.
const (
	Width, Height = 640, 360
	FPS           = 25
	Block, Cols   = 40, 16
)

// Publish draws stamped frames in real time and has ffmpeg encode them
// (x264 ultrafast, zerolatency, baseline, no B-frames) and publish them
// over RTSP (TCP) to url until ctx ends. stderr receives ffmpeg's errors.
func Publish(ctx context.Context, url string, stderr func(string)) error {
	cmd := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "gray",
		"-s", fmt.Sprintf("%dx%d", Width, Height), "-r", fmt.Sprint(FPS), "-i", "pipe:0",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-profile:v", "baseline", "-bf", "0", "-g", fmt.Sprint(2*FPS),
		"-pix_fmt", "yuv420p", "-f", "rtsp", "-rtsp_transport", "tcp", url)
	out := &lineWriter{emit: stderr}
	cmd.Stderr = out
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("ffmpeg: %w", err)
	}
	defer cmd.Wait()
	defer in.Close()
	frame := make([]byte, Width*Height)
	tick := time.NewTicker(time.Second / FPS)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		DrawFrame(frame, n, uint32(time.Now().UnixMilli()))
		if _, err := in.Write(frame); err != nil {
			return fmt.Errorf("ffmpeg stopped reading: %w", err)
		}
	}
}

// lineWriter hands what a process writes to emit.
type lineWriter struct{ emit func(string) }

func (w *lineWriter) Write(p []byte) (int, error) {
	if w.emit != nil {
		w.emit(string(p))
	}
	return len(p), nil
}

// DrawFrame draws frame n (grey, Width x Height) with stamp's blocks and,
// below them, a bar that moves so the encoder has motion to code.
func DrawFrame(f []byte, n int, stamp uint32) {
	for y := range Height {
		row := f[y*Width : (y+1)*Width]
		for x := range Width {
			row[x] = 64
		}
		if y >= 4*Block {
			bar := (n * 8) % Width
			for x := bar; x < min(bar+48, Width); x++ {
				row[x] = 200
			}
			continue
		}
		r := y / Block
		for c := range Cols {
			bit := stamp >> (31 - (r%2)*16 - c) & 1
			if r >= 2 {
				bit ^= 1
			}
			v := byte(16)
			if bit == 1 {
				v = 235
			}
			for x := c * Block; x < (c+1)*Block; x++ {
				row[x] = v
			}
		}
	}
}

// ReadStamp reads a decoded grey frame's stamp; ok is false when a block
// and its complement agree (the picture is damaged there).
func ReadStamp(f []byte) (uint32, bool) {
	bit := func(r, c int) uint32 {
		if f[(r*Block+Block/2)*Width+c*Block+Block/2] > 128 {
			return 1
		}
		return 0
	}
	var v uint32
	for r := range 2 {
		for c := range Cols {
			b := bit(r, c)
			if b == bit(r+2, c) {
				return 0, false
			}
			v = v<<1 | b
		}
	}
	return v, true
}

// Latency is the milliseconds from stamp to the wall-clock time shownMs
// (Unix milliseconds), modulo 2^32 as the stamp is.
func Latency(shownMs int64, stamp uint32) float64 { return float64(uint32(shownMs) - stamp) }
