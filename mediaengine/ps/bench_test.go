package ps

import (
	"os"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
)

// BenchmarkDemuxer demuxes GStreamer's H.264+AAC program stream in RTP
// payload-sized pieces and builds its frames: the per-stream cost of PS
// ingest, beside the RTSP depacketiser's in mediaengine/rtpcodec.
func BenchmarkDemuxer(b *testing.B) {
	data, err := os.ReadFile("testdata/h264_aac_psm.ps")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	now := time.Now()
	fb := NewFrameBuilder()
	var frames []*media.Frame
	d := NewDemuxer(func(u Unit) { frames = fb.Add(u, now, frames[:0]) })
	for i := 0; i < b.N; i++ {
		for off := 0; off < len(data); off += 1400 {
			d.Write(data[off:min(off+1400, len(data))])
		}
		d.Flush()
	}
}
