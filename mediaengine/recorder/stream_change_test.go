package recorder

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/mediaengine/codec/h264"
	"github.com/svcplatform/svc/mediaengine/filesource"
	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/internal/mediaprobe"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/test/testkit"
)

// ffmpegRun runs ffmpeg with args in dir; a missing ffmpeg fails the test.
func ffmpegRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatalf("ffmpeg is required (scripts/install-deps.sh test installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-v", "error", "-y"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v: %s", args, err, out)
	}
}

// firstParameters gives the clip's video track the parameter sets of its
// first keyframe (the loader keeps the last ones it saw).
func firstParameters(c *filesource.Clip) {
	for _, f := range c.Frames {
		if f.Track.Kind() != media.KindVideo || !f.Keyframe {
			continue
		}
		for _, u := range f.NALUs {
			switch h264.Type(u) {
			case h264.NALSPS:
				f.Track.SPS = u
				s, _ := h264.ParseSPS(u)
				f.Track.Width, f.Track.Height = s.Width, s.Height
			case h264.NALPPS:
				f.Track.PPS = u
			}
		}
		return
	}
}

// recordFrames records frames published on a fresh hub in segments of
// segDur and answers the finished files in stream order with their
// ffprobe reading.
func recordFrames(t *testing.T, tracks []*media.Track, frames []*media.Frame, segDur time.Duration) ([]FileInfo, []mediaprobe.File, string) {
	t.Helper()
	h := hub.New(hub.Config{ReaderQueueFrames: 4096}, zaptest.NewLogger(t))
	defer h.Close()
	root := t.TempDir()
	c := &collector{}
	r := newTestRecorder(t, h, root, c)
	path := media.Path{App: "live", Stream: "change"}
	if _, err := r.Start(path, segDur); err != nil {
		t.Fatal(err)
	}
	pub, err := h.Publish(path, hub.Origin{Kind: "test"}, tracks)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if err := pub.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			time.Sleep(time.Millisecond) // let the recorder keep up with its queue
		}
	}
	pub.Close()
	testkit.Eventually(t, 20*time.Second, "the last file", func() bool { l := r.List(); return len(l) == 1 && l[0].State == "waiting" })
	info, err := r.Stop(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Dropped != 0 {
		t.Fatalf("%d frames dropped", info.Dropped)
	}
	testkit.Eventually(t, 20*time.Second, "every report", func() bool { return len(c.got()) == info.Files })
	files := c.got()
	sort.Slice(files, func(i, j int) bool { return files[i].StartTime.Before(files[j].StartTime) })
	var probes []mediaprobe.File
	var total uint64
	for _, f := range files {
		p := mediaprobe.ProbeFile(t, filepath.Join(root, f.Rel))
		if uint64(len(p.Packets)) != f.Frames {
			t.Fatalf("%s: ffprobe reads %d packets, the recorder wrote %d", f.Rel, len(p.Packets), f.Frames)
		}
		total += f.Frames
		probes = append(probes, p)
	}
	if total != uint64(len(frames)) {
		t.Fatalf("%d files hold %d frames; %d published", len(files), total, len(frames))
	}
	return files, probes, root
}

// contiguous fails unless each file's first video packet follows the
// previous file's last by that packet's duration (no frame lost or
// doubled at a boundary) and every file's video advances by step.
func contiguous(t *testing.T, files []FileInfo, probes []mediaprobe.File, step int64) {
	t.Helper()
	var prev *mediaprobe.FilePacket
	for i, p := range probes {
		v := p.Kind("video")
		for j, pkt := range v {
			if prev != nil && (pkt.DTS != prev.DTS+prev.Duration || prev.Duration != step) {
				t.Fatalf("%s packet %d at %d; the one before at %d + %d", files[i].Rel, j, pkt.DTS, prev.DTS, prev.Duration)
			}
			prev = &v[j]
		}
	}
}

func reasons(files []FileInfo) string {
	var out []string
	for _, f := range files {
		out = append(out, f.Reason)
	}
	return strings.Join(out, ",")
}

// TestRecorderNewSegmentOnResolutionChange records an H.264 stream that
// ffmpeg encoded at 320x240 for 2 s and then at 640x360 (two encodes
// concatenated, so the second keyframe carries a new SPS in band): the
// file closes at the new keyframe, each file's initialisation segment
// describes its own resolution, both decode, and the frames follow each
// other across the boundary.
func TestRecorderNewSegmentOnResolutionChange(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []string{"320x240", "640x360"} {
		ffmpegRun(t, dir, "-f", "lavfi", "-i", "testsrc2=size="+size+":rate=25", "-t", "2", "-c:v", "libx264", "-g", "25", "-bf", "0", "-f", "h264", size+".h264")
	}
	a, _ := os.ReadFile(filepath.Join(dir, "320x240.h264"))
	b, _ := os.ReadFile(filepath.Join(dir, "640x360.h264"))
	os.WriteFile(filepath.Join(dir, "ab.h264"), append(a, b...), 0o600)
	ffmpegRun(t, dir, "-r", "25", "-f", "h264", "-i", "ab.h264", "-c", "copy", "-f", "mpegts", "ab.ts")
	clip, err := filesource.LoadFile(filepath.Join(dir, "ab.ts"))
	if err != nil {
		t.Fatal(err)
	}
	firstParameters(clip)
	files, probes, root := recordFrames(t, clip.Tracks, clip.Frames, time.Minute)
	if reasons(files) != ReasonParameters+","+ReasonStopped && reasons(files) != ReasonParameters+","+ReasonStreamEnded {
		t.Fatalf("files closed for %s", reasons(files))
	}
	for i, want := range [][2]int{{320, 240}, {640, 360}} {
		st := probes[i].Streams[0]
		if st.Width != want[0] || st.Height != want[1] || files[i].Frames != 50 {
			t.Fatalf("file %d: %dx%d with %d frames, want %dx%d with 50", i, st.Width, st.Height, files[i].Frames, want[0], want[1])
		}
		mediaprobe.Decode(t, filepath.Join(root, files[i].Rel))
	}
	contiguous(t, files, probes, 3600)
}

