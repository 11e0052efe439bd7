package recorder

import (
	"context"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/filesource"
	"github.com/svcplatform/svc/mediaengine/fmp4"
	"github.com/svcplatform/svc/mediaengine/internal/mediaprobe"
	"github.com/svcplatform/svc/mediaengine/media"
)

// TestFinishedFileSeeksByItsSegmentIndex records 40 s of ffmpeg's
// H.264+AAC into one file: after its init the file carries an sidx whose
// references start at the keyframe fragments, carry their decode times
// and end at the file's end; ffprobe reads the same packets as from the
// same file with that space left a free box; ffmpeg seeking to 30 s over
// HTTP Range reads a small share of the file, which it cannot without the
// index (it then reads every moof before it seeks).
func TestFinishedFileSeeksByItsSegmentIndex(t *testing.T) {
	dir := t.TempDir()
	ffmpegRun(t, dir, "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
		"-t", "40", "-c:v", "libx264", "-preset", "veryfast", "-g", "50", "-bf", "0", "-pix_fmt", "yuv420p", "-c:a", "aac", "-f", "mpegts", "clip.ts")
	clip, err := filesource.LoadFile(filepath.Join(dir, "clip.ts"))
	if err != nil {
		t.Fatal(err)
	}
	files, probes, root := recordFrames(t, clip.Tracks, clip.Frames, time.Minute)
	if len(files) != 1 {
		t.Fatalf("%d files, want one", len(files))
	}
	abs := filepath.Join(root, files[0].Rel)
	b, err := os.ReadFile(abs)
	if err != nil {
		t.Fatal(err)
	}
	x, err := readIndex(abs + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	checkSidx(t, b, x)

	// The same file without the index reads as the same packets.
	bare := filepath.Join(dir, "bare.mp4")
	copy(b[x.InitSize():], freeBox(x.head.SidxSpace))
	if err := os.WriteFile(bare, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if p := mediaprobe.ProbeFile(t, bare); !reflect.DeepEqual(p.Packets, probes[0].Packets) {
		t.Fatalf("ffprobe reads %d packets with the index and %d, not the same, without", len(probes[0].Packets), len(p.Packets))
	}

	// ffmpeg -ss over HTTP Range.
	with, seeks, without, seeksWithout := seekOverRange(t, abs, bare, 30)
	t.Logf("ffmpeg -ss 30 over Range read %d bytes of %d (%d seeks) with the index, %d (%d seeks) without", with, len(b), seeks, without, seeksWithout)
	if with > int64(len(b))/4 {
		t.Fatalf("ffmpeg read %d bytes of %d to seek with the index", with, len(b))
	}
}

// checkSidx checks the segment index of a finished file b against its
// sidecar x: right after the init, an sidx per track, each with a
// reference from each keyframe part to the next at a moof whose tfdt for
// that track is the time the index gives, together reaching the file's
// end.
func checkSidx(t *testing.T, b []byte, x *Index) {
	t.Helper()
	boxes, err := fmp4.ReadBoxes(b)
	if err != nil {
		t.Fatal(err)
	}
	moofs := map[int64]fmp4.Box{}
	for _, bx := range boxes {
		if bx.Type == "moof" {
			moofs[int64(bx.Offset)] = bx
		}
	}
	keys := 0
	for _, p := range x.Parts {
		if p.Key {
			keys++
		}
	}
	tracks := len(x.head.Tracks)
	if len(boxes) < 3+tracks || int64(boxes[2].Offset) != x.InitSize() {
		t.Fatalf("%d boxes; the third at %d", len(boxes), boxes[2].Offset)
	}
	for k := range tracks {
		sidx := boxes[2+k]
		d := sidx.Data
		if sidx.Type != "sidx" || d[0] != 1 {
			t.Fatalf("box %d after the init is %q version %d, want an sidx of version 1", k, sidx.Type, d[0])
		}
		track := binary.BigEndian.Uint32(d[4:])
		ept := binary.BigEndian.Uint64(d[12:])
		off := int64(sidx.Offset+sidx.Size) + int64(binary.BigEndian.Uint64(d[20:]))
		n := int(binary.BigEndian.Uint16(d[30:]))
		if n != keys || len(d) != 32+12*n {
			t.Fatalf("sidx of track %d has %d references (%d bytes); the file has %d keyframe parts", track, n, len(d), keys)
		}
		for i := range n {
			r := d[32+12*i:]
			size, dur, sap := int64(binary.BigEndian.Uint32(r)), uint64(binary.BigEndian.Uint32(r[4:])), binary.BigEndian.Uint32(r[8:])
			moof, ok := moofs[off]
			if !ok || sap>>31 != 1 {
				t.Fatalf("track %d reference %d at %d: no moof there (%v) or no SAP (%x)", track, i, off, ok, sap)
			}
			if got := tfdtOf(t, moof, track); got != ept {
				t.Fatalf("track %d reference %d: tfdt %d, the index says %d", track, i, got, ept)
			}
			off += size
			ept += dur
		}
		if off != int64(len(b)) {
			t.Fatalf("track %d: the references end at %d; the file at %d", track, off, len(b))
		}
	}
}

func tfdtOf(t *testing.T, moof fmp4.Box, track uint32) uint64 {
	t.Helper()
	for _, traf := range moof.Children {
		if h := fmp4.Find(traf.Children, "tfhd"); h == nil || binary.BigEndian.Uint32(h.Data[4:]) != track {
			continue
		}
		if d := fmp4.Find(traf.Children, "tfdt"); d != nil {
			v, err := fmp4.ParseTfdt(d.Data)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("moof at %d has no traf of track %d", moof.Offset, track)
	return 0
}

// TestBuildSidxFitsItsSpace: more keyframe parts than the space holds
// references for are merged into fewer, longer references that still
// cover every part in order; parts that do not follow the space are not
// indexed.
func TestBuildSidxFitsItsSpace(t *testing.T) {
	tracks := []indexTrack{{ID: 2, Codec: string(media.CodecAAC), Timescale: 48000}, {ID: 1, Codec: string(media.CodecH264), Timescale: 90000}}
	const at, refs = 1000, 10
	space := 2*sidxSpace(refs) + 4 // room for 10 each, and a remainder too small for a free box
	var parts []sidxPart
	off := int64(at) + space
	for i := range 101 {
		parts = append(parts, sidxPart{off: off, size: 1000 + int64(i), key: i%2 == 0,
			bases: []trackSpan{{id: 1, base: uint64(i) * 45000}, {id: 2, base: uint64(i) * 24000}}})
		off += 1000 + int64(i)
	}
	ends := map[uint32]uint64{1: 101 * 45000, 2: 101 * 24000}
	b, n, ok := buildSidx(parts, tracks, ends, at, space)
	if !ok || int64(len(b)) > space {
		t.Fatalf("not built (%v) or %d bytes for a space of %d", ok, len(b), space)
	}
	boxes, err := fmp4.ReadBoxes(append(b, make([]byte, space-int64(len(b)))...))
	if err != nil {
		t.Fatal(err)
	}
	if len(boxes) != 3 || boxes[0].Type != "sidx" || boxes[1].Type != "sidx" || boxes[2].Type != "free" || int64(boxes[2].Offset) != n {
		t.Fatalf("boxes %+v", boxes)
	}
	for k, want := range []uint32{1, 2} { // the video track's first
		d := boxes[k].Data
		if id := binary.BigEndian.Uint32(d[4:]); id != want {
			t.Fatalf("sidx %d is of track %d, want %d", k, id, want)
		}
		cnt := int(binary.BigEndian.Uint16(d[30:]))
		var size int64
		var dur uint64
		for i := range cnt {
			size += int64(binary.BigEndian.Uint32(d[32+12*i:]))
			dur += uint64(binary.BigEndian.Uint32(d[36+12*i:]))
		}
		if cnt > refs || size != off-parts[0].off || dur != ends[want] {
			t.Fatalf("track %d: %d references of %d bytes, %d ticks; want at most %d over %d bytes, %d ticks", want, cnt, size, dur, refs, off-parts[0].off, ends[want])
		}
	}
	parts[3].off++
	if _, _, ok := buildSidx(parts, tracks, ends, at, space); ok {
		t.Fatal("parts with a gap were indexed")
	}
}

// seekOverRange serves a file and its copy without the index over HTTP and
// has ffmpeg seek to at seconds in each and decode one frame; it returns
// what ffmpeg itself counted it read and how many seeks it made in each
// (the server's count would include what loopback's socket buffers took
// and ffmpeg never read).
func seekOverRange(t *testing.T, indexed, bare string, at int) (read, seeks, readBare, seeksBare int64) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := indexed
		if r.URL.Path == "/bare.mp4" {
			p = bare
		}
		http.ServeFile(w, r, p)
	}))
	defer srv.Close()
	stats := regexp.MustCompile(`Statistics: (\d+) bytes read, (\d+) seeks`)
	seek := func(name string) (read, seeks int64) {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		url := srv.URL + "/" + name
		ss := strconv.Itoa(at)
		out, err := exec.CommandContext(ctx, "ffmpeg", "-v", "verbose", "-nostdin", "-ss", ss, "-i", url, "-frames:v", "1", "-f", "null", "-").CombinedOutput()
		m := stats.FindSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("ffmpeg -ss %s -i %s: %v: %s", ss, url, err, out)
		}
		read, _ = strconv.ParseInt(string(m[1]), 10, 64)
		seeks, _ = strconv.ParseInt(string(m[2]), 10, 64)
		return read, seeks
	}
	read, seeks = seek("indexed.mp4")
	readBare, seeksBare = seek("bare.mp4")
	return read, seeks, readBare, seeksBare
}
