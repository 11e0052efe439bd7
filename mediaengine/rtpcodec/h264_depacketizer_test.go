package rtpcodec

import (
	"errors"
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/svcplatform/svc/mediaengine/media"
)

func h264Track() *media.Track {
	return &media.Track{Codec: media.CodecH264, ClockRate: 90000}
}

var h264Format = Format{PayloadType: 96, EncodingName: "H264", ClockRate: 90000, FMTP: map[string]string{"packetization-mode": "1"}}

func TestH264Depacketizer(t *testing.T) {
	idr := nalu(3000, 0x65)
	slice := nalu(500, 0x41)
	stapA := func(units ...[]byte) []byte {
		b := []byte{0x78}
		for _, u := range units {
			b = append(b, byte(len(u)>>8), byte(len(u)))
			b = append(b, u...)
		}
		return b
	}
	fuA := func(n []byte, from, to int, start, end bool) []byte {
		h := n[0] & 0x1f
		if start {
			h |= 0x80
		}
		if end {
			h |= 0x40
		}
		return append([]byte{n[0]&0xe0 | 28, h}, n[from:to]...)
	}
	type step struct {
		seq    uint16
		ts     uint32
		marker bool
		data   []byte
	}
	tests := []struct {
		name    string
		steps   []step
		want    [][][]byte // NAL units per emitted frame
		keys    []bool
		dropped uint64
	}{
		{
			name: "STAP-A parameter sets then FU-A IDR then single slice",
			steps: []step{
				{1, 1000, false, stapA(testSPS, testPPS)},
				{2, 1000, false, fuA(idr, 1, 1500, true, false)},
				{3, 1000, true, fuA(idr, 1500, len(idr), false, true)},
				{4, 4000, true, slice},
			},
			want: [][][]byte{{testSPS, testPPS, idr}, {slice}},
			keys: []bool{true, false},
		},
		{
			name: "FU-A with start and end in one packet",
			steps: []step{
				{1, 1000, false, testSPS}, {2, 1000, false, testPPS},
				{3, 1000, true, fuA(idr, 1, len(idr), true, true)},
			},
			want: [][][]byte{{testSPS, testPPS, idr}},
			keys: []bool{true},
		},
		{
			name: "missing marker bits: timestamp change ends the access unit",
			steps: []step{
				{10, 1000, false, stapA(testSPS, testPPS)}, {11, 1000, false, idr},
				{12, 4000, false, slice},
				{13, 7000, false, slice},
				{14, 10000, true, slice},
			},
			want: [][][]byte{{testSPS, testPPS, idr}, {slice}, {slice}, {slice}},
			keys: []bool{true, false, false, false},
		},
		{
			name: "frames before the first keyframe are dropped",
			steps: []step{
				{1, 100, true, slice},
				{2, 1000, false, stapA(testSPS, testPPS)}, {3, 1000, true, idr},
			},
			want:    [][][]byte{{testSPS, testPPS, idr}},
			keys:    []bool{true},
			dropped: 1,
		},
		{
			name: "a lost fragment drops its access unit only",
			steps: []step{
				{1, 1000, false, stapA(testSPS, testPPS)}, {2, 1000, true, idr},
				{3, 4000, false, fuA(slice, 1, 200, true, false)},
				// 4 lost
				{5, 4000, true, fuA(slice, 300, len(slice), false, true)},
				{6, 7000, true, slice},
			},
			want:    [][][]byte{{testSPS, testPPS, idr}, {slice}},
			keys:    []bool{true, false},
			dropped: 1,
		},
		{
			name: "parameter sets with a timestamp of their own join the next picture",
			steps: []step{
				{1, 500, true, stapA(testSPS, testPPS)}, {2, 1000, true, idr},
				{3, 3000, false, []byte{0x06, 0x05, 0x01}}, {4, 4000, true, slice},
			},
			want: [][][]byte{{testSPS, testPPS, idr}, {{0x06, 0x05, 0x01}, slice}},
			keys: []bool{true, false},
		},
		{
			// GStreamer's rtph264pay (config-interval=-1) repeats SPS and
			// PPS before every slice of a multi-slice IDR; ffmpeg's parser
			// then splits the picture in two. Repeats are left out.
			name: "repeated parameter sets within an access unit are left out",
			steps: []step{
				{1, 1000, false, stapA(testSPS, testPPS)}, {2, 1000, false, nalu(100, 0x65)},
				{3, 1000, false, stapA(testSPS, testPPS)}, {4, 1000, true, idr},
			},
			want: [][][]byte{{testSPS, testPPS, nalu(100, 0x65), idr}},
			keys: []bool{true},
		},
		{
			name: "access unit delimiters are left out",
			steps: []step{
				{1, 1000, false, []byte{0x09, 0xf0}}, {2, 1000, false, stapA(testSPS, testPPS)}, {3, 1000, true, idr},
			},
			want: [][][]byte{{testSPS, testPPS, idr}},
			keys: []bool{true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			track := h264Track()
			d, c := newDepack(t, h264Format, track)
			for i, s := range tt.steps {
				if err := d.Decode(pkt(s.seq, s.ts, s.marker, s.data), t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
					t.Fatalf("packet %d: %v", i, err)
				}
			}
			// Release frames held by the start-up DTS probe.
			next := tt.steps[len(tt.steps)-1].seq + 1
			for i := 0; len(c.frames) < len(tt.want) && i < probeFrames; i++ {
				d.Decode(pkt(next+uint16(i), uint32(900000+i*3000), true, slice), t0.Add(time.Second))
			}
			if len(c.frames) < len(tt.want) {
				t.Fatalf("got %d frames, want %d", len(c.frames), len(tt.want))
			}
			for i, w := range tt.want {
				f := c.frames[i]
				if !equalNALUs(f.NALUs, w) {
					t.Errorf("frame %d: NAL units differ: got %d units", i, len(f.NALUs))
				}
				if f.Keyframe != tt.keys[i] || f.Track != track {
					t.Errorf("frame %d: keyframe %v track %p", i, f.Keyframe, f.Track)
				}
			}
			if string(track.SPS) != string(testSPS) || string(track.PPS) != string(testPPS) {
				t.Errorf("in-band parameter sets not placed into the track")
			}
			if got := d.Stats().Dropped.Load(); got != tt.dropped {
				t.Errorf("dropped %d, want %d", got, tt.dropped)
			}
		})
	}
}

