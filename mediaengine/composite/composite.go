// Package composite renders meeting composites with ffmpeg on the engine
// that holds a meeting's track files: a member copy (one participant's
// audio and video, one lane) or the full meeting (every lane in a grid,
// their sound mixed). Each file is placed at its offset from the
// recording's origin over a black picture and silence as long as the
// meeting, so muted and disconnected periods stay as real time.
//
// Renders run in a bounded pool (a few ffmpeg processes at once, the rest
// wait their turn); a request for a composite already rendering joins it,
// and one already rendered answers its output, so a control plane that
// asks again after losing an answer costs nothing.
package composite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/mediaengine/recorder"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Files finds track files and keeps outputs (recorder.Recorder).
type Files interface {
	Lookup(fileID string) (string, *recorder.Index, error)
	OutputDir() (string, error)
	AdoptOutput(id, tmp string, start time.Time, dur time.Duration, reason string) (int64, error)
}

// ErrRefused is a composite that cannot be made: a bad request, or ffmpeg
// failed on these files.
var ErrRefused = errors.New("composite: cannot render")

// Limits: the longest meeting rendered, lanes in one grid, files in all.
const (
	maxDuration = 12 * time.Hour
	maxLanes    = 16
	maxFiles    = 512
	// renderTimeout bounds one ffmpeg run (a long meeting on a busy host).
	renderTimeout = 2 * time.Hour
)

// Picture of one lane; a grid is made of such tiles.
const (
	laneWidth  = 640
	laneHeight = 360
	frameRate  = 25
)

// Pool renders composites, Workers at a time.
type Pool struct {
	Files Files
	// FFmpeg is the ffmpeg binary ("ffmpeg" on PATH when empty).
	FFmpeg string

	sem  chan struct{}
	mu   sync.Mutex
	jobs map[string]*job
}

type job struct {
	done chan struct{}
	res  engineapi.CompositeResult
	err  error
}

// New makes a pool of workers ffmpeg processes (at least one).
func New(files Files, workers int) *Pool {
	return &Pool{Files: files, sem: make(chan struct{}, max(workers, 1)), jobs: map[string]*job{}}
}

// Render answers the composite's output once it is written. The render
// goes on when ctx ends (a repeated request collects it).
func (p *Pool) Render(ctx context.Context, req engineapi.CompositeRequest) (engineapi.CompositeResult, error) {
	if err := check(req); err != nil {
		return engineapi.CompositeResult{}, err
	}
	p.mu.Lock()
	j := p.jobs[req.CompositeID]
	if j != nil {
		select {
		case <-j.done:
			if j.err != nil {
				j = nil // a failed render is tried again
			} else if _, _, err := p.Files.Lookup(req.CompositeID); err != nil {
				j = nil // its output is gone
			}
		default:
		}
	}
	if j == nil {
		j = &job{done: make(chan struct{})}
		p.jobs[req.CompositeID] = j
		go p.run(j, req)
	}
	p.mu.Unlock()
	select {
	case <-j.done:
		return j.res, j.err
	case <-ctx.Done():
		return engineapi.CompositeResult{}, ctx.Err()
	}
}

func (p *Pool) run(j *job, req engineapi.CompositeRequest) {
	defer close(j.done)
	p.sem <- struct{}{}
	defer func() { <-p.sem }()
	ctx, cancel := context.WithTimeout(context.Background(), renderTimeout)
	defer cancel()
	j.res, j.err = p.render(ctx, req)
}

func check(req engineapi.CompositeRequest) error {
	if _, err := uuid.Parse(req.CompositeID); err != nil {
		return fmt.Errorf("%w: compositeId is a UUID", ErrRefused)
	}
	if req.DurationMs <= 0 || time.Duration(req.DurationMs)*time.Millisecond > maxDuration {
		return fmt.Errorf("%w: durationMs is 1 ms to %s", ErrRefused, maxDuration)
	}
	if len(req.Lanes) == 0 || len(req.Lanes) > maxLanes {
		return fmt.Errorf("%w: 1-%d lanes", ErrRefused, maxLanes)
	}
	n := 0
	for _, l := range req.Lanes {
		n += len(l.Files)
		for _, f := range l.Files {
			if !f.Video && !f.Audio {
				return fmt.Errorf("%w: file %s holds neither audio nor video", ErrRefused, f.FileID)
			}
		}
	}
	if n == 0 || n > maxFiles {
		return fmt.Errorf("%w: 1-%d files", ErrRefused, maxFiles)
	}
	return nil
}

