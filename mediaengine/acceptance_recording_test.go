package mediaengine

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/internal/mediaprobe"
	"github.com/svcplatform/svc/mediaengine/internal/peers"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/testkit"
)

// TestAcceptanceRecordingSegments records a stream ffmpeg publishes over
// RTSP (H.264 with B-frames + AAC, 14 s) in 3 s segments while ffmpeg
// also writes what it sends to a local MP4 (tee muxer). Every segment
// decodes without an error in ffmpeg; the frames of all segments are
// exactly the frames the hub passed on (a second draining reader counts
// them), the video frames exactly those ffmpeg published; at each
// boundary the next file's first video DTS follows the previous file's
// last by one frame duration, and audio by one AAC frame.
func TestAcceptanceRecordingSegments(t *testing.T) {
	t.Parallel()
	te := startEngine(t, noDemo)
	var info engineapi.RecordingInfo
	if st := te.control(t, "POST", engineapi.PathRecordings, engineapi.StartRecordingRequest{App: "push", Stream: "rec", SegmentSeconds: 3}, &info); st != 200 {
		t.Fatalf("start recording: %d", st)
	}
	if info.State != "waiting" {
		t.Fatalf("recording before the stream exists: %+v", info)
	}
	var e engineapi.Error
	if st := te.control(t, "POST", engineapi.PathRecordings, engineapi.StartRecordingRequest{App: "push", Stream: "rec"}, &e); st != 409 ||
		e.Code != engineapi.CodeAlreadyRecording {
		t.Fatalf("second start: %d %+v", st, e)
	}
	if st := te.control(t, "POST", engineapi.PathRecordings, engineapi.StartRecordingRequest{App: "..", Stream: "x"}, &e); st != 400 {
		t.Fatalf("start with app ..: %d %+v", st, e)
	}
	counted := countHubFrames(t, te, media.Path{App: "push", Stream: "rec"})
	local := filepath.Join(t.TempDir(), "published.mp4")
	pub := peers.Start(t, "ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100", "-t", "14",
		"-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "25", "-pix_fmt", "yuv420p", "-flags:v", "+global_header",
		"-c:a", "aac", "-b:a", "64k", "-flags:a", "+global_header", "-map", "0:v", "-map", "1:a",
		"-f", "tee", "[f=rtsp:rtsp_transport=tcp]"+te.rtspURL("push/rec")+"|[f=mp4]"+local)
	select {
	case <-pub.Done():
	case <-time.After(90 * time.Second):
		t.Fatalf("ffmpeg did not finish: %s", pub.Output())
	}
	if out := pub.Output(); out != "" {
		t.Logf("ffmpeg: %s", out)
	}
	// The stream ended with ffmpeg's TEARDOWN; its last file is finished.
	testkit.Eventually(t, 30*time.Second, "the recording to wait for the next publisher", func() bool {
		var l engineapi.RecordingList
		te.control(t, "GET", engineapi.PathRecordings, nil, &l)
		return len(l.Recordings) == 1 && l.Recordings[0].State == "waiting" && l.Recordings[0].Files >= 4
	})
	if st := te.control(t, "POST", engineapi.PathRecordingStop, engineapi.StopRecordingRequest{App: "push", Stream: "rec"}, &info); st != 200 {
		t.Fatalf("stop: %d", st)
	}
	if st := te.control(t, "POST", engineapi.PathRecordingStop, engineapi.StopRecordingRequest{App: "push", Stream: "rec"}, &e); st != 404 ||
		e.Code != engineapi.CodeNotRecording {
		t.Fatalf("stop of a stream not recorded: %d %+v", st, e)
	}
	if info.Dropped != 0 {
		t.Fatalf("the recorder dropped %d frames", info.Dropped)
	}

	files := recordedFiles(t, filepath.Join(te.cfg.DataDir, "record"))
	if len(files) < 4 || len(files) != info.Files {
		t.Fatalf("%d files on disk, %d reported by the recorder", len(files), info.Files)
	}
	type seg struct {
		name         string
		video, audio []mediaprobe.FilePacket
	}
	var segs []seg
	for _, f := range files {
		mediaprobe.Decode(t, f)
		p := mediaprobe.ProbeFile(t, f)
		s := seg{name: filepath.Base(f), video: p.Kind("video"), audio: p.Kind("audio")}
		if len(s.video) == 0 || !strings.Contains(s.video[0].Flags, "K") {
			t.Fatalf("%s does not start with a keyframe", s.name)
		}
		segs = append(segs, s)
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].video[0].DTS < segs[j].video[0].DTS })
	var video, audio int
	for i, s := range segs {
		video += len(s.video)
		audio += len(s.audio)
		if i == 0 {
			continue
		}
		prev := segs[i-1]
		lv := prev.video[len(prev.video)-1]
		if got, want := s.video[0].DTS, lv.DTS+lv.Duration; got != want || lv.Duration != 3600 {
			t.Errorf("%s starts its video at DTS %d; %s ended at %d + %d", s.name, got, prev.name, lv.DTS, lv.Duration)
		}
		la := prev.audio[len(prev.audio)-1]
		if gap := s.audio[0].DTS - la.DTS; gap < 1022 || gap > 1026 {
			t.Errorf("%s starts its audio %d samples after %s's last audio frame, not one AAC frame", s.name, gap, prev.name)
		}
	}
	src := mediaprobe.ProbeFile(t, local)
	srcVideo, srcAudio := src.Kind("video"), src.Kind("audio")
	hubVideo, hubAudio := counted()
	t.Logf("ffmpeg published %d video and %d audio frames, the hub passed on %d and %d, recorded %d and %d in %d files",
		len(srcVideo), len(srcAudio), hubVideo, hubAudio, video, audio, len(segs))
	if audio != hubAudio || video != hubVideo {
		t.Errorf("recorded %d video and %d audio frames; the hub passed on %d and %d", video, audio, hubVideo, hubAudio)
	}
	// The hub starts a stream at its first video keyframe: audio that
	// arrived before it reaches no reader; ffmpeg's RTP muxer may keep its
	// last AAC frame (it packs several into a packet) when it tears down.
	if audio < len(srcAudio)-8 {
		t.Errorf("recorded %d audio frames, ffmpeg published %d", audio, len(srcAudio))
	}
	if video != len(srcVideo) {
		t.Errorf("recorded %d video frames, published %d", video, len(srcVideo))
	}

}

