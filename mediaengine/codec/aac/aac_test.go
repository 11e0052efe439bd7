package aac

import (
	"bytes"
	"errors"
	"testing"
)

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want Config
	}{
		{[]byte{0x12, 0x10}, Config{2, 44100, 2}},
		{[]byte{0x11, 0x90}, Config{2, 48000, 2}},
		{[]byte{0x15, 0x88}, Config{2, 8000, 1}},
		{[]byte{0x17, 0x80, 0x1f, 0x40, 0x08}, Config{2, 16000, 1}}, // explicit rate
	} {
		got, err := ParseConfig(tc.b)
		if err != nil || got != tc.want {
			t.Errorf("ParseConfig(% x) = %+v, %v; want %+v", tc.b, got, err, tc.want)
			continue
		}
		back, err := ParseConfig(got.Marshal())
		if err != nil || back != got {
			t.Errorf("round trip of %+v = %+v, %v", got, back, err)
		}
	}
	for _, bad := range [][]byte{nil, {0x12}, {0x07, 0x80}, {0x17, 0x80}} {
		if _, err := ParseConfig(bad); err == nil {
			t.Errorf("ParseConfig(% x) accepted a bad config", bad)
		}
	}
	if got := (Config{ObjectType: 2}).Codec(); got != "mp4a.40.2" {
		t.Fatal(got)
	}
}

func TestADTS(t *testing.T) {
	c := Config{ObjectType: 2, SampleRate: 48000, Channels: 2}
	var stream []byte
	payloads := [][]byte{bytes.Repeat([]byte{1}, 100), bytes.Repeat([]byte{2}, 300)}
	for _, p := range payloads {
		stream = AppendADTS(stream, c, len(p))
		stream = append(stream, p...)
	}
	got, frames, err := SplitADTS(stream)
	if err != nil || got != c || len(frames) != 2 || !bytes.Equal(frames[1], payloads[1]) {
		t.Fatalf("SplitADTS = %+v, %d frames, %v", got, len(frames), err)
	}
	if _, _, err := SplitADTS(stream[:50]); err == nil {
		t.Fatal("a truncated frame was accepted")
	}
	if _, err := ParseADTS([]byte{0, 1, 2, 3, 4, 5, 6}); !errors.Is(err, ErrNoSync) {
		t.Fatalf("no syncword: %v", err)
	}
}

// FuzzADTS splits arbitrary bytes as ADTS frames and parses them as an
// AudioSpecificConfig: no panic, and frames never reach past the input.
func FuzzADTS(f *testing.F) {
	c := Config{ObjectType: 2, SampleRate: 48000, Channels: 2}
	f.Add(append(AppendADTS(nil, c, 3), 1, 2, 3))
	f.Add([]byte{0xff, 0xf1, 0x50, 0x80, 0x00, 0x1f, 0xfc})
	f.Add([]byte{0x12, 0x10})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, frames, _ := SplitADTS(b)
		total := 0
		for _, fr := range frames {
			total += len(fr)
		}
		if total > len(b) {
			t.Fatalf("frames hold %d bytes of %d", total, len(b))
		}
		if cfg, err := ParseConfig(b); err == nil {
			ParseConfig(cfg.Marshal())
		}
	})
}
