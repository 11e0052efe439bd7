package rtspserver_test

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspclient"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspserver"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtsptest"
	"github.com/svcplatform/svc/test/testkit"
)

func startServer(t *testing.T, cfg rtspserver.Config, h rtspserver.Handler) *rtspserver.Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.UDPRTPAddr == "" {
		cfg.UDPRTPAddr = "127.0.0.1:0"
	}
	s, err := rtspserver.New(cfg, h)
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
	t.Parallel() // real-time media: mostly waiting
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
			// A short session timeout: ffmpeg sends no RTSP requests while
			// it records over UDP, so only its packets keep the session.
			srv := startServer(t, rtspserver.Config{SessionTimeout: 3 * time.Second}, r)
			url := rtspURL(srv.Addr(), "live/"+tt.codec)
			// The publisher outlasts the readers (stopped when the test ends):
			// on a loaded machine their start and 10 s of reading took more
			// than 16 s, and the session was gone before it was checked.
			startProcess(t, "ffmpeg", publishArgs(tt.codec, tt.publish, url, 60)...)
			path := media.Path{Vhost: media.DefaultVhost, App: "live", Stream: tt.codec}
			testkit.Eventually(t, 10*time.Second, "the published stream", func() bool {
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

// Hostile or broken clients get an error or a closed connection, and the
// server goes on serving everyone else.
func TestServerSurvivesBadClients(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	r := rtsptest.NewRelay()
	srv := startServer(t, rtspserver.Config{SessionTimeout: 2 * time.Second}, r)
	url := rtspURL(srv.Addr(), "live/x")
	for _, tt := range []struct {
		name, send string
		wantStatus int // 0: the server closes the connection
	}{
		{"garbage", "\x00\x01\x02 hello\r\n\r\n", 0},
		{"endless header", "OPTIONS " + url + " RTSP/1.0\r\nX: " + strings.Repeat("a", rtsp.MaxHeaderBytes+10), 0},
		{"huge body", "ANNOUNCE " + url + " RTSP/1.0\r\nCSeq: 1\r\nContent-Length: 100000000\r\n\r\n", 0},
		{"SDP without a track the engine carries", "ANNOUNCE " + url + " RTSP/1.0\r\nCSeq: 1\r\nContent-Type: application/sdp\r\nContent-Length: 50\r\n\r\n" +
			"v=0\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:96 VP9/90000\r\n", rtsp.StatusBadRequest},
		{"SETUP without transport", "SETUP " + url + "/trackID=0 RTSP/1.0\r\nCSeq: 1\r\n\r\n", rtsp.StatusUnsupportedTransport},
		{"PLAY before SETUP", "PLAY " + url + " RTSP/1.0\r\nCSeq: 1\r\n\r\n", rtsp.StatusMethodNotValidInState},
		{"RTSP/2.0", "OPTIONS * RTSP/2.0\r\nCSeq: 1\r\n\r\n", rtsp.StatusVersionNotSupported},
		{"unknown method", "BREW " + url + " RTSP/1.0\r\nCSeq: 1\r\n\r\n", rtsp.StatusNotImplemented},
		{"not an rtsp URL", "DESCRIBE http://x/y RTSP/1.0\r\nCSeq: 1\r\n\r\n", rtsp.StatusBadRequest},
		{"silent client", "", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.Write([]byte(tt.send))
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			var m rtsp.Message
			err = rtsp.NewMessageReader(conn).Read(&m)
			switch {
			case tt.wantStatus == 0 && err == nil:
				t.Fatalf("answered %+v, want the connection closed", m.Response)
			case tt.wantStatus == 0:
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatal("the server kept the connection open")
				}
			case err != nil || m.Response == nil || m.Response.StatusCode != tt.wantStatus:
				t.Fatalf("got %v %+v, want %d", err, m.Response, tt.wantStatus)
			}
		})
	}
	// Past MaxConnections a connection is closed at once.
	limited := startServer(t, rtspserver.Config{MaxConnections: 1}, r)
	first, err := net.Dial("tcp", limited.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	testkit.Eventually(t, 2*time.Second, "the first connection", func() bool {
		second, err := net.Dial("tcp", limited.Addr().String())
		if err != nil {
			return false
		}
		defer second.Close()
		second.SetReadDeadline(time.Now().Add(time.Second))
		_, err = second.Read(make([]byte, 1))
		return errors.Is(err, io.EOF)
	})
	// The server still serves.
	c, err := rtspclient.Dial(context.Background(), url, rtspclient.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Describe(context.Background()); !errors.Is(err, rtsp.ErrNotFound) {
		t.Fatalf("DESCRIBE after the bad clients: %v", err)
	}
}
