package rtsp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
)

// Limits of what MessageReader accepts from a peer. They bound memory per
// connection: a start line and header block of at most MaxHeaderBytes
// (RFC 2326 sets no limit; real messages are a few hundred bytes), a body
// of at most MaxBodyBytes (an SDP with many tracks is a few kilobytes),
// and interleaved frames of at most 64 KiB by construction.
const (
	MaxHeaderBytes = 16 << 10
	MaxHeaderLines = 128
	MaxBodyBytes   = 256 << 10
)

// ErrIdle wraps a read deadline that expired between messages.
var ErrIdle = errors.New("rtsp: idle")

// Message is what MessageReader.Read found: a request, a response, or an
// interleaved binary frame (Channel >= 0), whose Payload is valid only
// until the next Read.
type Message struct {
	Request  *Request
	Response *Response
	Channel  int
	Payload  []byte
}

// MessageReader reads RTSP messages and interleaved frames ($, channel,
// 16-bit length, data; RFC 2326 section 10.12) from one connection.
type MessageReader struct {
	br    *bufio.Reader
	frame []byte
}

// NewMessageReader reads from r.
func NewMessageReader(r io.Reader) *MessageReader {
	return &MessageReader{br: bufio.NewReaderSize(r, MaxHeaderBytes), frame: make([]byte, 0, 2048)}
}

// Read reads the next message into m.
func (r *MessageReader) Read(m *Message) error {
	*m = Message{Channel: -1}
	for {
		b, err := r.br.Peek(1)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Nothing of a message was consumed: the caller may read
				// on after deciding the peer is still alive.
				return fmt.Errorf("%w: %w", ErrIdle, err)
			}
			return err
		}
		switch b[0] {
		case '$':
			return r.readFrame(m)
		case '\r', '\n':
			// Stray line ends between messages (some clients send a CRLF
			// keepalive).
			r.br.Discard(1)
			continue
		}
		return r.readMessage(m)
	}
}

func (r *MessageReader) readFrame(m *Message) error {
	hdr, err := r.br.Peek(4)
	if err != nil {
		return err
	}
	n := int(binary.BigEndian.Uint16(hdr[2:]))
	m.Channel = int(hdr[1])
	r.br.Discard(4)
	if cap(r.frame) < n {
		r.frame = make([]byte, n)
	}
	r.frame = r.frame[:n]
	if _, err := io.ReadFull(r.br, r.frame); err != nil {
		return err
	}
	m.Payload = r.frame
	return nil
}

func (r *MessageReader) readMessage(m *Message) error {
	used := 0
	line, err := r.line(&used)
	if err != nil {
		return err
	}
	var h *Header
	if strings.HasPrefix(line, "RTSP/") {
		resp, err := parseStatusLine(line)
		if err != nil {
			return err
		}
		m.Response, h = resp, &resp.Header
	} else {
		req, err := parseRequestLine(line)
		if err != nil {
			return err
		}
		m.Request, h = req, &req.Header
	}
	for {
		line, err := r.line(&used)
		if err != nil {
			return err
		}
		if line == "" {
			break
		}
		if len(*h) >= MaxHeaderLines {
			return fmt.Errorf("%w: more than %d header lines", ErrMessageTooLarge, MaxHeaderLines)
		}
		if line[0] == ' ' || line[0] == '\t' {
			// A folded continuation of the previous header.
			if len(*h) == 0 {
				return fmt.Errorf("%w: continuation line first", ErrMalformed)
			}
			(*h)[len(*h)-1].Value += " " + strings.TrimSpace(line)
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return fmt.Errorf("%w: header line %q", ErrMalformed, Truncate(line))
		}
		h.Add(name, strings.TrimSpace(value))
	}
	body, err := r.body(*h)
	if err != nil {
		return err
	}
	if m.Request != nil {
		m.Request.Body = body
	} else {
		m.Response.Body = body
	}
	return nil
}

func (r *MessageReader) body(h Header) ([]byte, error) {
	v := h.Get("Content-Length")
	if v == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%w: Content-Length %q", ErrMalformed, Truncate(v))
	}
	if n > MaxBodyBytes {
		return nil, fmt.Errorf("%w: body of %d bytes", ErrMessageTooLarge, n)
	}
	if n == 0 {
		return nil, nil
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.br, body); err != nil {
		return nil, err
	}
	return body, nil
}

// line reads one line (CRLF or LF) without its end, counting its bytes
// against the header limit.
func (r *MessageReader) line(used *int) (string, error) {
	b, err := r.br.ReadSlice('\n')
	*used += len(b)
	if errors.Is(err, bufio.ErrBufferFull) || *used > MaxHeaderBytes {
		return "", fmt.Errorf("%w: header block over %d bytes", ErrMessageTooLarge, MaxHeaderBytes)
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(b) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	return string(bytes.TrimRight(b, "\r\n")), nil
}

func parseRequestLine(line string) (*Request, error) {
	method, rest, ok1 := strings.Cut(line, " ")
	uri, proto, ok2 := strings.Cut(strings.TrimLeft(rest, " "), " ")
	proto = strings.TrimSpace(proto)
	if !ok1 || !ok2 || method == "" || uri == "" || !strings.HasPrefix(proto, "RTSP/") {
		return nil, fmt.Errorf("%w: request line %q", ErrMalformed, Truncate(line))
	}
	for _, c := range method {
		if c < 'A' || c > 'Z' && c != '_' {
			return nil, fmt.Errorf("%w: method %q", ErrMalformed, Truncate(method))
		}
	}
	return &Request{Method: method, URL: uri, Proto: proto}, nil
}

func parseStatusLine(line string) (*Response, error) {
	proto, rest, ok := strings.Cut(line, " ")
	code, reason, _ := strings.Cut(strings.TrimLeft(rest, " "), " ")
	n, err := strconv.Atoi(code)
	if !ok || err != nil || n < 100 || n > 999 {
		return nil, fmt.Errorf("%w: status line %q", ErrMalformed, Truncate(line))
	}
	return &Response{Proto: proto, StatusCode: n, Reason: reason}, nil
}

// Truncate shortens text a peer sent to what an error message quotes.
func Truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
