package psrtp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
)

// GStreamer's mpegpsmux takes neither H.265 nor G.711 and ffmpeg's program
// stream muxer writes no PSM and no G.711, so the H.265 + G.711 A-law
// stream GB28181 cameras send is muxed here: ffmpeg encodes the two
// elementary streams (H.265 Annex B with access unit delimiters on
// standard output, A-law on descriptor 3) and each access unit becomes a
// pack with a PSM (stream types 0x24 and 0x90) and its PES packets.

// h265G711Args encode a live 320x240 25 fps H.265 test pattern and a
// 1 kHz tone in 8 kHz A-law.
func h265G711Args() []string {
	return []string{"ffmpeg", "-hide_banner", "-loglevel", "error",
		"-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-re", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=8000",
		"-map", "0:v", "-c:v", "libx265", "-preset", "ultrafast", "-tune", "zerolatency", "-x265-params", "log-level=error:keyint=25:bframes=0",
		"-pix_fmt", "yuv420p", "-bsf:v", "hevc_metadata=aud=insert", "-f", "hevc", "pipe:1",
		"-map", "1:a", "-c:a", "pcm_alaw", "-ar", "8000", "-ac", "1", "-f", "alaw", "pipe:3"}
}

// StartH265G711 sends H.265 video and G.711 A-law audio in a program
// stream with a PSM, as GB28181 cameras do; cfg.Args is ignored.
func StartH265G711(t testing.TB, cfg Config) *Sender {
	t.Helper()
	args := h265G711Args()
	if _, err := exec.LookPath(args[0]); err != nil {
		t.Fatalf("%s is required (scripts/install-deps.sh test installs it): %v", args[0], err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sender{t: t, cancel: cancel, done: make(chan struct{})}
	out, err := s.connect(cfg)
	if err != nil {
		cancel()
		t.Fatalf("psrtp: %v", err)
	}
	ar, aw, err := os.Pipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s.cmd = exec.CommandContext(ctx, args[0], args[1:]...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	s.cmd.Stderr = &lockedWriter{mu: &s.mu, w: &s.stderr}
	s.cmd.ExtraFiles = []*os.File{aw}
	video, err := s.cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", args[0], err)
	}
	aw.Close()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(muxH265G711(video, ar, pw)) }()
	go func() {
		defer close(s.done)
		err := s.pump(pr, out, cfg)
		pr.Close()
		s.cmd.Wait()
		ar.Close()
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
	}()
	t.Cleanup(s.Stop)
	return s
}

// Stream ids and PSM stream types of the muxed stream.
const (
	videoID, audioID     = 0xe0, 0xc0
	typeH265, typeG711A  = 0x24, 0x90
	audioChunk           = 320 // 40 ms of 8 kHz A-law
	videoTicks           = 90000 / 25
	maxPESPayload        = 65000
	programMuxRate       = 6106 // 50-byte units per second, about 2.4 Mbit/s
	audioTicksPerByte    = 90000 / 8000
	startCodeAUD         = "\x00\x00\x01\x46\x01"
	initialPTS           = 90000
	psmLength            = 18
	psmElementaryMapSize = 8
)

// muxH265G711 writes a program stream of the video access units and the
// audio chunks as they come, until either input ends.
func muxH265G711(video, audio io.Reader, w io.Writer) error {
	var mu sync.Mutex
	write := func(b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := w.Write(b)
		return err
	}
	errc := make(chan error, 2)
	go func() {
		br := bufio.NewReaderSize(audio, 4096)
		buf := make([]byte, audioChunk)
		pts := int64(initialPTS)
		for {
			if _, err := io.ReadFull(br, buf); err != nil {
				errc <- err
				return
			}
			if err := write(pack(pts, false, pes(audioID, pts, buf))); err != nil {
				errc <- err
				return
			}
			pts += audioChunk * audioTicksPerByte
		}
	}()
	go func() {
		pts := int64(initialPTS)
		err := splitAccessUnits(video, func(au []byte) error {
			var body []byte
			for off := 0; off < len(au); off += maxPESPayload {
				if off == 0 {
					body = append(body, pes(videoID, pts, au[:min(len(au), maxPESPayload)])...)
				} else {
					body = append(body, pes(videoID, -1, au[off:min(len(au), off+maxPESPayload)])...)
				}
			}
			pts += videoTicks
			return write(pack(pts-videoTicks, true, body))
		})
		errc <- err
	}()
	err := <-errc
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// splitAccessUnits calls fn with each access unit of an H.265 Annex B
// stream whose units begin with an access unit delimiter.
func splitAccessUnits(r io.Reader, fn func([]byte) error) error {
	var pending []byte
	chunk := make([]byte, 64<<10)
	aud := []byte(startCodeAUD)
	for {
		n, err := r.Read(chunk)
		pending = append(pending, chunk[:n]...)
		for {
			i := bytes.Index(pending[min(1, len(pending)):], aud)
			if i < 0 {
				break
			}
			if ferr := fn(append([]byte(nil), pending[:i+1]...)); ferr != nil {
				return ferr
			}
			pending = append(pending[:0], pending[i+1:]...)
		}
		if err != nil {
			return err
		}
	}
}

// pack is a pack header (ISO/IEC 13818-1 2.5.3.3) with the SCR at pts,
// the PSM when withPSM, and body.
func pack(pts int64, withPSM bool, body []byte) []byte {
	scr := uint64(pts)
	b := []byte{0, 0, 1, 0xba,
		0x44 | byte(scr>>27)&0x38 | byte(scr>>28)&0x03, byte(scr >> 20),
		0x04 | byte(scr>>12)&0xf8 | byte(scr>>13)&0x03, byte(scr >> 5),
		0x04 | byte(scr<<3)&0xf8, 0x01,
		byte(programMuxRate >> 14), byte(programMuxRate >> 6 & 0xff), byte(programMuxRate<<2&0xff) | 0x03, 0xf8}
	if withPSM {
		psm := []byte{0, 0, 1, 0xbc, 0, psmLength, 0xe0, 0xff, 0, 0, 0, psmElementaryMapSize,
			typeH265, videoID, 0, 0, typeG711A, audioID, 0, 0, 0, 0, 0, 0}
		b = append(b, psm...)
	}
	return append(b, body...)
}

// pes is a PES packet of stream id carrying payload, with a PTS unless pts
// is negative.
func pes(id byte, pts int64, payload []byte) []byte {
	hdr := []byte{0x80, 0x00, 0x00}
	if pts >= 0 {
		p := uint64(pts)
		hdr = []byte{0x80, 0x80, 5, 0x21 | byte(p>>29)&0x0e, byte(p >> 22), 0x01 | byte(p>>14)&0xfe, byte(p >> 7), 0x01 | byte(p<<1)&0xfe}
	}
	b := []byte{0, 0, 1, id, 0, 0}
	binary.BigEndian.PutUint16(b[4:], uint16(len(hdr)+len(payload)))
	b = append(b, hdr...)
	return append(b, payload...)
}
