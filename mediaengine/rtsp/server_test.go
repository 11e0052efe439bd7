package rtsp_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtsptest"
)

func startServer(t *testing.T, cfg rtsp.ServerConfig, h rtsp.Handler) *rtsp.Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.UDPRTPAddr == "" {
		cfg.UDPRTPAddr = "127.0.0.1:0"
	}
	s, err := rtsp.NewServer(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// publishArgs are ffmpeg arguments that publish a live test pattern
// (25 fps; "h264" has B-frames, "h264-no-b" none, "hevc") and a sine tone
// for seconds.
func publishArgs(codec, transport, url string, seconds int) []string {
	args := []string{"-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
		"-t", itoa(seconds)}
	switch codec {
	case "h264":
		args = append(args, "-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "25", "-pix_fmt", "yuv420p")
	case "h264-no-b":
		args = append(args, "-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "25", "-pix_fmt", "yuv420p")
	case "hevc":
		args = append(args, "-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=error:keyint=25", "-pix_fmt", "yuv420p")
	}
	return append(args, "-c:a", "aac", "-b:a", "64k", "-f", "rtsp", "-rtsp_transport", transport, url)
}

// readArgs are ffmpeg arguments that read seconds of an RTSP stream into
// a file without re-encoding.
func readArgs(transport, url, out string, seconds int) []string {
	return []string{"-hide_banner", "-loglevel", "error", "-rtsp_transport", transport, "-i", url,
		"-t", itoa(seconds), "-c", "copy", "-y", out}
}

// ffmpeg publishes into the server over TCP and UDP; the relay hands the
// frames to the play side, and ffmpeg reads 10 s back over TCP and UDP.
// ffprobe checks what was read.
func TestServerPublishAndPlayWithFFmpeg(t *testing.T) {
	tests := []struct {
		name, codec, publish string
		readers              []string
	}{
		{"H.264+AAC published over TCP", "h264", "tcp", []string{"tcp", "udp"}},
		{"H.264+AAC published over UDP", "h264", "udp", []string{"tcp"}},
		{"H.265+AAC published over TCP", "hevc", "tcp", []string{"tcp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := rtsptest.NewRelay()
			srv := startServer(t, rtsp.ServerConfig{}, r)
			url := rtspURL(srv.Addr(), "live/"+tt.codec)
			startProcess(t, "ffmpeg", publishArgs(tt.codec, tt.publish, url, 16)...)
			path := media.Path{Vhost: media.DefaultVhost, App: "live", Stream: tt.codec}
			waitFor(t, 10*time.Second, "the published stream", func() bool {
				s := r.Stream(path)
				return s != nil && s.Keyframes.Load() > 0
			})
			dir := t.TempDir()
			var wg sync.WaitGroup
			files := map[string]string{}
			for _, transport := range tt.readers {
				out := filepath.Join(dir, transport+".mp4")
				files[transport] = out
				wg.Add(1)
				go func() {
					defer wg.Done()
					runPeer(t, 40*time.Second, "ffmpeg", readArgs(transport, url, out, 10)...)
				}()
			}
			wg.Wait()
			for transport, out := range files {
				t.Run("read over "+transport, func(t *testing.T) {
					checkRecording(t, out, tt.codec, "aac", 320, 240, 10, 25)
				})
			}
			sessions := srv.Sessions()
			if len(sessions) == 0 || !sessions[0].Publishing || sessions[0].Transport != tt.publish {
				t.Fatalf("sessions %+v", sessions)
			}
			t.Logf("publisher: %d bytes, %d packets lost, %d frames dropped", sessions[0].Bytes, sessions[0].LostPackets, sessions[0].DroppedFrames)
		})
	}
}
