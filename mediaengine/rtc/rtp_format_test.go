package rtc

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtpcodec"
)

// sentPackets is what nextPacket reads back from an rtpFormat packet.
type sentPacketAt struct {
	payload []byte
	marker  bool
	offset  uint32
}

func readPackets(t *testing.T, data []byte) []sentPacketAt {
	t.Helper()
	var out []sentPacketAt
	for {
		payload, marker, offset, rest, ok := nextPacket(data)
		if !ok {
			break
		}
		out = append(out, sentPacketAt{payload, marker, offset})
		data = rest
	}
	if len(data) != 0 {
		t.Fatalf("%d bytes left after the packets", len(data))
	}
	return out
}

// TestRTPFormatIsWhatAViewerPacketised: a frame packetised once by the
// format yields the payloads, marker bits and timestamps a viewer's own
// packetiser gave it before (a keyframe fragmented, the parameter sets it
// lacks in front; G.711 split with its timestamp advancing); a keyframe
// is marked as one; AAC, which WebRTC cannot carry, yields nothing.
func TestRTPFormatIsWhatAViewerPacketised(t *testing.T) {
	tracks := append(mediatest.Tracks(), &media.Track{ID: 2, Codec: media.CodecPCMA, ClockRate: 8000, SampleRate: 8000, Channels: 1})
	m, err := rtpFormat{}.NewMuxer(tracks)
	if err != nil {
		t.Fatal(err)
	}
	idr := bytes.Repeat([]byte{0x65, 0x88, 0x84, 0x21}, 1000)
	g711 := bytes.Repeat([]byte{0xd5}, 3000)
	for _, f := range []*media.Frame{
		{Track: tracks[0], Keyframe: true, NALUs: [][]byte{{0x09, 0xf0}, idr}},
		{Track: tracks[0], NALUs: [][]byte{{0x41, 0x9a, 0x02}, {0x41, 0x9a, 0x03}}},
		{Track: tracks[2], Payload: g711},
	} {
		p, ok := m.Frame(f)
		if !ok {
			t.Fatalf("%s frame: nothing", f.Track.Codec)
		}
		if p.Keyframe != f.Keyframe {
			t.Fatalf("%s frame: Keyframe %v, want %v", f.Track.Codec, p.Keyframe, f.Keyframe)
		}
		got := readPackets(t, p.Data)
		const ts = 0x12345678
		var want []sentPacketAt
		pack, err := rtpcodec.NewPacketizer(rtpcodec.Format{PayloadType: 102, ClockRate: f.Track.ClockRate}, f.Track, 7, 100, mtu)
		if err != nil {
			t.Fatal(err)
		}
		_ = pack.Packetize(f, ts, func(pkt []byte) error {
			want = append(want, sentPacketAt{bytes.Clone(pkt[12:]), pkt[1]&0x80 != 0, binary.BigEndian.Uint32(pkt[4:]) - ts})
			return nil
		})
		if len(got) != len(want) || len(got) == 0 {
			t.Fatalf("%s frame: %d packets, want %d", f.Track.Codec, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i].payload, want[i].payload) || got[i].marker != want[i].marker || got[i].offset != want[i].offset {
				t.Fatalf("%s frame, packet %d: %d bytes marker %v offset %d, want %d bytes marker %v offset %d", f.Track.Codec, i,
					len(got[i].payload), got[i].marker, got[i].offset, len(want[i].payload), want[i].marker, want[i].offset)
			}
		}
		if f.Track.Codec == media.CodecPCMA && got[len(got)-1].offset == 0 {
			t.Fatal("G.711 split: the last packet's timestamp did not advance")
		}
	}
	if _, ok := m.Frame(&media.Frame{Track: tracks[1], Payload: []byte{0x21, 0x10}}); ok {
		t.Fatal("an AAC frame yielded packets")
	}
}

// TestNextPacketStopsAtBadLengths: a length shorter than an RTP header or
// past the end ends the packets.
func TestNextPacketStopsAtBadLengths(t *testing.T) {
	for _, data := range [][]byte{nil, {0}, {0, 5, 1, 2, 3, 4, 5}, {0, 20, 0x80, 0x60}} {
		if _, _, _, _, ok := nextPacket(data); ok {
			t.Fatalf("% x: a packet", data)
		}
	}
}
