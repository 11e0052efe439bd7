package mediaengine

import (
	"testing"
	"time"
)

// TestAcceptanceFFmpegPublishes has ffmpeg publish a lavfi test pattern
// (H.264 with B-frames + AAC) into the engine's RTSP server over TCP and
// over UDP, and reads every output (HTTP-FLV, HTTP-fMP4, HLS, RTSP play)
// with ffprobe for 11 s: codec and size, frame count within 2% of what the
// timestamps span, monotonic timestamps, audio present.
func TestAcceptanceFFmpegPublishes(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"tcp", "udp"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			te := startEngine(t, noDemo)
			ffmpegPublish(t, "h264", transport, te.rtspURL("push/"+transport), 60)
			s := waitStreamReady(t, te, "push", transport, 20*time.Second)
			if s.Origin != "rtsp-push" || trackCodecs(s) != "video:H264,audio:AAC" {
				t.Fatalf("stream %+v (tracks %s)", s, trackCodecs(s))
			}
			probeOutputs(t, te, "push", transport, lavfiWant, allOutputs...)
		})
	}
}

// TestAcceptanceH265Publish has ffmpeg publish H.265 (libx265) + AAC over
// RTSP; HTTP-fMP4 and HLS carry it to ffprobe. HTTP-FLV carries H.265 as
// Enhanced FLV, which Debian's ffmpeg 5.1 cannot read (TestH265Outputs
// checks those tags by structure).
func TestAcceptanceH265Publish(t *testing.T) {
	t.Parallel()
	te := startEngine(t, noDemo)
	ffmpegPublish(t, "hevc", "tcp", te.rtspURL("push/hevc"), 60)
	s := waitStreamReady(t, te, "push", "hevc", 30*time.Second)
	if trackCodecs(s) != "video:H265,audio:AAC" {
		t.Fatalf("tracks %s", trackCodecs(s))
	}
	want := lavfiWant
	want.VideoCodec = "hevc"
	probeOutputs(t, te, "push", "hevc", want, outFMP4, outHLS, outRTSP)
}
