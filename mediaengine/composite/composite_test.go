package composite

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/codec/vp8"
	"github.com/svcplatform/svc/mediaengine/fmp4"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/recorder"
	"github.com/svcplatform/svc/shared/engineapi"
)

// dirFiles keeps inputs and outputs as plain files of a directory.
type dirFiles struct{ dir string }

func (d dirFiles) Lookup(id string) (string, *recorder.Index, error) {
	p := filepath.Join(d.dir, id+".mp4")
	if _, err := os.Stat(p); err != nil {
		return "", nil, recorder.ErrFileNotFound
	}
	return p, nil, nil
}
func (d dirFiles) OutputDir() (string, error) { return d.dir, nil }
func (d dirFiles) AdoptOutput(id, tmp string, _ time.Time, _ time.Duration, _ string) (int64, error) {
	p := filepath.Join(d.dir, id+".mp4")
	if err := os.Rename(tmp, p); err != nil {
		return 0, err
	}
	st, err := os.Stat(p)
	return st.Size(), err
}

// source writes a real H.264 + AAC file: a test picture and a tone.
func source(t *testing.T, dir, id string, seconds float64) {
	t.Helper()
	d := strconv.FormatFloat(seconds, 'f', 2, 64)
	out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d="+d,
		"-f", "lavfi", "-i", "sine=f=440:r=48000:d="+d, "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-c:a", "aac",
		filepath.Join(dir, id+".mp4")).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg source: %v: %s", err, out)
	}
}

// vp8Source writes a VP8 track file as the recorder writes a WebRTC
// publisher's video: libvpx encodes a test picture (ffmpeg 5's mp4 muxer
// cannot write VP8) into IVF, whose frames the engine's own fMP4 writer
// puts in a vp08 track.
func vp8Source(t *testing.T, dir, id string, seconds float64) {
	t.Helper()
	d := strconv.FormatFloat(seconds, 'f', 2, 64)
	ivf, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=s=640x480:r=25:d="+d,
		"-c:v", "libvpx", "-deadline", "realtime", "-g", "25", "-f", "ivf", "pipe:1").Output()
	if err != nil || len(ivf) < 32 || string(ivf[:4]) != "DKIF" {
		t.Fatalf("ffmpeg VP8 source: %v", err)
	}
	track := &media.Track{ID: 0, Codec: media.CodecVP8, ClockRate: 90000, Width: 640, Height: 480}
	run := fmp4.Run{Track: track}
	const frameTime = 40 * time.Millisecond
	for b, i := ivf[binary.LittleEndian.Uint16(ivf[6:]):], 0; len(b) >= 12; i++ { // IVF: header, then 12-byte frame headers
		n := int(binary.LittleEndian.Uint32(b))
		if len(b) < 12+n {
			t.Fatalf("a truncated IVF frame")
		}
		f := &media.Frame{Track: track, PTS: time.Duration(i) * frameTime, DTS: time.Duration(i) * frameTime, Payload: b[12 : 12+n]}
		f.Keyframe = vp8.IsKeyframe(f.Payload)
		run.Samples = append(run.Samples, fmp4.Sample{Frame: f, Duration: uint32(fmp4.ToTimescale(frameTime, 90000))})
		b = b[12+n:]
	}
	init, err := fmp4.InitSegment([]*media.Track{track})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, id+".mp4"), append(init, fmp4.Fragment(1, []fmp4.Run{run})...), 0o600); err != nil {
		t.Fatal(err)
	}
}

type probed struct {
	Streams []struct {
		CodecType string `json:"codec_type"`
		CodecName string `json:"codec_name"`
		Width     int    `json:"width"`
		Height    int    `json:"height"`
	} `json:"streams"`
	Format struct {
		Duration string `json:"duration"`
	} `json:"format"`
}

func probe(t *testing.T, path string) (probed, float64) {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var p probed
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	d, _ := strconv.ParseFloat(p.Format.Duration, 64)
	return p, d
}

// silences lists the silent periods of a file's sound (start, end).
func silences(t *testing.T, path string) [][2]float64 {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-hide_banner", "-nostdin", "-i", path, "-af", "silencedetect=n=-50dB:d=0.5", "-f", "null", "-").CombinedOutput()
	if err != nil {
		t.Fatalf("silencedetect: %v: %s", err, out)
	}
	var res [][2]float64
	starts := regexp.MustCompile(`silence_start: ([0-9.]+)`).FindAllStringSubmatch(string(out), -1)
	ends := regexp.MustCompile(`silence_end: ([0-9.]+)`).FindAllStringSubmatch(string(out), -1)
	for i, s := range starts {
		a, _ := strconv.ParseFloat(s[1], 64)
		b := -1.0
		if i < len(ends) {
			b, _ = strconv.ParseFloat(ends[i][1], 64)
		}
		res = append(res, [2]float64{a, b})
	}
	return res
}

