package ps

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/peers"
	"github.com/svcplatform/svc/mediaengine/media"
)

// encode runs a peer that writes a program stream to standard output.
func encode(t *testing.T, args ...string) []byte {
	t.Helper()
	peers.Require(t, args[0])
	var stderr bytes.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", args[0], err, stderr.String())
	}
	return out
}

// gstH264AAC is 50 frames of H.264 and 2 s of AAC muxed by GStreamer's
// mpegpsmux, which writes a PSM.
func gstH264AAC(t *testing.T) []byte {
	return encode(t, "gst-launch-1.0", "-q", "videotestsrc", "num-buffers=50", "!",
		"video/x-raw,format=I420,width=320,height=240,framerate=25/1", "!", "x264enc", "key-int-max=25", "!",
		"video/x-h264,profile=main", "!", "h264parse", "!", "mux.", "audiotestsrc", "num-buffers=20", "samplesperbuffer=4410", "!",
		"audio/x-raw,rate=44100,channels=1", "!", "avenc_aac", "!", "aacparse", "!", "mux.", "mpegpsmux", "name=mux", "!", "fdsink", "fd=1")
}

// ffmpegVOB is 50 frames of codec in ffmpeg's VOB muxer: no PSM.
func ffmpegVOB(t *testing.T, codec string) []byte {
	return encode(t, "ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25",
		"-frames:v", "50", "-c:v", codec, "-x265-params", "log-level=error", "-g", "25", "-pix_fmt", "yuv420p", "-preset", "ultrafast",
		"-f", "vob", "pipe:1")
}

// demux feeds b in pieces of random size and returns the units and frames.
func demux(b []byte, maxChunk int, seed uint64) ([]Unit, []*media.Frame, *FrameBuilder, Stats) {
	var units []Unit
	var frames []*media.Frame
	fb := NewFrameBuilder()
	now := time.Now()
	d := NewDemuxer(func(u Unit) {
		units = append(units, u)
		frames = fb.Add(u, now, frames)
	})
	r := rand.New(rand.NewPCG(seed, 1))
	for len(b) > 0 {
		n := min(len(b), 1+r.IntN(maxChunk))
		d.Write(b[:n])
		b = b[n:]
	}
	d.Flush()
	return units, frames, fb, d.Stats()
}

func countFrames(frames []*media.Frame) (map[media.Codec]int, int) {
	n, keys := map[media.Codec]int{}, 0
	for _, f := range frames {
		n[f.Track.Codec]++
		if f.Keyframe {
			keys++
		}
	}
	return n, keys
}

func TestDemuxerReadsRealProgramStreams(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ps    func(t *testing.T) []byte
		video media.Codec
		psm   bool
	}{
		{"gstreamer mpegpsmux h264+aac with psm", gstH264AAC, media.CodecH264, true},
		{"ffmpeg vob h264 without psm", func(t *testing.T) []byte { return ffmpegVOB(t, "libx264") }, media.CodecH264, false},
		{"ffmpeg vob h265 without psm", func(t *testing.T) []byte { return ffmpegVOB(t, "libx265") }, media.CodecH265, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.ps(t)
			whole, frames, fb, st := demux(b, len(b), 1)
			if (st.PSMs > 0) != tc.psm || st.Resyncs != 0 || st.Dropped != 0 || st.Packs == 0 {
				t.Fatalf("stats %+v", st)
			}
			n, keys := countFrames(frames)
			if n[tc.video] != 50 || keys != 2 {
				t.Fatalf("video frames %v, keyframes %d, want 50 and 2", n, keys)
			}
			v := fb.Tracks()[0]
			if tc.psm {
				v = fb.Tracks()[1] // mpegpsmux's first PES is audio
				if n[media.CodecAAC] < 80 || fb.Tracks()[0].SampleRate != 44100 {
					t.Fatalf("audio: %v, track %v", n, fb.Tracks()[0])
				}
			}
			if v.Codec != tc.video || !v.Ready() || v.Width != 320 || v.Height != 240 {
				t.Fatalf("video track %v ready %v", v, v.Ready())
			}
			for i := 1; i < len(frames); i++ {
				if frames[i].Track == frames[i-1].Track && frames[i].DTS <= frames[i-1].DTS && frames[i].Track.Kind() == media.KindVideo {
					t.Fatalf("DTS not increasing at frame %d", i)
				}
			}
			// Any split of the input into pieces gives the same units.
			for seed := uint64(2); seed < 6; seed++ {
				units, _, _, _ := demux(b, 1500, seed)
				if len(units) != len(whole) {
					t.Fatalf("seed %d: %d units, want %d", seed, len(units), len(whole))
				}
				for i := range units {
					if units[i].PTS != whole[i].PTS || !bytes.Equal(units[i].Data, whole[i].Data) {
						t.Fatalf("seed %d: unit %d differs", seed, i)
					}
				}
			}
		})
	}
}