func TestH264DepacketizerTimestamps(t *testing.T) {
	track := h264Track()
	d, c := newDepack(t, h264Format, track)
	// A B-frame pattern in decoding order (I P B B P B B ...) with the RTP
	// clock wrapping around in the middle.
	base := uint32(0xffffffff - 5*3600)
	order := []int{0, 3, 1, 2, 6, 4, 5, 9, 7, 8, 12, 10, 11}
	d.Decode(pkt(1, base, false, testSPS), t0)
	d.Decode(pkt(2, base, false, testPPS), t0)
	seq := uint16(3)
	for i, n := range order {
		data := nalu(100, 0x41)
		if i == 0 {
			data = nalu(100, 0x65)
		}
		d.Decode(pkt(seq, base+uint32(n*3600), true, data), t0.Add(time.Duration(i)*40*time.Millisecond))
		seq++
	}
	if len(c.frames) != len(order) {
		t.Fatalf("got %d frames", len(c.frames))
	}
	for i, f := range c.frames {
		wantPTS := time.Duration(order[i]) * 40 * time.Millisecond
		if f.PTS != wantPTS {
			t.Errorf("frame %d: PTS %v, want %v", i, f.PTS, wantPTS)
		}
		if f.DTS > f.PTS {
			t.Errorf("frame %d: DTS %v after PTS %v", i, f.DTS, f.PTS)
		}
		if i > 0 && f.DTS-c.frames[i-1].DTS != 40*time.Millisecond {
			t.Errorf("frame %d: DTS step %v", i, f.DTS-c.frames[i-1].DTS)
		}
	}
}

func TestH264DepacketizerRejectsInterleavedMode(t *testing.T) {
	_, err := NewDepacketizer(Format{EncodingName: "H264", ClockRate: 90000, FMTP: map[string]string{"packetization-mode": "2"}}, h264Track(), NewStreamClock(), func(*media.Frame) {})
	if !errors.Is(err, ErrUnsupportedCodec) {
		t.Fatalf("got %v", err)
	}
	d, _ := newDepack(t, h264Format, h264Track())
	for i, p := range [][]byte{{0x19, 0, 1}, {0x1d, 0x80, 1}, {0x00}, {0x7c}, {0x78, 0x00}, {0x78, 0x00, 0x09, 0x01}} {
		if err := d.Decode(pkt(uint16(i), 1, true, p), t0); err == nil {
			t.Errorf("payload % x: no error", p)
		}
	}
	if d.Stats().Malformed.Load() == 0 {
		t.Errorf("malformed packets not counted")
	}
	_ = rtp.Packet{}
}
