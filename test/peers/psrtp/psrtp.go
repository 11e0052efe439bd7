// Package psrtp is the GB/T 28181 media sender the tests use as a
// device: GStreamer (gst-launch-1.0 with mpegpsmux) or ffmpeg (-f vob,
// a program stream without a PSM) encodes a test pattern into an MPEG
// program stream, and the sender packs it into RTP the way devices do
// (payload type 96, 90 kHz, each pack split into packets of at most
// MaxPayload bytes with the marker on its last packet) and sends it over
// UDP or TCP with RFC 4571 framing, dialling or listening.
package psrtp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pion/rtp"
)

// MaxPayload is the RTP payload size a pack is split at.
const MaxPayload = 1400

// Transports of Config.
const (
	UDP       = "udp"        // datagrams to Addr
	TCPDial   = "tcp"        // connect to Addr (the engine listens: TCP passive on its side)
	TCPListen = "tcp-listen" // listen on Addr and send to the one who connects (TCP active on the engine's side)
)

// H264Pipeline is a live 320x240 25 fps H.264 test pattern with AAC audio
// muxed by mpegpsmux, which writes a PSM.
const H264Pipeline = "videotestsrc is-live=true pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=25/1 ! " +
	"x264enc tune=zerolatency key-int-max=25 bitrate=600 ! video/x-h264,profile=main ! h264parse ! mux. " +
	"audiotestsrc is-live=true freq=1000 ! audio/x-raw,rate=44100,channels=1 ! avenc_aac ! aacparse ! mux. " +
	"mpegpsmux name=mux ! fdsink fd=1"

// Config says what to send and where.
type Config struct {
	// Args are the program and arguments writing the program stream to
	// standard output; default gst-launch-1.0 with H264Pipeline.
	Args []string
	// Transport is UDP, TCPDial or TCPListen.
	Transport string
	// Addr is the destination (UDP, TCPDial) or the listening address
	// (TCPListen).
	Addr string
	// SSRC goes into every packet (GB/T 28181: the y= line of the SDP).
	SSRC uint32
	// Source is the local UDP address to send from; default any.
	Source string
}

// GStreamerArgs returns the gst-launch-1.0 command line for a pipeline
// description.
func GStreamerArgs(pipeline string) []string {
	return append([]string{"gst-launch-1.0", "-q"}, splitFields(pipeline)...)
}

// FFmpegVOBArgs returns an ffmpeg command line encoding a live test
// pattern with codec (libx264 or libx265) into a program stream without a
// PSM.
func FFmpegVOBArgs(codec string) []string {
	return []string{"ffmpeg", "-hide_banner", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25",
		"-c:v", codec, "-x265-params", "log-level=error", "-g", "25", "-bf", "0", "-pix_fmt", "yuv420p", "-preset", "ultrafast", "-f", "vob", "pipe:1"}
}

// Sender is a running sender.
type Sender struct {
	t       testing.TB
	cmd     *exec.Cmd
	cancel  context.CancelFunc
	done    chan struct{}
	packets atomic.Uint64
	stderr  bytes.Buffer
	mu      sync.Mutex
	err     error
	ln      net.Listener
}

