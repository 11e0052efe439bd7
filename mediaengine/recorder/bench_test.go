package recorder

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
)

// benchFrames is one second of a ~2 Mbps stream: 25 video frames (a
// keyframe of 40 KB, then 24 of 8.5 KB) and 47 AAC frames of 256 bytes.
func benchFrames(tracks []*media.Track, second int) ([]*media.Frame, int) {
	var out []*media.Frame
	size := 0
	key := make([]byte, 40<<10)
	key[0] = 0x65
	delta := make([]byte, 8500)
	delta[0] = 0x41
	aac := make([]byte, 256)
	base := time.Duration(second) * time.Second
	a := 0
	for i := 0; i < 25; i++ {
		dts := base + time.Duration(i)*40*time.Millisecond
		nal := delta
		if i == 0 {
			nal = key
		}
		out = append(out, &media.Frame{Track: tracks[0], DTS: dts, PTS: dts, Keyframe: i == 0, NALUs: [][]byte{nal}})
		size += len(nal)
		for ; time.Duration(a)*1024*time.Second/48000 < time.Duration(i+1)*40*time.Millisecond; a++ {
			t := base + time.Duration(a)*1024*time.Second/48000
			out = append(out, &media.Frame{Track: tracks[1], DTS: t, PTS: t, Payload: aac})
			size += len(aac)
		}
	}
	return out, size
}

// BenchmarkWritePath compares the recorder's write path (fragments built
// from the hub's frames, 1 s parts, sidecar lines, 10 s files) with a bare
// loop writing the same media bytes in 1 s chunks: the CPU per byte of
// recording over that of writing (make bench reports both as MB/s; one op
// is one second of one ~2 Mbps stream).
func BenchmarkWritePath(b *testing.B) {
	tracks := mediatest.Tracks()
	seconds := make([][]*media.Frame, 10)
	var bytesPerSecond int
	for i := range seconds {
		seconds[i], bytesPerSecond = benchFrames(tracks, i)
	}
	b.Run("recorder", func(b *testing.B) {
		root := b.TempDir()
		w := newStreamWriter(root, media.Path{Vhost: "v", App: "a", Stream: "s"}, tracks, 10*time.Second, 1<<30, time.Second, func(FileInfo, error) {})
		b.SetBytes(int64(bytesPerSecond))
		b.ReportAllocs()
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			shift := time.Duration(n/10*10) * time.Second
			for _, f := range seconds[n%10] {
				g := *f
				g.DTS += shift
				g.PTS += shift
				if err := w.frame(&g); err != nil {
					b.Fatal(err)
				}
			}
			if n%200 == 199 { // keep the disk use bounded
				w.closeSegment(0, false, ReasonStopped)
				os.RemoveAll(filepath.Join(root, "v"))
			}
		}
		w.closeSegment(0, false, ReasonStopped)
	})
	b.Run("bare-write", func(b *testing.B) {
		root := b.TempDir()
		chunk := make([]byte, 0, bytesPerSecond)
		for _, f := range seconds[0] {
			if f.Track.Kind() == media.KindVideo {
				chunk = append(chunk, f.NALUs[0]...)
			} else {
				chunk = append(chunk, f.Payload...)
			}
		}
		b.SetBytes(int64(bytesPerSecond))
		b.ReportAllocs()
		b.ResetTimer()
		var file *os.File
		for n := 0; n < b.N; n++ {
			if n%10 == 0 {
				if file != nil {
					file.Sync()
					file.Close()
				}
				var err error
				if file, err = os.Create(filepath.Join(root, "f.mp4")); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := file.Write(chunk); err != nil {
				b.Fatal(err)
			}
		}
		file.Sync()
		file.Close()
	})
}
