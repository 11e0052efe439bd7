package recordplay

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/recorder"
)

// timedWriter records when each byte count was reached.
type timedWriter struct {
	buf   bytes.Buffer
	marks []mark
	hdr   http.Header
}

type mark struct {
	n  int
	at time.Time
}

func (w *timedWriter) Header() http.Header { return w.hdr }
func (w *timedWriter) WriteHeader(int)     {}
func (w *timedWriter) Flush()              {}
func (w *timedWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	w.marks = append(w.marks, mark{w.buf.Len(), time.Now()})
	return len(p), nil
}

// reached is when the first n bytes had been written.
func (w *timedWriter) reached(n int) time.Time {
	for _, m := range w.marks {
		if m.n >= n {
			return m.at
		}
	}
	return time.Time{}
}

// parts are 16 parts of one second, 1000 bytes each, from offset 100.
func pacedParts() ([]recorder.Part, []byte) {
	file := make([]byte, 100+16*1000)
	for i := range file {
		file[i] = byte(i * 7)
	}
	var parts []recorder.Part
	for i := range 16 {
		parts = append(parts, recorder.Part{Offset: 100 + int64(i)*1000, Size: 1000, At: time.Duration(i) * time.Second, Key: i%2 == 0})
	}
	return parts, file
}

// TestSendPaced: the first PaceBurst of media goes at once and every
// later part no earlier than PaceFactor times real time reaches it; the
// bytes are the span's exactly. Only lower bounds are checked (a loaded
// machine only adds time).
func TestSendPaced(t *testing.T) {
	parts, file := pacedParts()
	from, to := int64(2100), int64(100+16*1000) // parts 2-15
	w := &timedWriter{hdr: http.Header{}}
	t0 := time.Now()
	sendPaced(context.Background(), w, bytes.NewReader(file), parts, from, to)
	if !bytes.Equal(w.buf.Bytes(), file[from:to]) {
		t.Fatalf("sent %d bytes, not the span's %d", w.buf.Len(), to-from)
	}
	for i := 2; i < 16; i++ {
		end := int(parts[i].Offset + parts[i].Size - from)
		ahead := parts[i].At - parts[2].At - PaceBurst
		if got := w.reached(end).Sub(t0); ahead > 0 && got < ahead/PaceFactor {
			t.Fatalf("part %d (%s of media after the first) was sent after %s, before %s", i, parts[i].At-parts[2].At, got, ahead/PaceFactor)
		}
	}
	// A span ending inside the burst is not held at all: its parts all
	// lie within PaceBurst of the first.
	w = &timedWriter{hdr: http.Header{}}
	sendPaced(context.Background(), w, bytes.NewReader(file), parts, 100, 100+3000)
	if w.buf.Len() != 3000 {
		t.Fatalf("a 3-part span sent %d bytes", w.buf.Len())
	}
}

// TestSendPacedStopsWithTheRequest: a player that goes away is not
// waited for.
func TestSendPacedStopsWithTheRequest(t *testing.T) {
	parts, file := pacedParts()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := &timedWriter{hdr: http.Header{}}
	sendPaced(ctx, w, bytes.NewReader(file), parts, 100, int64(len(file)))
	// The burst (parts 0-3, up to PaceBurst after the first) is written;
	// nothing after the first wait.
	if w.buf.Len() != 4000 {
		t.Fatalf("after the request ended %d bytes were sent, want the burst's 4000", w.buf.Len())
	}
}