// TestRecorderNewSegmentWithoutKeyframes records 14 s of an H.264 stream
// whose only keyframe is its first (libx264 with a 1000-frame GOP) in 2 s
// segments: the file is cut 10 s after that keyframe at a plain frame,
// the next file starts with that frame (no keyframe) and nothing is lost.
func TestRecorderNewSegmentWithoutKeyframes(t *testing.T) {
	dir := t.TempDir()
	ffmpegRun(t, dir, "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-t", "14", "-c:v", "libx264", "-bf", "0",
		"-x264-params", "keyint=1000:min-keyint=1000:scenecut=0", "-f", "mpegts", "nokey.ts")
	clip, err := filesource.LoadFile(filepath.Join(dir, "nokey.ts"))
	if err != nil {
		t.Fatal(err)
	}
	keys := 0
	for _, f := range clip.Frames {
		if f.Keyframe {
			keys++
		}
	}
	if keys != 1 || len(clip.Frames) != 350 {
		t.Fatalf("the clip has %d frames, %d keyframes", len(clip.Frames), keys)
	}
	files, probes, root := recordFrames(t, clip.Tracks, clip.Frames, 2*time.Second)
	if len(files) != 2 || files[0].Reason != ReasonNoKeyframe || files[0].Frames != 250 {
		t.Fatalf("files closed for %s, the first with %d frames", reasons(files), files[0].Frames)
	}
	if v := probes[1].Kind("video"); strings.Contains(v[0].Flags, "K") {
		t.Fatalf("the second file starts with a keyframe: %+v", v[0])
	}
	x, err := readIndex(filepath.Join(root, files[1].Rel) + ".idx")
	if err != nil || x.Parts[0].Key {
		t.Fatalf("the second file's sidecar: %+v %v", x, err)
	}
	mediaprobe.Decode(t, filepath.Join(root, files[0].Rel))
	contiguous(t, files, probes, 3600)
}

// TestRecorderNewSegmentOnClockJump records 4 s of H.264 and AAC that
// ffmpeg encoded, with the source clock jumping an hour forward at 1.5 s
// and back again at 2.5 s (both in the middle of a GOP): each jump closes
// the file at the next keyframe, the jumped frames are written where they
// belong (one frame after the last), so the three files' video and audio
// run on without a gap, and audio stays with the video.
func TestRecorderNewSegmentOnClockJump(t *testing.T) {
	dir := t.TempDir()
	ffmpegRun(t, dir, "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
		"-t", "4", "-c:v", "libx264", "-g", "25", "-bf", "0", "-c:a", "aac", "-b:a", "64k", "-f", "mpegts", "av.ts")
	clip, err := filesource.LoadFile(filepath.Join(dir, "av.ts"))
	if err != nil {
		t.Fatal(err)
	}
	var frames []*media.Frame
	for _, f := range clip.Frames {
		g := *f
		if f.DTS >= 1500*time.Millisecond && f.DTS < 2500*time.Millisecond {
			g.DTS += time.Hour
			g.PTS += time.Hour
		}
		frames = append(frames, &g)
	}
	files, probes, root := recordFrames(t, clip.Tracks, frames, time.Minute)
	if len(files) != 3 || files[0].Reason != ReasonClockJump || files[1].Reason != ReasonClockJump {
		t.Fatalf("files closed for %s", reasons(files))
	}
	contiguous(t, files, probes, 3600)
	var lastAudio *mediaprobe.FilePacket
	for i, p := range probes {
		v, a := p.Kind("video"), p.Kind("audio")
		if len(a) == 0 || !strings.Contains(v[0].Flags, "K") {
			t.Fatalf("%s: %d audio packets, first video %+v", files[i].Rel, len(a), v[0])
		}
		if lastAudio != nil && a[0].DTS != lastAudio.DTS+lastAudio.Duration {
			t.Fatalf("%s: audio starts at %d, the file before ended at %d + %d", files[i].Rel, a[0].DTS, lastAudio.DTS, lastAudio.Duration)
		}
		lastAudio = &a[len(a)-1]
		if d := p.Seconds("audio", a[0].DTS) - p.Seconds("video", v[0].DTS); d > 0.05 || d < -0.05 {
			t.Fatalf("%s: audio starts %.3f s from the video", files[i].Rel, d)
		}
		mediaprobe.Decode(t, filepath.Join(root, files[i].Rel))
		if want := []time.Duration{2 * time.Second, time.Second, time.Second}[i]; (files[i].Duration - want).Abs() > 50*time.Millisecond {
			t.Fatalf("%s lasts %s: the jump was written", files[i].Rel, files[i].Duration)
		}
	}
}
