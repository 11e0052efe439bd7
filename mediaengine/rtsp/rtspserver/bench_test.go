package rtspserver_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspserver"
)

// benchSource plays the same frames n times.
type benchSource struct {
	tracks []*media.Track
	frames []*media.Frame
	n, i   int
	done   chan struct{}
}

func (s *benchSource) Tracks() []*media.Track { return s.tracks }

func (s *benchSource) Next(ctx context.Context) (*media.Frame, error) {
	if s.i >= s.n {
		close(s.done)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	f := s.frames[s.i%len(s.frames)]
	s.i++
	return f, nil
}

func (s *benchSource) Close() error { return nil }

type benchHandler struct{ src *benchSource }

func (h *benchHandler) Publish(context.Context, *rtspserver.PublishRequest) (rtspserver.FrameWriter, error) {
	return nil, errors.New("no")
}
func (h *benchHandler) Play(context.Context, *rtspserver.PlayRequest) (rtspserver.FrameSource, error) {
	return h.src, nil
}

// BenchmarkServerPlayTCP is the server's cost per frame sent to one
// player over TCP interleaved: packetising, framing and the socket write,
// with a 1 Mbit/s-like mix of a 40 kB keyframe and 4 kB frames, read on
// the other side of a loopback connection.
func BenchmarkServerPlayTCP(b *testing.B) {
	track := &media.Track{ID: 0, Codec: media.CodecH264, ClockRate: 90000,
		SPS: []byte{0x67, 0x42, 0xc0, 0x1e, 0xd9, 0x00, 0xa0, 0x3d, 0xa1}, PPS: []byte{0x68, 0xcb, 0x83, 0xcb, 0x20}}
	frames := []*media.Frame{{Track: track, Keyframe: true, NALUs: [][]byte{append([]byte{0x65}, make([]byte, 40000)...)}}}
	for i := 1; i < 25; i++ {
		pts := time.Duration(i) * 40 * time.Millisecond
		frames = append(frames, &media.Frame{Track: track, PTS: pts, DTS: pts, NALUs: [][]byte{append([]byte{0x41}, make([]byte, 4000)...)}})
	}
	src := &benchSource{tracks: []*media.Track{track}, frames: frames, n: b.N, done: make(chan struct{})}
	srv, err := rtspserver.New(rtspserver.Config{Addr: "127.0.0.1:0"}, &benchHandler{src: src})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	w := bufio.NewWriter(conn)
	r := rtsp.NewMessageReader(conn)
	url := rtspURL(srv.Addr(), "b/s")
	var m rtsp.Message
	for i, req := range []*rtsp.Request{
		{Method: rtsp.MethodDescribe, URL: url, Header: rtsp.Header{{Name: "CSeq", Value: "1"}}},
		{Method: rtsp.MethodSetup, URL: url + "/trackID=0", Header: rtsp.Header{{Name: "CSeq", Value: "2"}, {Name: "Transport", Value: "RTP/AVP/TCP;unicast;interleaved=0-1"}}},
		{Method: rtsp.MethodPlay, URL: url, Header: rtsp.Header{{Name: "CSeq", Value: "3"}}},
	} {
		if i > 0 {
			req.Header.Add("Session", sessionOf(srv))
		}
		req.Write(w)
		w.Flush()
		if err := r.Read(&m); err != nil || m.Response.StatusCode != 200 {
			b.Fatalf("%s: %v %+v", req.Method, err, m.Response)
		}
	}
	size := 0
	for _, f := range frames {
		size += f.Size()
	}
	b.SetBytes(int64(size / len(frames)))
	b.ReportAllocs()
	b.ResetTimer()
	go io.Copy(io.Discard, conn)
	<-src.done
	b.StopTimer()
}

func sessionOf(s *rtspserver.Server) string {
	for _, si := range s.Sessions() {
		return string(si.ID)
	}
	return ""
}
