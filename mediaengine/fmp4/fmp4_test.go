package fmp4

import (
	"bytes"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
)

func tracks() []*media.Track { return mediatest.Tracks() }

func TestInitSegmentStructure(t *testing.T) {
	for _, audio := range []media.Codec{media.CodecAAC, media.CodecOpus, media.CodecPCMA, media.CodecPCMU} {
		tr := tracks()
		tr[1].Codec = audio
		init, err := InitSegment(tr)
		if err != nil {
			t.Fatal(err)
		}
		boxes, err := ReadBoxes(init)
		if err != nil {
			t.Fatal(err)
		}
		if len(boxes) != 2 || boxes[0].Type != "ftyp" || boxes[1].Type != "moov" {
			t.Fatalf("top level: %v", boxes)
		}
		for _, p := range [][]string{{"moov", "mvhd"}, {"moov", "trak", "mdia", "minf", "stbl", "stsd"}, {"moov", "mvex", "trex"}} {
			if Find(boxes, p...) == nil {
				t.Fatalf("%s: missing %v", audio, p)
			}
		}
		stsd := Find(boxes, "moov", "trak", "mdia", "minf", "stbl", "stsd")
		if !bytes.Contains(stsd.Data, []byte("avc1")) || !bytes.Contains(stsd.Data, []byte("avcC")) {
			t.Fatal("video sample entry is not avc1 with avcC")
		}
		want := map[media.Codec]string{media.CodecAAC: "esds", media.CodecOpus: "dOps", media.CodecPCMA: "alaw", media.CodecPCMU: "ulaw"}[audio]
		if !bytes.Contains(init, []byte(want)) {
			t.Fatalf("%s: no %s box", audio, want)
		}
	}
	if _, err := InitSegment([]*media.Track{{ID: 0, Codec: "VP9"}}); err == nil {
		t.Fatal("an unknown codec was accepted")
	}
}

func TestFragmentStructure(t *testing.T) {
	tr := tracks()
	v1 := &media.Frame{Track: tr[0], DTS: time.Second, PTS: time.Second + 80*time.Millisecond, Keyframe: true, NALUs: [][]byte{{0x65, 1, 2, 3}}}
	v2 := &media.Frame{Track: tr[0], DTS: time.Second + 40*time.Millisecond, PTS: time.Second + 40*time.Millisecond, NALUs: [][]byte{{0x41, 9}}}
	a1 := &media.Frame{Track: tr[1], DTS: time.Second, PTS: time.Second, Payload: []byte{0xaa, 0xbb}}
	frag := Fragment(7, []Run{
		{Track: tr[0], BaseTime: 90000, Samples: []Sample{{v1, 3600}, {v2, 3600}}},
		{Track: tr[1], BaseTime: 48000, Samples: []Sample{{a1, 1024}}},
	})
	boxes, err := ReadBoxes(frag)
	if err != nil {
		t.Fatal(err)
	}
	if len(boxes) != 2 || boxes[0].Type != "moof" || boxes[1].Type != "mdat" {
		t.Fatalf("top level %v", boxes)
	}
	traf := boxes[0].Children[1]
	base, _ := ParseTfdt(Find(traf.Children, "tfdt").Data)
	off, samples, err := ParseTrun(Find(traf.Children, "trun").Data)
	if err != nil || base != 90000 || len(samples) != 2 {
		t.Fatalf("video traf: base %d, %d samples, %v", base, len(samples), err)
	}
	if samples[0].Flags != flagsSync || samples[1].Flags != flagsNonSync || samples[0].CTS != 7200 || samples[0].Size != 8 {
		t.Fatalf("samples %+v", samples)
	}
	if got := frag[off : off+4]; !bytes.Equal(got, []byte{0, 0, 0, 4}) || frag[off+4] != 0x65 {
		t.Fatalf("data offset %d points at % x", off, got)
	}
	off2, audio, _ := ParseTrun(Find(boxes[0].Children[2].Children, "trun").Data)
	if !bytes.Equal(frag[off2:off2+2], []byte{0xaa, 0xbb}) || audio[0].Duration != 1024 {
		t.Fatalf("audio data offset %d", off2)
	}
}

