package rtpcodec

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/svcplatform/svc/mediaengine/media"
)

// fuzzPackets splits fuzz input into packets: each is a 2-byte length, a
// flags byte (bit 0 marker, bit 1 new timestamp, bits 2-3 sequence skip)
// and the payload.
func fuzzPackets(data []byte, fn func(p *rtp.Packet)) {
	var seq uint16
	var ts uint32
	for len(data) >= 3 {
		n := int(binary.BigEndian.Uint16(data))
		flags := data[2]
		data = data[3:]
		n = min(n, len(data))
		seq += 1 + uint16(flags>>2&3)
		if flags&2 != 0 {
			ts += 3000
		}
		fn(pkt(seq, ts, flags&1 != 0, data[:n]))
		data = data[n:]
	}
}

// fuzzSeed joins payloads in fuzzPackets' framing.
func fuzzSeed(flags byte, payloads ...[]byte) []byte {
	var b []byte
	for _, p := range payloads {
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, flags)
		b = append(b, p...)
	}
	return b
}

func fuzzDepacketizer(f *testing.F, format Format, seeds [][]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		track, err := format.Track(0)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		d, err := NewDepacketizer(format, track, NewStreamClock(), func(fr *media.Frame) {
			if fr.Track != track || fr.DTS > fr.PTS+time.Hour {
				t.Fatalf("bad frame %+v", fr)
			}
			for _, n := range fr.NALUs {
				if len(n) == 0 {
					t.Fatal("empty NAL unit")
				}
			}
			total += fr.Size()
		})
		if err != nil {
			t.Fatal(err)
		}
		fuzzPackets(data, func(p *rtp.Packet) { d.Decode(p, t0) })
		if total > len(data)*4+1024 {
			t.Fatalf("%d bytes of frames from %d bytes of input", total, len(data))
		}
	})
}

func FuzzH264Depacketizer(f *testing.F) {
	fuzzDepacketizer(f, h264Format, [][]byte{
		fuzzSeed(3, []byte{0x78, 0, byte(len(testSPS))}, testSPS),
		fuzzSeed(0, append([]byte{0x7c, 0x85}, nalu(50)...), append([]byte{0x7c, 0x45}, nalu(50)...)),
		fuzzSeed(1, []byte{0x7c, 0xc5, 1, 2, 3}, []byte{0x65, 1, 2}, []byte{0x41, 9}),
	})
}

func FuzzH265Depacketizer(f *testing.F) {
	fuzzDepacketizer(f, h265Format, [][]byte{
		fuzzSeed(3, []byte{0x60, 0x01, 0, byte(len(testVPS))}, testVPS),
		fuzzSeed(0, append([]byte{0x62, 0x01, 0x93}, nalu(50)...), append([]byte{0x62, 0x01, 0x53}, nalu(50)...)),
		fuzzSeed(1, []byte{0x26, 0x01, 1, 2}, []byte{0x02, 0x01, 5}),
	})
}

func FuzzAACDepacketizer(f *testing.F) {
	format := Format{EncodingName: "mpeg4-generic", ClockRate: 48000, Channels: 2,
		FMTP: ParseFMTP("streamtype=5;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3;config=1190")}
	fuzzDepacketizer(f, format, [][]byte{
		fuzzSeed(3, append(auHeaders(4, 4), 1, 2, 3, 4, 5, 6, 7, 8)),
		fuzzSeed(2, append(auHeaders(10), 1, 2, 3, 4, 5), append(auHeaders(10), 6, 7, 8, 9, 10)),
		fuzzSeed(1, []byte{0xff, 0xff, 0}),
	})
}
