package rtsp_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/svcplatform/svc/mediaengine/rtsp"
)

// BenchmarkMessageReaderInterleaved is the cost of reading one
// interleaved RTP packet off a connection (no allocation per packet).
func BenchmarkMessageReaderInterleaved(b *testing.B) {
	var stream bytes.Buffer
	pkt := make([]byte, 1400)
	for i := 0; i < 1000; i++ {
		stream.Write([]byte{'$', 0})
		binary.Write(&stream, binary.BigEndian, uint16(len(pkt)))
		stream.Write(pkt)
	}
	r := rtsp.NewMessageReader(&loopReader{data: stream.Bytes()})
	var m rtsp.Message
	b.ReportAllocs()
	b.SetBytes(int64(len(pkt) + 4))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := r.Read(&m); err != nil {
			b.Fatal(err)
		}
	}
}

// loopReader reads data over and over.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}
