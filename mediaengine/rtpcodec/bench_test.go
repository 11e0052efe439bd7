package rtpcodec

import (
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/svcplatform/svc/mediaengine/media"
)

// benchPackets packetises a 2 Mbit/s-like H.264 GOP (a 60 kB keyframe and
// 24 frames of 8 kB) into raw packets.
func benchPackets(b *testing.B) [][]byte {
	track := &media.Track{Codec: media.CodecH264, ClockRate: 90000, SPS: testSPS, PPS: testPPS}
	p, _ := NewPacketizer(h264Format, track, 1, 0, DefaultMTU)
	var raws [][]byte
	for i := 0; i < 25; i++ {
		f := &media.Frame{Track: track, NALUs: [][]byte{nalu(8000, 0x41)}}
		if i == 0 {
			f = &media.Frame{Track: track, NALUs: [][]byte{testSPS, testPPS, nalu(60000, 0x65)}, Keyframe: true}
		}
		p.Packetize(f, uint32(i*3600), func(pk []byte) error {
			raws = append(raws, append([]byte(nil), pk...))
			return nil
		})
	}
	return raws
}

// BenchmarkH264Depacketize reports the cost per RTP packet, parsing
// included; allocations are per published frame (its slab), not per
// packet.
func BenchmarkH264Depacketize(b *testing.B) {
	raws := benchPackets(b)
	frames := 0
	d, _ := NewDepacketizer(h264Format, &media.Track{Codec: media.CodecH264, ClockRate: 90000}, NewStreamClock(), func(*media.Frame) { frames++ })
	var pk rtp.Packet
	now := time.Now()
	seq := uint16(0)
	ts := uint32(0)
	b.ReportAllocs()
	b.SetBytes(int64(len(raws[len(raws)-1])))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		raw := raws[i%len(raws)]
		if err := pk.Unmarshal(raw); err != nil {
			b.Fatal(err)
		}
		if i%len(raws) == 0 && i > 0 {
			ts += 25 * 3600
		}
		pk.SequenceNumber = seq
		pk.Timestamp += ts
		seq++
		d.Decode(&pk, now)
	}
	b.ReportMetric(float64(frames)/float64(b.N), "frames/op")
}

func BenchmarkH264Packetize(b *testing.B) {
	track := &media.Track{Codec: media.CodecH264, ClockRate: 90000, SPS: testSPS, PPS: testPPS}
	p, _ := NewPacketizer(h264Format, track, 1, 0, DefaultMTU)
	f := &media.Frame{Track: track, NALUs: [][]byte{nalu(8000, 0x41)}}
	packets := 0
	send := func([]byte) error { packets++; return nil }
	b.ReportAllocs()
	b.SetBytes(int64(f.Size()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Packetize(f, uint32(i*3600), send)
	}
	b.ReportMetric(float64(packets)/float64(b.N), "packets/op")
}

func BenchmarkAACDepacketize(b *testing.B) {
	format := Format{EncodingName: "mpeg4-generic", ClockRate: 48000, Channels: 2, FMTP: ParseFMTP("mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3;config=1190")}
	track, _ := format.Track(0)
	d, _ := NewDepacketizer(format, track, NewStreamClock(), func(*media.Frame) {})
	payload := append(auHeaders(400), nalu(400)...)
	pk := pkt(0, 0, true, payload)
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pk.SequenceNumber++
		pk.Timestamp += 1024
		d.Decode(pk, now)
	}
}

func BenchmarkAACPacketize(b *testing.B) {
	track := &media.Track{Codec: media.CodecAAC, ClockRate: 48000, SampleRate: 48000, Channels: 2}
	format, _ := FormatForTrack(track, 97)
	p, _ := NewPacketizer(format, track, 1, 0, DefaultMTU)
	f := &media.Frame{Track: track, Payload: nalu(400)}
	send := func([]byte) error { return nil }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Packetize(f, uint32(i*1024), send)
	}
}

func BenchmarkReorderBuffer(b *testing.B) {
	raws := benchPackets(b)
	rb := NewReorderBuffer(64, 100*time.Millisecond)
	now := time.Now()
	deliver := func([]byte, time.Time) {}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Swap every other pair to exercise the held path.
		j := i ^ 1
		raw := raws[j%len(raws)]
		raw[2], raw[3] = byte(uint16(j)>>8), byte(j)
		rb.Push(raw, now, deliver)
	}
}