// countHubFrames counts the frames the hub hands a draining reader of
// path (as the recorder's) until the stream ends; the function it returns
// waits for that and answers the video and audio counts.
func countHubFrames(t *testing.T, te *testEngine, path media.Path) func() (video, audio int) {
	t.Helper()
	done := make(chan [2]int, 1)
	go func() {
		var n [2]int
		rd, err := te.hub.SubscribeDrain(context.Background(), path, "test counter")
		if err != nil {
			done <- n
			return
		}
		defer rd.Close()
		var pkts []*hub.Packet
		for {
			pkts, err = rd.Next(context.Background(), pkts[:0])
			if err != nil {
				done <- n
				return
			}
			for _, p := range pkts {
				if p.Frame.Track.Kind() == media.KindVideo {
					n[0]++
				} else {
					n[1]++
				}
			}
		}
	}()
	return func() (int, int) {
		select {
		case n := <-done:
			return n[0], n[1]
		case <-time.After(30 * time.Second):
			t.Fatal("the counting reader did not see the stream end")
			return 0, 0
		}
	}
}

// recordedFiles lists the MP4 files under a recording root.
func recordedFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".mp4") {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRecordMP4Hook records the demo stream in 1 s files and checks the
// on_record_mp4 reports a hook receiver gets: one per file, with the
// file's id, base name, path under the root, size, start and duration.
func TestRecordMP4Hook(t *testing.T) {
	t.Parallel()
	rc, url := startHookReceiver(t)
	te := startEngine(t, func(c *engineapi.Config) { c.Hooks.URL = url })
	if st := te.control(t, "POST", engineapi.PathRecordings, engineapi.StartRecordingRequest{App: "live", Stream: "demo", SegmentSeconds: 1}, nil); st != 200 {
		t.Fatalf("start: %d", st)
	}
	testkit.Eventually(t, 30*time.Second, "two on_record_mp4", func() bool { return rc.count(engineapi.HookOnRecordMP4) >= 2 })
	var info engineapi.RecordingInfo
	if st := te.control(t, "POST", engineapi.PathRecordingStop, engineapi.StopRecordingRequest{App: "live", Stream: "demo"}, &info); st != 200 {
		t.Fatalf("stop: %d", st)
	}
	testkit.Eventually(t, 30*time.Second, "a report of every file", func() bool { return rc.count(engineapi.HookOnRecordMP4) == info.Files })
	root := filepath.Join(te.cfg.DataDir, "record")
	rc.mu.Lock()
	raws := append([]json.RawMessage(nil), rc.got[engineapi.HookOnRecordMP4]...)
	rc.mu.Unlock()
	seen := map[string]bool{}
	for _, raw := range raws {
		var h engineapi.RecordMP4Hook
		if err := json.Unmarshal(raw, &h); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(h.FilePath)))
		if err != nil || st.Size() != h.FileSize || seen[h.FileID] || uuid.Validate(h.FileID) != nil {
			t.Fatalf("on_record_mp4 %s: file %v, %d bytes on disk", raw, err, st.Size())
		}
		seen[h.FileID] = true
		if h.MediaServerID != "n1" || h.App != "live" || h.Stream != "demo" || strings.Contains(h.FileName, "/") ||
			filepath.Base(h.FilePath) != h.FileName || filepath.IsAbs(h.FilePath) || h.TimeLen <= 0 || (h.Reason == "duration" && h.TimeLen < 0.9) || h.Frames == 0 ||
			time.Since(h.StartTime) > time.Minute || strings.Join(h.Codecs, ",") != "H264,AAC" {
			t.Fatalf("on_record_mp4 %s", raw)
		}
	}
}