// Start runs the encoder and sends until Stop or the end of the test.
func Start(t testing.TB, cfg Config) *Sender {
	t.Helper()
	if len(cfg.Args) == 0 {
		cfg.Args = GStreamerArgs(H264Pipeline)
	}
	if _, err := exec.LookPath(cfg.Args[0]); err != nil {
		t.Fatalf("%s is required (scripts/install-deps.sh test installs it): %v", cfg.Args[0], err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sender{t: t, cancel: cancel, done: make(chan struct{})}
	out, err := s.connect(cfg)
	if err != nil {
		cancel()
		t.Fatalf("psrtp: %v", err)
	}
	s.cmd = exec.CommandContext(ctx, cfg.Args[0], cfg.Args[1:]...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	s.cmd.Stderr = &lockedWriter{mu: &s.mu, w: &s.stderr}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", cfg.Args[0], err)
	}
	go func() {
		defer close(s.done)
		err := s.pump(stdout, out, cfg)
		s.cmd.Wait()
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
	}()
	t.Cleanup(s.Stop)
	return s
}

// packetWriter sends one RTP packet.
type packetWriter func(pkt []byte) error

func (s *Sender) connect(cfg Config) (packetWriter, error) {
	switch cfg.Transport {
	case UDP:
		var laddr *net.UDPAddr
		if cfg.Source != "" {
			a, err := net.ResolveUDPAddr("udp", cfg.Source)
			if err != nil {
				return nil, err
			}
			laddr = a
		}
		raddr, err := net.ResolveUDPAddr("udp", cfg.Addr)
		if err != nil {
			return nil, err
		}
		c, err := net.DialUDP("udp", laddr, raddr)
		if err != nil {
			return nil, err
		}
		s.t.Cleanup(func() { c.Close() })
		return func(pkt []byte) error {
			_, err := c.Write(pkt)
			var op *net.OpError
			if errors.As(err, &op) && errors.Is(err, syscall.ECONNREFUSED) {
				return nil // nobody listening yet or any more: datagrams are lost, as on a network
			}
			return err
		}, nil
	case TCPDial:
		var c net.Conn
		return framed(func() (net.Conn, error) {
			if c == nil {
				var err error
				if c, err = net.DialTimeout("tcp", cfg.Addr, 5*time.Second); err != nil {
					return nil, err
				}
				s.t.Cleanup(func() { c.Close() })
			}
			return c, nil
		}), nil
	case TCPListen:
		ln, err := net.Listen("tcp", cfg.Addr)
		if err != nil {
			return nil, err
		}
		s.ln = ln
		s.t.Cleanup(func() { ln.Close() })
		var c net.Conn
		return framed(func() (net.Conn, error) {
			if c == nil {
				var err error
				if c, err = ln.Accept(); err != nil {
					return nil, err
				}
				s.t.Cleanup(func() { c.Close() })
			}
			return c, nil
		}), nil
	}
	return nil, errors.New("psrtp: unknown transport " + cfg.Transport)
}

// framed writes RFC 4571 frames: a 16-bit length, then the packet.
func framed(conn func() (net.Conn, error)) packetWriter {
	var buf []byte
	return func(pkt []byte) error {
		c, err := conn()
		if err != nil {
			return err
		}
		buf = binary.BigEndian.AppendUint16(buf[:0], uint16(len(pkt)))
		buf = append(buf, pkt...)
		_, err = c.Write(buf)
		return err
	}
}

// ListenAddr is the address a TCPListen sender accepts on.
func (s *Sender) ListenAddr() net.Addr { return s.ln.Addr() }

// Packets is how many RTP packets were sent.
func (s *Sender) Packets() uint64 { return s.packets.Load() }

// pump splits the program stream at pack headers and sends each pack.
func (s *Sender) pump(r io.Reader, send packetWriter, cfg Config) error {
	br := bufio.NewReaderSize(r, 64<<10)
	start := time.Now()
	seq := uint16(time.Now().UnixNano())
	var pending []byte
	chunk := make([]byte, 32<<10)
	packStart := []byte{0, 0, 1, 0xba}
	for {
		n, err := br.Read(chunk)
		pending = append(pending, chunk[:n]...)
		for {
			i := bytes.Index(pending[min(1, len(pending)):], packStart)
			if i < 0 {
				break
			}
			pack := pending[:i+1]
			ts := uint32(time.Since(start) * 90000 / time.Second)
			for off := 0; off < len(pack); off += MaxPayload {
				end := min(off+MaxPayload, len(pack))
				p := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: seq, Timestamp: ts, SSRC: cfg.SSRC,
					Marker: end == len(pack)}, Payload: pack[off:end]}
				raw, _ := p.Marshal()
				seq++
				if werr := send(raw); werr != nil {
					return werr
				}
				s.packets.Add(1)
			}
			pending = append(pending[:0], pending[i+1:]...)
		}
		if err != nil {
			return err
		}
	}
}

// Stop ends the encoder and waits for the sender.
func (s *Sender) Stop() {
	s.cancel()
	if s.ln != nil {
		s.ln.Close() // a listening sender nobody connected to waits in Accept
	}
	<-s.done
}

// Stderr is what the encoder printed.
func (s *Sender) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// splitFields splits a pipeline description at spaces; the descriptions
// here need no quoting.
func splitFields(s string) []string { return strings.Fields(s) }
