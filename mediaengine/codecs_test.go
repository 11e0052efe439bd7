package mediaengine

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/codec/h265"
	"github.com/svcplatform/svc/mediaengine/filesource"
	"github.com/svcplatform/svc/mediaengine/flv"
	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/internal/mediaprobe"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
)

func ffmpeg(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatalf("ffmpeg is required (Debian package ffmpeg; scripts/install-deps.sh test installs it): %v", err)
	}
	if out, err := exec.Command(bin, append([]string{"-v", "error", "-y"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, out)
	}
}

// TestH265Outputs pulls an H.265+AAC clip (made by ffmpeg's libx265) and
// reads HTTP-fMP4 and HLS with ffprobe; HTTP-FLV carries it as Enhanced FLV,
// which Debian's ffmpeg 5.1 predates, so its tags are checked by structure.
func TestH265Outputs(t *testing.T) {
	clip := filepath.Join(t.TempDir(), "hevc.ts")
	ffmpeg(t, "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=sample_rate=44100", "-t", "4",
		"-c:v", "libx265", "-x265-params", "log-level=none:keyint=25", "-pix_fmt", "yuv420p", "-c:a", "aac", "-f", "mpegts", clip)
	te := startEngine(t, func(c *engineapi.Config) { c.DemoFile, c.DemoPath = "", "" })
	var info engineapi.ProxyInfo
	if st := te.control(t, "POST", engineapi.PathProxies, engineapi.AddProxyRequest{ID: "hevc", URL: "file://" + clip, App: "live", Stream: "hevc"}, &info); st != 200 {
		t.Fatalf("add proxy: %d", st)
	}
	want := mediaprobe.Want{VideoCodec: "hevc", Width: 320, Height: 240, FPS: 25, AudioCodec: "aac", SampleRate: 44100, Channels: 1,
		AudioFrameSamples: 1024, MinSeconds: 5}
	for _, tc := range []struct{ name, path string }{{"http-fmp4", "/live/hevc.live.mp4"}, {"hls", "/live/hevc/hls.m3u8"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mediaprobe.Probe(t, te.mediaURL(tc.path), 6).Check(t, want)
		})
	}
	t.Run("http-flv", func(t *testing.T) {
		t.Parallel()
		resp, err := httpGet(te.mediaURL("/live/hevc.live.flv"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		r := flv.NewReader(resp.Body)
		frames := 0
		for frames < 30 {
			tag, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if tag.Type != flv.TagVideo {
				continue
			}
			if tag.Data[0]&0x80 == 0 || !bytes.Equal(tag.Data[1:5], []byte("hvc1")) {
				t.Fatalf("video tag % x is not Enhanced FLV hvc1", tag.Data[:5])
			}
			if _, seq, _ := flv.VideoInfo(tag.Data); seq {
				c, err := h265.ParseDecoderConfig(tag.Data[5:])
				if err != nil || len(c.SPS) != 1 {
					t.Fatalf("sequence start: %+v, %v", c, err)
				}
				continue
			}
			frames++
		}
	})
}

// TestG711Outputs publishes A-law audio (encoded by ffmpeg) through the
// hub in real time and reads it back from HTTP-FLV and HTTP-fMP4 with
// ffprobe.
func TestG711Outputs(t *testing.T) {
	raw := filepath.Join(t.TempDir(), "tone.alaw")
	ffmpeg(t, "-f", "lavfi", "-i", "sine=frequency=600:sample_rate=8000", "-t", "10", "-ac", "1", "-f", "alaw", raw)
	samples, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	te := startEngine(t, func(c *engineapi.Config) { c.DemoFile, c.DemoPath = "", "" })
	track := &media.Track{ID: 0, Codec: media.CodecPCMA, ClockRate: 8000, SampleRate: 8000, Channels: 1}
	pub, err := te.Publish(context.Background(), media.Path{App: "live", Stream: "g711"}, hub.Origin{Kind: "test"}, nil, []*media.Track{track})
	if err != nil {
		t.Fatal(err)
	}
	clip := &filesource.Clip{Tracks: []*media.Track{track}}
	const frame = 160 // 20 ms
	for i := 0; i+frame <= len(samples); i += frame {
		ts := time.Duration(i) * time.Second / 8000
		clip.Frames = append(clip.Frames, &media.Frame{Track: track, PTS: ts, DTS: ts, Payload: samples[i : i+frame]})
	}
	clip.Duration = time.Duration(len(clip.Frames)) * 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		filesource.Play(ctx, clip, pub, 0)
	}()
	t.Cleanup(func() { cancel(); <-done; pub.Close() })
	want := mediaprobe.Want{AudioCodec: "pcm_alaw", SampleRate: 8000, Channels: 1, AudioFrameSamples: frame, MinSeconds: 5}
	for _, tc := range []struct{ name, path string }{{"http-flv", "/live/g711.live.flv"}, {"http-fmp4", "/live/g711.live.mp4"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mediaprobe.Probe(t, te.mediaURL(tc.path), 6).Check(t, want)
		})
	}
}
