package rtc

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// written is a packet a responder's stream wrote.
type written struct {
	header  rtp.Header
	payload []byte
}

// responderStream binds a stream of SSRC 1 (RTX: rtxSSRC, payload type
// 97, when not 0) to a new responder and returns its writer, the RTCP
// reader that feeds it NACKs, and what reached the connection.
func responderStream(t *testing.T, rtxSSRC uint32) (interceptor.RTPWriter, func(p rtcp.Packet), *[]written) {
	t.Helper()
	i, err := nackResponderFactory{}.NewInterceptor("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { i.Close() })
	out := &[]written{}
	info := &interceptor.StreamInfo{SSRC: 1, PayloadType: 96, RTCPFeedback: []interceptor.RTCPFeedback{{Type: "nack"}}}
	if rtxSSRC != 0 {
		info.SSRCRetransmission, info.PayloadTypeRetransmission = rtxSSRC, 97
	}
	w := i.BindLocalStream(info, interceptor.RTPWriterFunc(func(h *rtp.Header, payload []byte, _ interceptor.Attributes) (int, error) {
		*out = append(*out, written{*h, payload})
		return len(payload), nil
	}))
	var pending []byte
	rd := i.BindRTCPReader(interceptor.RTCPReaderFunc(func(b []byte, a interceptor.Attributes) (int, interceptor.Attributes, error) {
		return copy(b, pending), a, nil
	}))
	feed := func(p rtcp.Packet) {
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		pending = b
		if _, _, err := rd.Read(make([]byte, 1500), nil); err != nil {
			t.Fatal(err)
		}
	}
	return w, feed, out
}

func nackOf(seqs ...uint16) *rtcp.TransportLayerNack {
	return &rtcp.TransportLayerNack{MediaSSRC: 1, Nacks: rtcp.NackPairsFromSequenceNumbers(seqs)}
}

// TestNACKResponderResendsOnRTX: a NACKed packet goes out again on the RTX
// stream (its original sequence number in front of the payload, its
// timestamp and marker kept), once per round trip however often it is
// NACKed; the shared payload is not written to; a packet the history no
// longer holds is not sent.
func TestNACKResponderResendsOnRTX(t *testing.T) {
	w, feed, out := responderStream(t, 2)
	shared := []byte("0123456789abcdef")
	for seq := uint16(65534); seq != 3; seq++ {
		h := rtp.Header{Version: 2, SSRC: 1, PayloadType: 96, SequenceNumber: seq, Timestamp: 9000 + uint32(seq), Marker: seq == 1}
		if _, err := w.Write(&h, shared[seq%4:], nil); err != nil {
			t.Fatal(err)
		}
	}
	*out = (*out)[:0]
	feed(nackOf(1, 1000))
	if len(*out) != 1 {
		t.Fatalf("%d packets resent, want 1 (1000 was never sent)", len(*out))
	}
	got := (*out)[0]
	if got.header.SSRC != 2 || got.header.PayloadType != 97 || got.header.Timestamp != 9001 || !got.header.Marker {
		t.Fatalf("resent header %+v, want SSRC 2, payload type 97, timestamp 9001, marker", got.header)
	}
	if binary.BigEndian.Uint16(got.payload) != 1 || string(got.payload[2:]) != string(shared[1:]) {
		t.Fatalf("RTX payload % x", got.payload)
	}
	if string(shared) != "0123456789abcdef" {
		t.Fatalf("the shared payload was written to: %q", shared)
	}
	feed(nackOf(1))
	if len(*out) != 1 {
		t.Fatal("a packet NACKed twice within a round trip was resent twice")
	}
	feed(nackOf(65535, 2))
	if len(*out) != 3 || (*out)[2].header.SequenceNumber != (*out)[1].header.SequenceNumber+1 {
		t.Fatalf("%d packets resent after two more NACKs, want 3 in RTX sequence", len(*out))
	}
	// 1 + historySize takes 1's place.
	h := rtp.Header{Version: 2, SSRC: 1, SequenceNumber: 1 + historySize}
	_, _ = w.Write(&h, shared, nil)
	*out = (*out)[:0]
	feed(nackOf(1))
	if len(*out) != 0 {
		t.Fatalf("%d packets resent for a packet no longer held", len(*out))
	}
}

// TestNACKResponderWithoutRTXKeepsReferences: a viewer without RTX gets the
// packet again as it was, on its own stream, with the very payload sent
// first (the history holds a reference, not a copy); sending a packet
// allocates nothing.
func TestNACKResponderWithoutRTXKeepsReferences(t *testing.T) {
	w, feed, out := responderStream(t, 0)
	shared := []byte("payload")
	h := rtp.Header{Version: 2, SSRC: 1, PayloadType: 96, SequenceNumber: 7, Timestamp: 90}
	if _, err := w.Write(&h, shared, nil); err != nil {
		t.Fatal(err)
	}
	feed(nackOf(7))
	if len(*out) != 2 {
		t.Fatalf("%d packets written, want the packet and its resend", len(*out))
	}
	got := (*out)[1]
	if got.header.SSRC != 1 || got.header.SequenceNumber != 7 || got.header.Timestamp != 90 || &got.payload[0] != &shared[0] {
		t.Fatalf("resent %+v, want the packet itself", got.header)
	}
	*out = nil
	allocs := testing.AllocsPerRun(1000, func() {
		h.SequenceNumber++
		*out = (*out)[:0]
		_, _ = w.Write(&h, shared, nil)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per packet sent", allocs)
	}
}

// TestNACKResponderRoundTrip: a receiver report's LSR and DLSR give the
// round-trip time that spaces resends.
func TestNACKResponderRoundTrip(t *testing.T) {
	n := &nackResponder{streams: map[uint32]*sentStream{1: {}}}
	now := time.Now()
	// The sender report went out 300 ms ago; the viewer held it 100 ms.
	lsr := ntp32(now.Add(-300 * time.Millisecond))
	n.roundTrip([]rtcp.ReceptionReport{{SSRC: 1, LastSenderReport: lsr, Delay: 65536 / 10}}, now)
	if rtt := n.streams[1].rtt; rtt < 199*time.Millisecond || rtt > 201*time.Millisecond {
		t.Fatalf("round trip %v, want 200ms", rtt)
	}
}
