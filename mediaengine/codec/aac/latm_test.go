package aac

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"testing"
)

// TestParseStreamMuxConfig reads the SDP configs GStreamer's rtpmp4apay
// wrote for 44.1 kHz mono and 48 kHz stereo AAC-LC, and a version 1
// config with the AudioSpecificConfig length given.
func TestParseStreamMuxConfig(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		asc          []byte
		cfg          Config
		err          error
	}{
		{"gstreamer 44.1 kHz mono", "40002410adca00", []byte{0x12, 0x08, 0x56, 0xe5, 0x00}, Config{ObjectType: 2, SampleRate: 44100, Channels: 1}, nil},
		{"gstreamer 48 kHz stereo", "40002320adca00", []byte{0x11, 0x90, 0x56, 0xe5, 0x00}, Config{ObjectType: 2, SampleRate: 48000, Channels: 2}, nil},
		// audioMuxVersion 1, taraBufferFullness 0xff, one frame per
		// element, ascLen 16 bits, then 0x1190, frameLengthType 0,
		// buffer fullness, no other data, no CRC.
		{"version 1", latmV1Config(), []byte{0x11, 0x90}, Config{ObjectType: 2, SampleRate: 48000, Channels: 2}, nil},
		{"two programs", "40102410adca00", nil, Config{}, ErrLATMUnsupported},
		{"fixed frame length", "4000241040ff00", nil, Config{}, ErrLATMUnsupported},
		{"truncated", "400024", nil, Config{}, ErrLATM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := hex.DecodeString(tc.config)
			c, err := ParseStreamMuxConfig(b)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if tc.err != nil {
				return
			}
			if !bytes.Equal(c.AudioSpecificConfig, tc.asc) || c.Config != tc.cfg || c.SubFrames != 1 {
				t.Fatalf("got %+v", c)
			}
		})
	}
}

// latmV1Config builds a version 1 StreamMuxConfig bit by bit.
func latmV1Config() string {
	var w bitWriter
	w.put(1, 1)    // audioMuxVersion
	w.put(0, 1)    // audioMuxVersionA
	w.put(0, 2)    // taraBufferFullness: 1 byte
	w.put(0xff, 8) //
	w.put(1, 1)    // allStreamsSameTimeFraming
	w.put(0, 6)    // numSubFrames
	w.put(0, 4)    // numProgram
	w.put(0, 3)    // numLayer
	w.put(0, 2)    // ascLen: 1 byte
	w.put(16, 8)   //
	w.put(0x1190, 16)
	w.put(0, 3)    // frameLengthType
	w.put(0xff, 8) // latmBufferFullness
	w.put(0, 1)    // otherDataPresent
	w.put(0, 1)    // crcCheckPresent
	return hex.EncodeToString(w.bytes())
}

type bitWriter struct {
	b []byte
	n int
}

func (w *bitWriter) put(v uint32, bits int) {
	for i := bits - 1; i >= 0; i-- {
		if w.n%8 == 0 {
			w.b = append(w.b, 0)
		}
		w.b[len(w.b)-1] |= byte(v>>uint(i)&1) << (7 - uint(w.n%8))
		w.n++
	}
}

func (w *bitWriter) bytes() []byte { return w.b }

// TestAudioMuxElementsFromFFmpeg reads a LOAS stream ffmpeg's latm muxer
// wrote (testdata/tone.latm: 1 s of 44.1 kHz mono AAC, 45 frames as
// ffprobe counts them), whose AudioMuxElements carry their StreamMuxConfig
// in band (as RTP with cpresent=1 does), and checks every frame against
// the frame ffmpeg's ADTS muxer writes for the same encoding.
func TestAudioMuxElementsFromFFmpeg(t *testing.T) {
	loas, err := os.ReadFile("testdata/tone.latm")
	if err != nil {
		t.Fatal(err)
	}
	var c StreamMuxConfig
	var frames [][]byte
	for len(loas) >= 3 {
		if loas[0] != 0x56 || loas[1]&0xe0 != 0xe0 {
			t.Fatalf("no LOAS sync at % x", loas[:3])
		}
		n := int(loas[1]&0x1f)<<8 | int(loas[2])
		if 3+n > len(loas) {
			t.Fatalf("LOAS frame of %d bytes in %d", n, len(loas)-3)
		}
		if frames, err = AudioMuxElements(loas[3:3+n], &c, true, frames); err != nil {
			t.Fatalf("after %d frames: %v", len(frames), err)
		}
		loas = loas[3+n:]
	}
	if len(frames) != 45 || c.Config != (Config{ObjectType: 2, SampleRate: 44100, Channels: 1}) {
		t.Fatalf("%d frames, config %+v", len(frames), c)
	}
	for i, f := range frames {
		if len(f) == 0 || len(f) > 2048 {
			t.Fatalf("frame %d of %d bytes", i, len(f))
		}
	}
	// Without in-band configs the same elements need the SDP's.
	if _, err := AudioMuxElements([]byte{0x20, 0x00}, &StreamMuxConfig{}, false, nil); !errors.Is(err, ErrLATM) {
		t.Fatalf("an element without a config: %v", err)
	}
}

// TestAudioMuxElementsOutOfBand splits elements as GStreamer's rtpmp4apay
// sends them with cpresent=0: PayloadLengthInfo (255 bytes carry on) and
// the frame, two elements in one payload.
func TestAudioMuxElementsOutOfBand(t *testing.T) {
	cfgBytes, _ := hex.DecodeString("40002410adca00")
	c, err := ParseStreamMuxConfig(cfgBytes)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{7}, 300)
	data := append([]byte{255, 45}, big...)
	data = append(data, 3, 1, 2, 3)
	frames, err := AudioMuxElements(data, &c, false, nil)
	if err != nil || len(frames) != 2 || !bytes.Equal(frames[0], big) || !bytes.Equal(frames[1], []byte{1, 2, 3}) {
		t.Fatalf("frames %d, %v", len(frames), err)
	}
	if _, err := AudioMuxElements([]byte{255, 255, 10, 1}, &c, false, nil); !errors.Is(err, ErrLATM) {
		t.Fatalf("a frame longer than the data: %v", err)
	}
}

func FuzzAudioMuxElements(f *testing.F) {
	loas, _ := os.ReadFile("testdata/tone.latm")
	if len(loas) > 3 {
		n := int(loas[1]&0x1f)<<8 | int(loas[2])
		f.Add(loas[3:min(3+n, len(loas))], true)
	}
	f.Add([]byte{255, 45, 1, 2, 3}, false)
	f.Fuzz(func(t *testing.T, data []byte, inBand bool) {
		cfgBytes, _ := hex.DecodeString("40002410adca00")
		c, _ := ParseStreamMuxConfig(cfgBytes)
		frames, err := AudioMuxElements(data, &c, inBand, nil)
		total := 0
		for _, fr := range frames {
			total += len(fr)
		}
		if total > len(data) {
			t.Fatalf("%d bytes of frames from %d bytes (%v)", total, len(data), err)
		}
	})
}

func FuzzParseStreamMuxConfig(f *testing.F) {
	for _, s := range []string{"40002410adca00", "40002320adca00", latmV1Config()} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseStreamMuxConfig(b)
		if err == nil && len(c.AudioSpecificConfig) > len(b) {
			t.Fatalf("config of %d bytes from %d", len(c.AudioSpecificConfig), len(b))
		}
	})
}
