package rtsp

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestMessageReader(t *testing.T) {
	in := "OPTIONS rtsp://cam/stream RTSP/1.0\r\nCSeq: 1\r\nUser-Agent: x\r\n\r\n" +
		"\r\n" + // stray CRLF keepalive
		"$\x01\x00\x03abc" +
		"RTSP/1.0 200 OK\nCSeq: 2\nContent-Length: 4\nX-Long: a\n b\n\nbody" +
		"ANNOUNCE rtsp://h/a/b RTSP/1.0\r\nCSeq: 3\r\nContent-Length: 0\r\n\r\n"
	r := NewMessageReader(strings.NewReader(in))
	var m Message
	if err := r.Read(&m); err != nil || m.Request == nil || m.Request.Method != "OPTIONS" || m.Request.CSeq() != 1 || m.Request.Header.Get("user-agent") != "x" {
		t.Fatalf("request: %+v %v", m.Request, err)
	}
	if err := r.Read(&m); err != nil || m.Channel != 1 || string(m.Payload) != "abc" {
		t.Fatalf("frame: %+v %v", m, err)
	}
	if err := r.Read(&m); err != nil || m.Response == nil || m.Response.StatusCode != 200 || string(m.Response.Body) != "body" || m.Response.Header.Get("X-Long") != "a b" {
		t.Fatalf("response: %+v %v", m.Response, err)
	}
	if err := r.Read(&m); err != nil || m.Request.Method != "ANNOUNCE" || m.Request.Body != nil {
		t.Fatalf("announce: %+v %v", m.Request, err)
	}
}

func TestMessageReaderRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"garbage start line", "hello world\r\n\r\n", ErrMalformed},
		{"bad status", "RTSP/1.0 abc OK\r\n\r\n", ErrMalformed},
		{"header without colon", "OPTIONS * RTSP/1.0\r\nnocolon\r\n\r\n", ErrMalformed},
		{"negative length", "OPTIONS * RTSP/1.0\r\nContent-Length: -1\r\n\r\n", ErrMalformed},
		{"huge body", "OPTIONS * RTSP/1.0\r\nContent-Length: 999999999\r\n\r\n", ErrMessageTooLarge},
		{"huge header", "OPTIONS * RTSP/1.0\r\nX: " + strings.Repeat("a", MaxHeaderBytes) + "\r\n\r\n", ErrMessageTooLarge},
		{"too many headers", "OPTIONS * RTSP/1.0\r\n" + strings.Repeat("X: y\r\n", MaxHeaderLines+1) + "\r\n", ErrMessageTooLarge},
		{"lowercase method", "options * RTSP/1.0\r\n\r\n", ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Message
			if err := NewMessageReader(strings.NewReader(tt.in)).Read(&m); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestMessageWriteReadRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	req := &Request{Method: MethodAnnounce, URL: "rtsp://h/a/b", Header: Header{{"CSeq", "7"}, {"Content-Type", "application/sdp"}}, Body: []byte("v=0\r\n")}
	resp := &Response{StatusCode: StatusUnsupportedTransport, Header: Header{{"CSeq", "7"}}}
	req.Write(w)
	resp.Write(w)
	w.Flush()
	if !strings.Contains(buf.String(), "CSeq: 7\r\n") {
		t.Fatal("CSeq spelling not kept")
	}
	r := NewMessageReader(&buf)
	var m Message
	if err := r.Read(&m); err != nil || string(m.Request.Body) != "v=0\r\n" || m.Request.Header.Get("content-type") != "application/sdp" {
		t.Fatalf("%+v %v", m.Request, err)
	}
	if err := r.Read(&m); err != nil || m.Response.StatusCode != 461 || m.Response.Reason != "Unsupported Transport" {
		t.Fatalf("%+v %v", m.Response, err)
	}
}

func FuzzMessageReader(f *testing.F) {
	f.Add([]byte("DESCRIBE rtsp://h/a RTSP/1.0\r\nCSeq: 2\r\nAccept: application/sdp\r\n\r\n"))
	f.Add([]byte("RTSP/1.0 200 OK\r\nCSeq: 2\r\nContent-Length: 5\r\n\r\nv=0\r\n$\x00\x00\x02ab"))
	f.Add([]byte("$\x01\xff\xff"))
	f.Add([]byte("SETUP rtsp://h/a/trackID=0 RTSP/1.0\r\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n folded\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewMessageReader(bytes.NewReader(data))
		var m Message
		for i := 0; i < 100; i++ {
			if err := r.Read(&m); err != nil {
				return
			}
			if m.Request != nil && len(m.Request.Body) > MaxBodyBytes || len(m.Payload) > 65535 {
				t.Fatal("limit exceeded")
			}
		}
	})
}