func (p *Pool) render(ctx context.Context, req engineapi.CompositeRequest) (engineapi.CompositeResult, error) {
	var paths []string
	for _, l := range req.Lanes {
		for _, f := range l.Files {
			path, _, err := p.Files.Lookup(f.FileID)
			if err != nil {
				return engineapi.CompositeResult{}, err
			}
			paths = append(paths, path)
		}
	}
	dir, err := p.Files.OutputDir()
	if err != nil {
		return engineapi.CompositeResult{}, err
	}
	tmp, err := os.CreateTemp(dir, "."+req.CompositeID+"-*.mp4")
	if err != nil {
		return engineapi.CompositeResult{}, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	dur := time.Duration(req.DurationMs) * time.Millisecond
	args := []string{"-hide_banner", "-nostdin", "-loglevel", "error", "-y"}
	for _, path := range paths {
		args = append(args, "-i", path)
	}
	args = append(args, "-filter_complex", Graph(req), "-map", "[v]", "-map", "[a]",
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-r", fmt.Sprint(frameRate),
		"-c:a", "aac", "-b:a", "96k", "-ar", "48000",
		"-t", seconds(dur), "-movflags", "+faststart", "-f", "mp4", tmp.Name())
	bin := p.FFmpeg
	if bin == "" {
		bin = "ffmpeg"
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 400 {
			msg = msg[len(msg)-400:]
		}
		return engineapi.CompositeResult{}, fmt.Errorf("%w: ffmpeg: %w: %s", ErrRefused, err, msg)
	}
	size, err := p.Files.AdoptOutput(req.CompositeID, tmp.Name(), time.Now(), dur, "composite")
	if err != nil {
		return engineapi.CompositeResult{}, err
	}
	return engineapi.CompositeResult{CompositeID: req.CompositeID, FileSize: size, DurationMs: req.DurationMs}, nil
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// Graph is the filter graph of a request whose files are ffmpeg's inputs
// in order: per lane a black picture and silence as long as the meeting
// with each file's picture overlaid and sound mixed in from its offset;
// then the lanes side by side (two), in a grid (more) or alone (one),
// their sound mixed. Its outputs are [v] and [a].
func Graph(req engineapi.CompositeRequest) string {
	d := seconds(time.Duration(req.DurationMs) * time.Millisecond)
	var g []string
	input := 0
	for li, l := range req.Lanes {
		g = append(g, fmt.Sprintf("color=c=black:s=%dx%d:r=%d:d=%s[l%dv0]", laneWidth, laneHeight, frameRate, d, li),
			fmt.Sprintf("anullsrc=r=48000:cl=stereo,atrim=duration=%s[l%dsil]", d, li))
		vs, as := 0, []string{fmt.Sprintf("[l%dsil]", li)}
		for fi, f := range l.Files {
			off := time.Duration(f.OffsetMs) * time.Millisecond
			if f.Video {
				g = append(g, fmt.Sprintf("[%d:v]%s,scale=%d:%d:force_original_aspect_ratio=decrease,pad=%d:%d:(ow-iw)/2:(oh-ih)/2,setsar=1[l%df%dv]",
					input, place(off, false), laneWidth, laneHeight, laneWidth, laneHeight, li, fi),
					fmt.Sprintf("[l%dv%d][l%df%dv]overlay=eof_action=pass:repeatlast=0[l%dv%d]", li, vs, li, fi, li, vs+1))
				vs++
			}
			if f.Audio {
				g = append(g, fmt.Sprintf("[%d:a]aresample=48000,aformat=sample_fmts=fltp:channel_layouts=stereo,%s[l%df%da]", input, place(off, true), li, fi))
				as = append(as, fmt.Sprintf("[l%df%da]", li, fi))
			}
			input++
		}
		g = append(g, fmt.Sprintf("[l%dv%d]null[lane%dv]", li, vs, li),
			fmt.Sprintf("%samix=inputs=%d:duration=first:normalize=0[lane%da]", strings.Join(as, ""), len(as), li))
	}
	n := len(req.Lanes)
	var vin, ain string
	for i := 0; i < n; i++ {
		vin += fmt.Sprintf("[lane%dv]", i)
		ain += fmt.Sprintf("[lane%da]", i)
	}
	if n == 1 {
		g = append(g, "[lane0v]null[v]", "[lane0a]anull[a]")
	} else {
		cols := int(math.Ceil(math.Sqrt(float64(n))))
		if n == 2 {
			cols = 2
		}
		rows := (n + cols - 1) / cols
		cells := rows * cols
		var layout []string
		for i := 0; i < cells; i++ {
			layout = append(layout, fmt.Sprintf("%d_%d", (i%cols)*laneWidth, (i/cols)*laneHeight))
			if i >= n { // an empty cell of the last row
				g = append(g, fmt.Sprintf("color=c=black:s=%dx%d:r=%d:d=%s[fill%d]", laneWidth, laneHeight, frameRate, d, i))
				vin += fmt.Sprintf("[fill%d]", i)
			}
		}
		g = append(g, fmt.Sprintf("%sxstack=inputs=%d:layout=%s[v]", vin, cells, strings.Join(layout, "|")),
			fmt.Sprintf("%samix=inputs=%d:duration=first:normalize=0[a]", ain, n))
	}
	return strings.Join(g, ";")
}

// place moves a file's media to its offset from the origin: a file that
// began before the origin loses what came before it.
func place(off time.Duration, audio bool) string {
	switch {
	case audio && off < 0:
		return fmt.Sprintf("atrim=start=%s,asetpts=PTS-STARTPTS", seconds(-off))
	case audio:
		return fmt.Sprintf("asetpts=PTS-STARTPTS,adelay=%d:all=1", off.Milliseconds())
	case off < 0:
		return fmt.Sprintf("trim=start=%s,setpts=PTS-STARTPTS", seconds(-off))
	}
	return fmt.Sprintf("setpts=PTS-STARTPTS+%s/TB", seconds(off))
}
