package rtpcodec

import (
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
)

// auHeaders builds an AAC-hbr AU-header section (13-bit size, 3-bit index).
func auHeaders(sizes ...int) []byte {
	b := []byte{byte(len(sizes) * 16 >> 8), byte(len(sizes) * 16)}
	for _, n := range sizes {
		b = append(b, byte(n>>5), byte(n<<3))
	}
	return b
}

func TestAACDepacketizer(t *testing.T) {
	hbr := Format{PayloadType: 97, EncodingName: "mpeg4-generic", ClockRate: 44100, Channels: 2,
		FMTP: ParseFMTP("streamtype=5; profile-level-id=15; mode=AAC-hbr; config=1210; SizeLength=13; IndexLength=3; IndexDeltaLength=3")}
	a, b, c := nalu(200), nalu(180), nalu(1500)
	tests := []struct {
		name   string
		format Format
		pkts   [][]byte
		marks  []bool
		tss    []uint32
		want   [][]byte
		ptsAt  []uint32 // RTP ticks of each frame
	}{
		{
			name:   "several AUs in one packet",
			format: hbr,
			pkts:   [][]byte{append(append(auHeaders(200, 180), a...), b...)},
			marks:  []bool{true}, tss: []uint32{5000},
			want: [][]byte{a, b}, ptsAt: []uint32{0, 1024},
		},
		{
			name:   "a fragmented AU",
			format: hbr,
			pkts: [][]byte{
				append(auHeaders(1500), c[:700]...),
				append(auHeaders(1500), c[700:1400]...),
				append(auHeaders(1500), c[1400:]...),
				append(auHeaders(200), a...),
			},
			marks: []bool{false, false, true, true}, tss: []uint32{0, 0, 0, 1024},
			want: [][]byte{c, a}, ptsAt: []uint32{0, 1024},
		},
		{
			name: "AAC-lbr with 6-bit sizes",
			format: Format{EncodingName: "mpeg4-generic", ClockRate: 16000, Channels: 1,
				FMTP: ParseFMTP("mode=AAC-lbr;sizelength=6;indexlength=2;indexdeltalength=2;config=1408")},
			pkts: [][]byte{
				{0x00, 0x10, 10 << 2, 20 << 2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
			},
			marks: []bool{true}, tss: []uint32{0},
			want: [][]byte{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}, ptsAt: []uint32{0, 1024},
		},
		// MP4A-LATM (RFC 6416) as GStreamer's rtpmp4apay sends it.
		{
			name: "LATM: an element per packet", format: gstLATM,
			pkts:  [][]byte{latmPayload(a), latmPayload(b)},
			marks: []bool{true, true}, tss: []uint32{7000, 8024},
			want: [][]byte{a, b}, ptsAt: []uint32{0, 1024},
		},
		{
			name: "LATM: two elements in one packet", format: gstLATM,
			pkts:  [][]byte{latmPayload(a, b)},
			marks: []bool{true}, tss: []uint32{0},
			want: [][]byte{a, b}, ptsAt: []uint32{0, 1024},
		},
		{
			name: "LATM: an element over three packets", format: gstLATM,
			pkts:  [][]byte{latmPayload(c)[:700], latmPayload(c)[700:1400], latmPayload(c)[1400:]},
			marks: []bool{false, false, true}, tss: []uint32{0, 0, 0},
			want: [][]byte{c}, ptsAt: []uint32{0},
		},
		{
			name: "LATM: no marker bits, the timestamp ends an element", format: gstLATM,
			pkts:  [][]byte{latmPayload(a), latmPayload(b), latmPayload(a)},
			marks: []bool{false, false, false}, tss: []uint32{0, 1024, 2048},
			want: [][]byte{a, b}, ptsAt: []uint32{0, 1024},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			track, err := tt.format.Track(1)
			if err != nil {
				t.Fatal(err)
			}
			d, col := newDepack(t, tt.format, track)
			for i, p := range tt.pkts {
				if err := d.Decode(pkt(uint16(i), tt.tss[i], tt.marks[i], p), t0); err != nil {
					t.Fatal(err)
				}
			}
			if len(col.frames) != len(tt.want) {
				t.Fatalf("got %d frames, want %d", len(col.frames), len(tt.want))
			}
			for i, f := range col.frames {
				if string(f.Payload) != string(tt.want[i]) {
					t.Errorf("frame %d payload differs (%d bytes)", i, len(f.Payload))
				}
				if want := time.Duration(tt.ptsAt[i]) * time.Second / time.Duration(track.ClockRate); f.PTS-col.frames[0].PTS != want {
					t.Errorf("frame %d at %v, want %v", i, f.PTS-col.frames[0].PTS, want)
				}
			}
		})
	}
}

func TestAACDepacketizerBadInput(t *testing.T) {
	f := Format{EncodingName: "mpeg4-generic", ClockRate: 48000, FMTP: ParseFMTP("mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3")}
	track, _ := f.Track(0)
	d, col := newDepack(t, f, track)
	for i, p := range [][]byte{{0x00}, {0x00, 0x40, 0x01}, append(auHeaders(100, 100), nalu(150)...), append(auHeaders(100), nalu(150)...)} {
		if err := d.Decode(pkt(uint16(i), uint32(i*1024), true, p), t0); err == nil && i < 3 {
			t.Errorf("packet %d: no error", i)
		}
	}
	// A fragment whose follow-up is lost is dropped, not published short.
	d.Decode(pkt(10, 9000, false, append(auHeaders(1000), nalu(400)...)), t0)
	d.Decode(pkt(12, 9000, true, append(auHeaders(1000), nalu(600)...)), t0)
	for _, fr := range col.frames {
		if len(fr.Payload) == 1000 {
			t.Fatal("AU with a lost fragment was published")
		}
	}
	bad := Format{EncodingName: "mpeg4-generic", FMTP: ParseFMTP("sizelength=x")}
	if _, err := NewDepacketizer(bad, &media.Track{Codec: media.CodecAAC, ClockRate: 1}, NewStreamClock(), col.emit); err == nil {
		t.Fatal("bad sizelength accepted")
	}
}
