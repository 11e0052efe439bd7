package rtsp

import (
	"bufio"
	"strconv"
)

// Response is an RTSP response.
type Response struct {
	Proto      string
	StatusCode int
	Reason     string
	Header     Header
	Body       []byte
}

// Write writes the response; the caller flushes.
func (r *Response) Write(w *bufio.Writer) error {
	proto, reason := r.Proto, r.Reason
	if proto == "" {
		proto = "RTSP/1.0"
	}
	if reason == "" {
		reason = StatusText(r.StatusCode)
	}
	w.WriteString(proto)
	w.WriteByte(' ')
	w.WriteString(strconv.Itoa(r.StatusCode))
	w.WriteByte(' ')
	w.WriteString(reason)
	w.WriteString("\r\n")
	return writeHeaderAndBody(w, r.Header, r.Body)
}