const (
	fileA  = "0190a000-0000-7000-8000-00000000000a"
	fileB1 = "0190a000-0000-7000-8000-0000000000b1"
	fileB2 = "0190a000-0000-7000-8000-0000000000b2"
)

func TestMemberCopyKeepsGapsAsRealTime(t *testing.T) {
	dir := t.TempDir()
	source(t, dir, fileB1, 2)
	source(t, dir, fileB2, 1)
	p := New(dirFiles{dir}, 2)
	id := "0190a000-0000-7000-8000-0000000000c1"
	res, err := p.Render(context.Background(), engineapi.CompositeRequest{CompositeID: id, DurationMs: 5000, Lanes: []engineapi.CompositeLane{{
		Files: []engineapi.CompositeFile{{FileID: fileB1, OffsetMs: 0, Video: true, Audio: true}, {FileID: fileB2, OffsetMs: 4000, Video: true, Audio: true}}}}})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, id+".mp4")
	pr, d := probe(t, out)
	if res.FileSize == 0 || d < 4.9 || d > 5.15 {
		t.Fatalf("size %d, duration %.3f s; want 5 s", res.FileSize, d)
	}
	kinds := map[string]int{}
	for _, s := range pr.Streams {
		kinds[s.CodecType]++
		if s.CodecType == "video" && (s.Width != laneWidth || s.Height != laneHeight) {
			t.Fatalf("picture %dx%d", s.Width, s.Height)
		}
	}
	if kinds["video"] != 1 || kinds["audio"] != 1 {
		t.Fatalf("streams %v; want one video and one audio", kinds)
	}
	// The 2 s without media (2-4 s) are silence, and only they.
	sil := silences(t, out)
	if len(sil) != 1 || sil[0][0] < 1.9 || sil[0][0] > 2.1 || sil[0][1] < 3.9 || sil[0][1] > 4.1 {
		t.Fatalf("silences %v; want one from 2 s to 4 s", sil)
	}
}