// TestAcceptanceRecordingH265G711 records a GStreamer RTSP camera serving
// H.265 and G.711 A-law (an independent RTSP server, pulled by the engine)
// in 2 s files: every file decodes in ffmpeg with hevc and pcm_alaw
// tracks (audio in every full file), starts with a keyframe, and each next
// file's first video DTS
// follows the previous file's last by one frame.
func TestAcceptanceRecordingH265G711(t *testing.T) {
	t.Parallel()
	cam := peers.StartGStreamer(t)
	te := startEngine(t, noDemo)
	if st := te.control(t, "POST", engineapi.PathRecordings, engineapi.StartRecordingRequest{App: "cam", Stream: "hevc", SegmentSeconds: 2}, nil); st != 200 {
		t.Fatalf("start: %d", st)
	}
	s := addProxy(t, te, engineapi.AddProxyRequest{ID: "hevc", URL: cam.URL("", "h265pcma"), App: "cam", Stream: "hevc", Transport: "tcp"})
	if trackCodecs(s) != "video:H265,audio:PCMA" {
		t.Fatalf("tracks %s", trackCodecs(s))
	}
	testkit.Eventually(t, 60*time.Second, "four files", func() bool {
		var l engineapi.RecordingList
		te.control(t, "GET", engineapi.PathRecordings, nil, &l)
		return len(l.Recordings) == 1 && l.Recordings[0].Files >= 4
	})
	var info engineapi.RecordingInfo
	te.control(t, "POST", engineapi.PathRecordingStop, engineapi.StopRecordingRequest{App: "cam", Stream: "hevc"}, &info)
	type seg struct {
		name  string
		video []mediaprobe.FilePacket
	}
	var segs []seg
	for _, f := range recordedFiles(t, filepath.Join(te.cfg.DataDir, "record")) {
		mediaprobe.Decode(t, f)
		p := mediaprobe.ProbeFile(t, f)
		var codecs []string
		for _, st := range p.Streams {
			codecs = append(codecs, st.CodecName)
		}
		// The file a stop closes may hold a few frames only.
		if strings.Join(codecs, ",") != "hevc,pcm_alaw" || (len(p.Kind("video")) >= 25 && len(p.Kind("audio")) == 0) {
			t.Fatalf("%s: streams %v", f, codecs)
		}
		v := p.Kind("video")
		if len(v) == 0 || !strings.Contains(v[0].Flags, "K") {
			t.Fatalf("%s does not start with a keyframe", f)
		}
		segs = append(segs, seg{name: filepath.Base(f), video: v})
	}
	if len(segs) < 4 || len(segs) != info.Files || info.Dropped != 0 {
		t.Fatalf("%d files on disk, %d reported, %d frames dropped", len(segs), info.Files, info.Dropped)
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].video[0].DTS < segs[j].video[0].DTS })
	for i := 1; i < len(segs); i++ {
		prev, cur := segs[i-1], segs[i]
		last := prev.video[len(prev.video)-1]
		if cur.video[0].DTS != last.DTS+last.Duration || last.Duration < 3000 || last.Duration > 4200 {
			t.Errorf("%s starts at %d; %s ended at %d + %d", cur.name, cur.video[0].DTS, prev.name, last.DTS, last.Duration)
		}
	}
}
