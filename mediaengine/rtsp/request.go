package rtsp

import (
	"bufio"
	"strconv"
)

// Methods of RFC 2326 the package speaks.
const (
	MethodOptions      = "OPTIONS"
	MethodDescribe     = "DESCRIBE"
	MethodAnnounce     = "ANNOUNCE"
	MethodSetup        = "SETUP"
	MethodPlay         = "PLAY"
	MethodPause        = "PAUSE"
	MethodRecord       = "RECORD"
	MethodTeardown     = "TEARDOWN"
	MethodGetParameter = "GET_PARAMETER"
	MethodSetParameter = "SET_PARAMETER"
)

// Request is an RTSP request.
type Request struct {
	Method string
	// URL is the request URI as written (an absolute rtsp:// URL, or "*").
	URL    string
	Proto  string // "RTSP/1.0"
	Header Header
	Body   []byte
}

// CSeq returns the request's sequence number, or -1 when missing or bad.
func (r *Request) CSeq() int {
	n, err := strconv.Atoi(r.Header.Get("CSeq"))
	if err != nil {
		return -1
	}
	return n
}

// Write writes the request; the caller flushes.
func (r *Request) Write(w *bufio.Writer) error {
	proto := r.Proto
	if proto == "" {
		proto = "RTSP/1.0"
	}
	w.WriteString(r.Method)
	w.WriteByte(' ')
	w.WriteString(r.URL)
	w.WriteByte(' ')
	w.WriteString(proto)
	w.WriteString("\r\n")
	return writeHeaderAndBody(w, r.Header, r.Body)
}

func writeHeaderAndBody(w *bufio.Writer, h Header, body []byte) error {
	for _, f := range h {
		if len(body) > 0 && (f.Name == "Content-Length" || f.Name == "content-length") {
			continue
		}
		w.WriteString(f.Name)
		w.WriteString(": ")
		w.WriteString(f.Value)
		w.WriteString("\r\n")
	}
	if len(body) > 0 {
		w.WriteString("Content-Length: ")
		w.WriteString(strconv.Itoa(len(body)))
		w.WriteString("\r\n")
	}
	w.WriteString("\r\n")
	_, err := w.Write(body)
	return err
}