func TestDemuxerResyncsAfterGarbageAndLoss(t *testing.T) {
	b := ffmpegVOB(t, "libx264")
	_, clean, _, _ := demux(b, len(b), 1)
	// Garbage between every 2048-byte VOB sector, and one sector lost.
	var damaged []byte
	for i := 0; i < len(b); i += 2048 {
		if i == 20*2048 {
			continue
		}
		damaged = append(damaged, b[i:min(i+2048, len(b))]...)
		damaged = append(damaged, 0, 0, 1, 0x42, 0xff, 0x00, 0x00)
	}
	_, frames, _, st := demux(damaged, 4000, 7)
	if st.Resyncs == 0 {
		t.Fatal("no resync counted")
	}
	n, _ := countFrames(frames)
	if n[media.CodecH264] < len(clean)-5 {
		t.Fatalf("%d frames after damage, %d clean", n[media.CodecH264], len(clean))
	}
}

// TestDemuxerJoinsAFrameSplitOverPESPackets: GStreamer's mpegpsmux splits
// a frame larger than one PES (64 KB) over several and repeats the PTS and
// DTS on every piece; the pieces are one access unit, not one each (a
// 720p keyframe at 2 Mbit/s was cut in two, its first half published as
// the keyframe).
func TestDemuxerJoinsAFrameSplitOverPESPackets(t *testing.T) {
	b := encode(t, "gst-launch-1.0", "-q", "videotestsrc", "num-buffers=10", "pattern=snow", "!",
		"video/x-raw,format=I420,width=1280,height=720,framerate=25/1", "!", "x264enc", "speed-preset=ultrafast", "key-int-max=5",
		"bframes=0", "bitrate=20000", "!", "video/x-h264,profile=main", "!", "h264parse", "!", "mpegpsmux", "!", "fdsink", "fd=1")
	units, frames, _, _ := demux(b, 1400, 3)
	var large int
	for _, u := range units {
		if len(u.Data) > 0xffff {
			large++
		}
	}
	n, keys := countFrames(frames)
	if len(units) != 10 || n[media.CodecH264] != 10 || keys != 2 || large == 0 {
		t.Fatalf("%d units (%d over 64 KB), %d H.264 frames, %d keyframes; want 10 units, some over 64 KB, 10 frames, 2 keyframes",
			len(units), large, n[media.CodecH264], keys)
	}
}

func TestDemuxerBoundsAnAccessUnit(t *testing.T) {
	var units int
	d := NewDemuxer(func(Unit) { units++ })
	pes := func(withPTS bool) []byte {
		hdr := []byte{0x80, 0, 0}
		if withPTS {
			hdr = []byte{0x80, 0x80, 5, 0x21, 0, 1, 0, 1}
		}
		body := append(hdr, make([]byte, 60000)...)
		return append([]byte{0, 0, 1, 0xe0, byte(len(body) >> 8), byte(len(body))}, body...)
	}
	d.Write(pes(true))
	for i := 0; i < MaxUnitSize/60000+2; i++ {
		d.Write(pes(false))
	}
	d.Flush()
	if units != 0 || d.Stats().Dropped == 0 {
		t.Fatalf("units %d, stats %+v", units, d.Stats())
	}
}

func FuzzDemuxer(f *testing.F) {
	for _, name := range []string{"testdata/h264_aac_psm.ps", "testdata/h265_nopsm.vob"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(188))
	}
	f.Add([]byte{0, 0, 1, 0xbc, 0, 10, 0, 0, 0, 0, 0, 4, 0x1b, 0xe0, 0xff, 0xff}, uint16(3))
	f.Fuzz(func(t *testing.T, b []byte, chunk uint16) {
		fb := NewFrameBuilder()
		now := time.Now()
		var frames []*media.Frame
		d := NewDemuxer(func(u Unit) {
			if len(u.Data) > MaxUnitSize {
				t.Fatalf("unit of %d bytes", len(u.Data))
			}
			frames = fb.Add(u, now, frames[:0])
		})
		step := int(chunk%4096) + 1
		for i := 0; i < len(b); i += step {
			d.Write(b[i:min(i+step, len(b))])
			if i%7 == 0 {
				d.Reset()
			}
		}
		d.Flush()
	})
}
