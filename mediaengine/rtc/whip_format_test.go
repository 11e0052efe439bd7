package rtc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"
	"github.com/pion/webrtc/v4/pkg/media/h264reader"

	"github.com/svcplatform/svc/mediaengine/hub"
	svcmedia "github.com/svcplatform/svc/mediaengine/media"
)

// TestWHIPSenderUsesAnotherFormatOfTheCodec: a pion publisher with its
// default codecs offers six H.264 formats; the answer lists them in the
// offer's order, and pion sends on the first whose profile and
// packetization mode fit its track (payload type 106 for a constrained
// baseline track), not the answer's first (102). The stream is H.264
// either way: it becomes ready with the frames ffmpeg encoded.
func TestWHIPSenderUsesAnotherFormatOfTheCodec(t *testing.T) {
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatal("ffmpeg is required (scripts/install-deps.sh test installs it)")
	}
	var annexB bytes.Buffer
	cmd := exec.Command(ffmpeg, "-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-t", "3",
		"-pix_fmt", "yuv420p", "-c:v", "libx264", "-profile:v", "baseline", "-level", "3.1", "-g", "25", "-bsf:v", "h264_mp4toannexb", "-f", "h264", "-")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &annexB, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ffmpeg: %v %s", err, stderr.String())
	}

	ts := startServer(t)
	me := &webrtc.MediaEngine{}
	if err := me.RegisterDefaultCodecs(); err != nil {
		t.Fatal(err)
	}
	bound := &boundPayloadType{}
	ir := &interceptor.Registry{}
	ir.Add(bound)
	pc, err := webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithInterceptorRegistry(ir)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	track, err := webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeH264, ClockRate: 90000,
		SDPFmtpLine: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"}, "video", "pub")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pc.AddTransceiverFromTrack(track, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly}); err != nil {
		t.Fatal(err)
	}
	resp, answer := ts.post(t, "/live/pion/whip", "application/sdp", gatheredOffer(t, pc))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("WHIP: %d %s", resp.StatusCode, answer)
	}
	if first := strings.Fields(strings.SplitN(mediaSection(answer, "video"), "\n", 2)[0]); len(first) < 4 || first[3] != "102" {
		t.Fatalf("the answer's first video format is not 102: %q", first)
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for ctx.Err() == nil {
			r, err := h264reader.NewReader(bytes.NewReader(annexB.Bytes()))
			if err != nil {
				return
			}
			for ctx.Err() == nil {
				nal, err := r.NextNAL()
				if errors.Is(err, io.EOF) || err != nil {
					break
				}
				d := time.Duration(0)
				if nal.UnitType == h264reader.NalUnitTypeCodedSliceIdr || nal.UnitType == h264reader.NalUnitTypeCodedSliceNonIdr {
					d = 40 * time.Millisecond
					time.Sleep(d)
				}
				_ = track.WriteSample(media.Sample{Data: nal.Data, Duration: d})
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-sent })

	var st *hub.Stream
	deadline := time.Now().Add(30 * time.Second)
	for st == nil && time.Now().Before(deadline) {
		st, _ = ts.hub.Stream(svcmedia.Path{App: "live", Stream: "pion"})
		time.Sleep(20 * time.Millisecond)
	}
	if st == nil {
		t.Fatal("the WHIP stream was not published")
	}
	select {
	case <-st.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the stream sent on payload type 106 never became ready (its packets were dropped)")
	}
	if pt := bound.get(); pt != 106 {
		t.Fatalf("pion sent on payload type %d, not 106: the test no longer shows a second format", pt)
	}
	if v := st.Tracks()[0]; v.Codec != svcmedia.CodecH264 || v.Width != 320 || v.Height != 240 {
		t.Fatalf("video track %s %dx%d", v.Codec, v.Width, v.Height)
	}
}

// boundPayloadType is an interceptor (its own factory) that notes the
// payload type of the stream pion binds for sending.
type boundPayloadType struct {
	interceptor.NoOp
	mu sync.Mutex
	pt uint8
}

func (b *boundPayloadType) NewInterceptor(string) (interceptor.Interceptor, error) { return b, nil }

func (b *boundPayloadType) BindLocalStream(info *interceptor.StreamInfo, w interceptor.RTPWriter) interceptor.RTPWriter {
	b.mu.Lock()
	b.pt = info.PayloadType
	b.mu.Unlock()
	return w
}

func (b *boundPayloadType) get() uint8 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pt
}
