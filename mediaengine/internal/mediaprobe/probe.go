// Package mediaprobe checks what a real player receives from the engine:
// it runs Debian's ffprobe against a URL for a given time and checks the
// streams and every packet (codec, size, count against the frame rate,
// monotonic timestamps). Tests of every output use it, so they judge the
// engine by an independent demuxer rather than by bytes the engine wrote.
package mediaprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// Stream is one stream as ffprobe reports it.
type Stream struct {
	Index      int    `json:"index"`
	CodecName  string `json:"codec_name"`
	CodecType  string `json:"codec_type"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	SampleRate string `json:"sample_rate"`
	Channels   int    `json:"channels"`
}

// Packet is one packet as ffprobe reports it.
type Packet struct {
	StreamIndex int    `json:"stream_index"`
	PTSTime     string `json:"pts_time"`
	DTSTime     string `json:"dts_time"`
	Flags       string `json:"flags"`
}

// Result is what ffprobe read.
type Result struct {
	Streams []Stream `json:"streams"`
	Packets []Packet `json:"packets"`
}

// Probe reads url with ffprobe for the given stream time. The test fails
// when ffprobe is missing: it is a declared test dependency
// (scripts/install-deps.sh), never a reason to skip.
func Probe(t *testing.T, url string, seconds int, extraArgs ...string) Result {
	t.Helper()
	bin, err := exec.LookPath("ffprobe")
	if err != nil {
		t.Fatalf("ffprobe is required (Debian package ffmpeg; scripts/install-deps.sh test installs it): %v", err)
	}
	args := append([]string{"-v", "error", "-rw_timeout", "10000000"}, extraArgs...)
	args = append(args, "-read_intervals", "%+"+strconv.Itoa(seconds), "-show_streams", "-show_packets",
		"-show_entries", "packet=stream_index,pts_time,dts_time,flags:stream=index,codec_name,codec_type,width,height,sample_rate,channels",
		"-of", "json", url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+30)*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		msg := ""
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			msg = string(ee.Stderr)
		}
		t.Fatalf("ffprobe %s: %v %s", url, err, msg)
	}
	var r Result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("ffprobe output: %v", err)
	}
	return r
}

// Want describes the expected media.
type Want struct {
	VideoCodec    string
	Width, Height int
	FPS           float64
	AudioCodec    string
	SampleRate    int
	Channels      int
	// AudioFrameSamples is the samples per audio packet (1024 for AAC);
	// 0 checks only that audio is present and in order (G.711 frames are
	// as long as the sender makes them).
	AudioFrameSamples int
	// MinSeconds is the least span of video timestamps.
	MinSeconds float64
	// LeadingWithoutDTS is how many packets at the start of each stream
	// may come without a decoding timestamp. RTP carries none: ffmpeg's
	// RTSP demuxer derives DTS once it has seen the reorder delay, and
	// gives the first packet no timestamp at all (GStreamer's RTSP server
	// gets the same from it). Such packets are left out of the counts.
	LeadingWithoutDTS int
}

// Check verifies r against w: codecs and size, packet counts within 2% of
// what the frame rates say the timestamp span holds, and DTS increasing
// per stream.
func (r Result) Check(t *testing.T, w Want) {
	t.Helper()
	var video, audio *Stream
	for i := range r.Streams {
		s := &r.Streams[i]
		switch s.CodecType {
		case "video":
			video = s
		case "audio":
			audio = s
		}
	}
	if w.VideoCodec == "" {
		if video != nil {
			t.Fatalf("unexpected video stream %+v", video)
		}
	} else if video == nil || video.CodecName != w.VideoCodec || video.Width != w.Width || video.Height != w.Height {
		t.Fatalf("video stream %+v, want %s %dx%d", video, w.VideoCodec, w.Width, w.Height)
	}
	if audio == nil || audio.CodecName != w.AudioCodec || audio.SampleRate != strconv.Itoa(w.SampleRate) || audio.Channels != w.Channels {
		t.Fatalf("audio stream %+v, want %s %d Hz %d ch", audio, w.AudioCodec, w.SampleRate, w.Channels)
	}
	aSpan, aCount := r.checkStream(t, audio.Index, w.LeadingWithoutDTS)
	if video == nil {
		if aSpan < w.MinSeconds {
			t.Fatalf("read %.2f s of audio, want at least %.0f s", aSpan, w.MinSeconds)
		}
		if w.AudioFrameSamples == 0 {
			return
		}
		within := float64(aCount) - (aSpan*float64(w.SampleRate)/float64(w.AudioFrameSamples) + 1)
		if within > 0.02*float64(aCount) || -within > 0.02*float64(aCount) {
			t.Fatalf("audio: %d packets over %.3f s, want %.0f (±2%%)", aCount, aSpan, aSpan*float64(w.SampleRate)/float64(w.AudioFrameSamples)+1)
		}
		return
	}
	vSpan, vCount := r.checkStream(t, video.Index, w.LeadingWithoutDTS)
	if vSpan < w.MinSeconds {
		t.Fatalf("read %.2f s of video, want at least %.0f s (%s)", vSpan, w.MinSeconds, r.Describe())
	}
	within := func(kind string, got int, span, rate float64) {
		want := span*rate + 1
		if math.Abs(float64(got)-want) > 0.02*want {
			t.Fatalf("%s: %d packets over %.3f s, want %.0f (±2%%)", kind, got, span, want)
		}
		t.Logf("%s: %d packets over %.3f s (expected %.0f)", kind, got, span, want)
	}
	within("video", vCount, vSpan, w.FPS)
	if w.AudioFrameSamples == 0 {
		t.Logf("audio: %d packets over %.3f s", aCount, aSpan)
		return
	}
	within("audio", aCount, aSpan, float64(w.SampleRate)/float64(w.AudioFrameSamples))
}

// checkStream checks DTS increases and returns the DTS span and count;
// up to leading packets at the start may have no DTS and are skipped.
func (r Result) checkStream(t *testing.T, index, leading int) (float64, int) {
	t.Helper()
	first, last := math.NaN(), math.NaN()
	n, skipped := 0, 0
	for _, p := range r.Packets {
		if p.StreamIndex != index {
			continue
		}
		ts := p.DTSTime
		if n == 0 && skipped < leading && (ts == "" || ts == "N/A") {
			skipped++
			continue
		}
		if ts == "" || ts == "N/A" {
			ts = p.PTSTime
		}
		d, err := strconv.ParseFloat(ts, 64)
		if err != nil {
			t.Fatalf("stream %d packet %d without timestamp (%q)", index, n+skipped, ts)
		}
		if n > 0 && d <= last {
			t.Fatalf("stream %d: DTS %.6f after %.6f is not increasing (packet %d)", index, d, last, n+skipped)
		}
		if n == 0 {
			first = d
		}
		last = d
		n++
	}
	if n < 2 {
		t.Fatalf("stream %d: %d packets", index, n)
	}
	return last - first, n
}

// Describe is a short summary for logs: per stream, its packets and the
// first and last timestamps (which tell why a read ended early).
func (r Result) Describe() string {
	out := fmt.Sprintf("%d streams, %d packets", len(r.Streams), len(r.Packets))
	for _, s := range r.Streams {
		n, first, last := 0, "", ""
		for _, p := range r.Packets {
			if p.StreamIndex == s.Index {
				if n == 0 {
					first = p.PTSTime
				}
				last = p.PTSTime
				n++
			}
		}
		out += fmt.Sprintf("; %s: %d packets, PTS %s .. %s", s.CodecType, n, first, last)
	}
	return out
}