func TestMeetingCompositeIsAGridOfLanes(t *testing.T) {
	dir := t.TempDir()
	source(t, dir, fileA, 2)
	source(t, dir, fileB1, 2)
	source(t, dir, fileB2, 1)
	p := New(dirFiles{dir}, 2)
	lanes := []engineapi.CompositeLane{
		{Files: []engineapi.CompositeFile{{FileID: fileA, OffsetMs: -500, Video: true, Audio: true}}},
		{Files: []engineapi.CompositeFile{{FileID: fileB1, OffsetMs: 0, Video: true, Audio: true}, {FileID: fileB2, OffsetMs: 4000, Video: true, Audio: true}}},
		{Files: []engineapi.CompositeFile{{FileID: fileA, OffsetMs: 1000, Audio: true}}},
	}
	for n, want := range map[int][2]int{2: {2 * laneWidth, laneHeight}, 3: {2 * laneWidth, 2 * laneHeight}} {
		id := fmt.Sprintf("0190a000-0000-7000-8000-0000000000d%d", n)
		req := engineapi.CompositeRequest{CompositeID: id, DurationMs: 5000, Lanes: lanes[:n]}
		// Two requests at once make one render.
		errs := make(chan error, 2)
		for range 2 {
			go func() { _, err := p.Render(context.Background(), req); errs <- err }()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		pr, d := probe(t, filepath.Join(dir, id+".mp4"))
		if d < 4.9 || d > 5.15 {
			t.Fatalf("%d lanes: duration %.3f s", n, d)
		}
		got := 0
		for _, s := range pr.Streams {
			if s.CodecType == "video" {
				got++
				if s.Width != want[0] || s.Height != want[1] {
					t.Fatalf("%d lanes: picture %dx%d, want %dx%d", n, s.Width, s.Height, want[0], want[1])
				}
			}
		}
		if got != 1 || len(pr.Streams) != 2 {
			t.Fatalf("%d lanes: %d streams", n, len(pr.Streams))
		}
		// Lane 1's 2-4 s gap is filled by lane 0 (until 1.5 s) only up
		// to its end: silence runs from 2 s to 4 s for two lanes.
		if n == 2 {
			sil := silences(t, filepath.Join(dir, id+".mp4"))
			if len(sil) != 1 || sil[0][0] < 1.9 || sil[0][0] > 2.1 || sil[0][1] < 3.9 || sil[0][1] > 4.1 {
				t.Fatalf("silences %v; want one from 2 s to 4 s", sil)
			}
		}
	}
}

// TestCompositeOfVP8Tracks: a WebRTC participant's VP8 track file, alone
// and beside an H.264 + AAC one, renders into an H.264 + AAC grid whose every
// frame decodes, the VP8 lane's picture included.
func TestCompositeOfVP8Tracks(t *testing.T) {
	dir := t.TempDir()
	vp8Source(t, dir, fileA, 2)
	source(t, dir, fileB1, 2)
	if pr, _ := probe(t, filepath.Join(dir, fileA+".mp4")); len(pr.Streams) != 1 || pr.Streams[0].CodecName != "vp8" {
		t.Fatalf("the VP8 source: %+v", pr.Streams)
	}
	p := New(dirFiles{dir}, 1)
	for _, c := range []struct {
		id    string
		lanes []engineapi.CompositeLane
		width int
	}{
		{"0190a000-0000-7000-8000-0000000000e1", []engineapi.CompositeLane{{Files: []engineapi.CompositeFile{{FileID: fileA, OffsetMs: 500, Video: true}}}}, laneWidth},
		{"0190a000-0000-7000-8000-0000000000e2", []engineapi.CompositeLane{
			{Files: []engineapi.CompositeFile{{FileID: fileA, OffsetMs: 0, Video: true}}},
			{Files: []engineapi.CompositeFile{{FileID: fileB1, OffsetMs: 0, Video: true, Audio: true}}}}, 2 * laneWidth},
	} {
		if _, err := p.Render(context.Background(), engineapi.CompositeRequest{CompositeID: c.id, DurationMs: 2500, Lanes: c.lanes}); err != nil {
			t.Fatalf("%d lanes: %v", len(c.lanes), err)
		}
		out := filepath.Join(dir, c.id+".mp4")
		pr, d := probe(t, out)
		if len(pr.Streams) != 2 || pr.Streams[0].CodecName != "h264" || pr.Streams[0].Width != c.width || pr.Streams[1].CodecName != "aac" ||
			d < 2.4 || d > 2.65 {
			t.Fatalf("%d lanes: %+v, %.3f s; want H.264 %d wide and AAC, 2.5 s", len(c.lanes), pr.Streams, d, c.width)
		}
		frames, err := exec.Command("ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames",
			"-of", "csv=p=0", out).CombinedOutput()
		if n, _ := strconv.Atoi(string(bytes.TrimSpace(frames))); err != nil || n < 60 {
			t.Fatalf("%d lanes: %s frames decoded (%v), want 2.5 s at 25 fps", len(c.lanes), frames, err)
		}
		// The VP8 lane's picture is there: the testsrc2 picture is not black.
		if lum := meanLuma(t, out, 1.5); lum < 40 {
			t.Fatalf("%d lanes: mean luma %.1f at 1.5 s; the VP8 picture is missing", len(c.lanes), lum)
		}
	}
}

// meanLuma is the mean Y of the left lane (the first 640x360) of the
// frame at second at.
func meanLuma(t *testing.T, path string, at float64) float64 {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-hide_banner", "-nostdin", "-ss", strconv.FormatFloat(at, 'f', 2, 64), "-i", path, "-frames:v", "1",
		"-vf", fmt.Sprintf("crop=%d:%d:0:0,signalstats,metadata=print:key=lavfi.signalstats.YAVG", laneWidth, laneHeight), "-f", "null", "-").CombinedOutput()
	if err != nil {
		t.Fatalf("signalstats: %v: %s", err, out)
	}
	m := regexp.MustCompile(`YAVG=([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no YAVG in %s", out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

func TestRefusedRequests(t *testing.T) {
	p := New(dirFiles{t.TempDir()}, 1)
	for name, req := range map[string]engineapi.CompositeRequest{
		"bad id":      {CompositeID: "x", DurationMs: 1000, Lanes: []engineapi.CompositeLane{{Files: []engineapi.CompositeFile{{FileID: fileA, Video: true}}}}},
		"no lanes":    {CompositeID: fileA, DurationMs: 1000},
		"no duration": {CompositeID: fileA, Lanes: []engineapi.CompositeLane{{Files: []engineapi.CompositeFile{{FileID: fileA, Video: true}}}}},
		"no media":    {CompositeID: fileA, DurationMs: 1000, Lanes: []engineapi.CompositeLane{{Files: []engineapi.CompositeFile{{FileID: fileA}}}}},
	} {
		if _, err := p.Render(context.Background(), req); err == nil {
			t.Fatalf("%s: rendered", name)
		}
	}
	// A file that is not there fails the render, and a later one tries again.
	req := engineapi.CompositeRequest{CompositeID: fileB1, DurationMs: 1000, Lanes: []engineapi.CompositeLane{{Files: []engineapi.CompositeFile{{FileID: fileA, Video: true}}}}}
	if _, err := p.Render(context.Background(), req); err == nil {
		t.Fatal("rendered a missing file")
	}
}
