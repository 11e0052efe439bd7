// Package rtsppub is the benchmarks' small RTSP publisher: it announces
// tracks and sends frames as RTP over TCP interleaved or UDP with no
// encoder behind it, so hundreds of them cost less CPU than the engine
// they measure, and a benchmark knows the instant each frame's last packet
// left (which no external publisher reports).
package rtsppub

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtpcodec"
	"github.com/svcplatform/svc/mediaengine/rtsp"
)

// Publisher is one RTSP publication (ANNOUNCE, SETUP, RECORD; RFC 2326
// section 10).
type Publisher struct {
	conn    net.Conn
	bw      *bufio.Writer
	mr      *rtsp.MessageReader
	url     string
	cseq    int
	session string

	udp    []*net.UDPConn // per track, when publishing over UDP
	tracks []*publishTrack
	frame  []byte // an interleaved frame being built
}

type publishTrack struct {
	track  *media.Track
	format rtpcodec.Format
	pkt    rtpcodec.Packetizer
	base   uint32
}

// errRefused is a non-2xx answer from the server.
var errRefused = errors.New("the RTSP server refused")

// Publish connects to the RTSP server at addr and records tracks at path
// ("app/stream") over UDP or TCP.
func Publish(addr, path string, tracks []*media.Track, udp bool) (*Publisher, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	p := &Publisher{conn: conn, bw: bufio.NewWriter(conn), mr: rtsp.NewMessageReader(conn), url: "rtsp://" + addr + "/" + path}
	if err := p.setup(tracks, udp); err != nil {
		p.Close()
		return nil, err
	}
	go io.Copy(io.Discard, conn) // RTCP and anything else the server sends
	return p, nil
}

func (p *Publisher) setup(tracks []*media.Track, udp bool) error {
	sdp := "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=svc-bench\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
	for i, t := range tracks {
		f, err := rtpcodec.FormatForTrack(t, uint8(96+i))
		if err != nil {
			return err
		}
		pk, err := rtpcodec.NewPacketizer(f, t, rand.Uint32(), uint16(rand.Uint32()), rtpcodec.DefaultMTU)
		if err != nil {
			return err
		}
		p.tracks = append(p.tracks, &publishTrack{track: t, format: f, pkt: pk, base: rand.Uint32()})
		sdp += fmt.Sprintf("m=%s 0 RTP/AVP %d\r\na=rtpmap:%d %s\r\n", t.Kind(), f.PayloadType, f.PayloadType, f.RTPMap())
		if fmtp := f.FMTPString(); fmtp != "" {
			sdp += fmt.Sprintf("a=fmtp:%d %s\r\n", f.PayloadType, fmtp)
		}
		sdp += "a=control:trackID=" + strconv.Itoa(i) + "\r\n"
	}
	h := rtsp.Header{}
	h.Set("Content-Type", "application/sdp")
	if _, err := p.request("ANNOUNCE", p.url, h, []byte(sdp)); err != nil {
		return err
	}
	for i := range p.tracks {
		h := rtsp.Header{}
		var conn *net.UDPConn
		if udp {
			var err error
			if conn, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); err != nil {
				return err
			}
			p.udp = append(p.udp, conn)
			port := conn.LocalAddr().(*net.UDPAddr).Port
			h.Set("Transport", fmt.Sprintf("RTP/AVP;unicast;client_port=%d-%d;mode=record", port, port+1))
		} else {
			h.Set("Transport", fmt.Sprintf("RTP/AVP/TCP;unicast;interleaved=%d-%d;mode=record", 2*i, 2*i+1))
		}
		resp, err := p.request("SETUP", p.url+"/trackID="+strconv.Itoa(i), h, nil)
		if err != nil {
			return err
		}
		if p.session == "" {
			p.session, _, _ = strings.Cut(resp.Header.Get("Session"), ";")
		}
		if udp {
			server, err := serverPort(resp.Header.Get("Transport"))
			if err != nil {
				return err
			}
			if err := p.connectUDP(i, conn, server); err != nil {
				return err
			}
		}
	}
	_, err := p.request("RECORD", p.url, rtsp.Header{}, nil)
	return err
}

// connectUDP re-binds the track's socket as a connected one, so a send
// is one system call to the server's RTP port.
func (p *Publisher) connectUDP(i int, conn *net.UDPConn, port int) error {
	local := conn.LocalAddr().(*net.UDPAddr)
	conn.Close()
	c, err := net.DialUDP("udp", local, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		return err
	}
	p.udp[i] = c
	return nil
}

// serverPort reads server_port from a SETUP answer's Transport.
func serverPort(transport string) (int, error) {
	for _, part := range strings.Split(transport, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "server_port="); ok {
			first, _, _ := strings.Cut(v, "-")
			return strconv.Atoi(first)
		}
	}
	return 0, fmt.Errorf("no server_port in %q", transport)
}

func (p *Publisher) request(method, url string, h rtsp.Header, body []byte) (*rtsp.Response, error) {
	p.cseq++
	h.Set("CSeq", strconv.Itoa(p.cseq))
	if p.session != "" {
		h.Set("Session", p.session)
	}
	req := &rtsp.Request{Method: method, URL: url, Proto: "RTSP/1.0", Header: h, Body: body}
	p.conn.SetDeadline(time.Now().Add(10 * time.Second))
	defer p.conn.SetDeadline(time.Time{})
	if err := req.Write(p.bw); err != nil {
		return nil, err
	}
	if err := p.bw.Flush(); err != nil {
		return nil, err
	}
	var m rtsp.Message
	for {
		if err := p.mr.Read(&m); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if m.Response != nil {
			break
		}
	}
	if m.Response.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%w %s: %d %s", errRefused, method, m.Response.StatusCode, m.Response.Reason)
	}
	return m.Response, nil
}

// Send packetises frame f of track i and sends it; it returns when the
// last packet has been handed to the kernel.
func (p *Publisher) Send(i int, f *media.Frame) error {
	t := p.tracks[i]
	ts := t.base + uint32(f.PTS*time.Duration(t.format.ClockRate)/time.Second)
	return t.pkt.Packetize(f, ts, func(pkt []byte) error {
		if p.udp != nil {
			_, err := p.udp[i].Write(pkt)
			return err
		}
		p.frame = append(p.frame[:0], '$', byte(2*i), 0, 0)
		binary.BigEndian.PutUint16(p.frame[2:], uint16(len(pkt)))
		p.frame = append(p.frame, pkt...)
		_, err := p.conn.Write(p.frame)
		return err
	})
}

// Close ends the session.
func (p *Publisher) Close() {
	for _, c := range p.udp {
		c.Close()
	}
	p.conn.Close()
}