func TestLiveMuxerHoldsOneFrame(t *testing.T) {
	tr := tracks()
	m, err := NewLiveMuxer(tr)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Frame(&media.Frame{Track: tr[0], Keyframe: true, NALUs: [][]byte{{0x65}}}); ok {
		t.Fatal("the first frame must be held until its duration is known")
	}
	p, ok := m.Frame(&media.Frame{Track: tr[0], DTS: 40 * time.Millisecond, PTS: 40 * time.Millisecond, NALUs: [][]byte{{0x41}}})
	if !ok || !p.Keyframe {
		t.Fatal("the keyframe's fragment did not come with the next frame")
	}
	boxes, _ := ReadBoxes(p.Data)
	_, s, _ := ParseTrun(Find(boxes, "moof", "traf", "trun").Data)
	if s[0].Duration != 3600 {
		t.Fatalf("duration %d, want 3600", s[0].Duration)
	}
}

// FuzzReadBoxes parses arbitrary bytes as MP4 boxes, including truns: no
// panic, no allocation beyond what the input can hold.
func FuzzReadBoxes(f *testing.F) {
	tr := tracks()
	init, _ := InitSegment(tr)
	f.Add(init)
	f.Add(Fragment(1, []Run{{Track: tr[0], Samples: []Sample{{&media.Frame{Track: tr[0], Keyframe: true, NALUs: [][]byte{{0x65}}}, 3600}}}}))
	f.Add([]byte{0, 0, 0, 1, 'm', 'd', 'a', 't', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		boxes, err := ReadBoxes(b)
		if err != nil {
			return
		}
		var walk func([]Box)
		walk = func(bs []Box) {
			for _, bx := range bs {
				if bx.Offset+bx.Size > len(b) {
					t.Fatalf("box %q at %d+%d past %d bytes", bx.Type, bx.Offset, bx.Size, len(b))
				}
				if bx.Type == "trun" {
					ParseTrun(bx.Data)
				}
				if bx.Type == "tfdt" {
					ParseTfdt(bx.Data)
				}
				walk(bx.Children)
			}
		}
		walk(boxes)
	})
}

// A vectored fragment's slices, in order, are the plain fragment's bytes,
// with large payloads referenced rather than copied.
func TestFragmentVecMatchesFragment(t *testing.T) {
	tr := tracks()
	big := bytes.Repeat([]byte{0x65, 7}, vecMin)
	mid := bytes.Repeat([]byte{0x41}, vecMin)
	v1 := &media.Frame{Track: tr[0], DTS: 0, PTS: 80 * time.Millisecond, Keyframe: true, NALUs: [][]byte{{0x06, 1}, big}}
	v2 := &media.Frame{Track: tr[0], DTS: 40 * time.Millisecond, PTS: 40 * time.Millisecond, NALUs: [][]byte{mid, {0x41, 2, 3}}}
	a1 := &media.Frame{Track: tr[1], Payload: []byte{0xaa, 0xbb}}
	a2 := &media.Frame{Track: tr[1], Payload: bytes.Repeat([]byte{0xcc}, 2*vecMin)}
	runs := []Run{
		{Track: tr[0], BaseTime: 90000, Samples: []Sample{{v1, 3600}, {v2, 3600}}},
		{Track: tr[1], BaseTime: 48000, Samples: []Sample{{a1, 1024}, {a2, 1024}}},
	}
	want := AppendFragment([]byte("prefix"), 3, runs)[len("prefix"):]
	buf, vec := AppendFragmentVec(make([]byte, 0, 8), nil, 3, runs)
	var got []byte
	referenced := 0
	for _, b := range vec {
		got = append(got, b...)
		if len(b) > 0 && (&b[0] == &big[0] || &b[0] == &mid[0] || &b[0] == &a2.Payload[0]) {
			referenced++
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("vectored fragment differs: %d bytes, want %d", len(got), len(want))
	}
	if referenced != 3 || len(buf) != len(want)-len(big)-len(mid)-len(a2.Payload) {
		t.Fatalf("%d payloads referenced, %d bytes copied", referenced, len(buf))
	}
	// Reusing the buffers gives the same bytes again.
	_, vec = AppendFragmentVec(buf[:0], vec[:0], 3, runs)
	got = got[:0]
	for _, b := range vec {
		got = append(got, b...)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("vectored fragment differs when the buffers are reused")
	}
}
