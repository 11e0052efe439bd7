package rtc

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// historySize is how many packets of a viewer's stream are kept for
// retransmission (a power of two): about 6 s of 1.5 Mbit/s video, as pion's
// responder keeps.
const historySize = 1024

// nackResponder answers a viewer's NACKs (RFC 4585) from its recent
// packets, on the RTX stream (RFC 4588) when the viewer negotiated one,
// else on the media stream. It replaces pion's NACK responder for WHEP
// viewers: that one copies every packet sent into its history, per viewer,
// since a sender may reuse its buffers; here every payload is a slice of
// an rtpFormat packet, shared by all viewers and never modified, so the
// history keeps references and a packet costs a few stores, not a copy and
// an allocation. It must only be given payloads nobody modifies, which is
// why only the WHEP API registers it.
//
// It is the first interceptor registered, so its writer is the one under
// all the others: a retransmission, like pion's, bypasses the RTCP report
// interceptor (whose sender reports must not take an old timestamp as
// the newest) and TWCC.
type nackResponder struct {
	interceptor.NoOp

	mu      sync.Mutex
	streams map[uint32]*sentStream
}

// nackResponderFactory makes each peer connection's responder.
type nackResponderFactory struct{}

func (nackResponderFactory) NewInterceptor(string) (interceptor.Interceptor, error) {
	return &nackResponder{streams: map[uint32]*sentStream{}}, nil
}

// sentStream is one media stream sent to the viewer.
type sentStream struct {
	rtxSSRC uint32
	rtxPT   uint8
	writer  interceptor.RTPWriter

	mu      sync.Mutex
	history [historySize]sentPacket
	rtxSeq  uint16
	rtt     time.Duration
}

// sentPacket is a packet as sent, its payload shared with every viewer.
type sentPacket struct {
	payload []byte
	ts      uint32
	seq     uint16
	pt      uint8
	marker  bool
	valid   bool
	resent  int64 // unix nanoseconds of its last retransmission, 0 if none
}

// BindLocalStream keeps what is sent on a stream whose viewer asked for
// NACKs.
func (n *nackResponder) BindLocalStream(info *interceptor.StreamInfo, writer interceptor.RTPWriter) interceptor.RTPWriter {
	if !wantsNack(info) {
		return writer
	}
	st := &sentStream{rtxSSRC: info.SSRCRetransmission, rtxPT: info.PayloadTypeRetransmission, writer: writer}
	var rnd [2]byte
	_, _ = rand.Read(rnd[:])
	st.rtxSeq = binary.BigEndian.Uint16(rnd[:])
	n.mu.Lock()
	n.streams[info.SSRC] = st
	n.mu.Unlock()
	ssrc := info.SSRC
	return interceptor.RTPWriterFunc(func(h *rtp.Header, payload []byte, a interceptor.Attributes) (int, error) {
		if h.SSRC == ssrc {
			st.mu.Lock()
			st.history[h.SequenceNumber%historySize] = sentPacket{payload: payload, ts: h.Timestamp, seq: h.SequenceNumber, pt: h.PayloadType,
				marker: h.Marker, valid: true}
			st.mu.Unlock()
		}
		return writer.Write(h, payload, a)
	})
}

func wantsNack(info *interceptor.StreamInfo) bool {
	for _, fb := range info.RTCPFeedback {
		if fb.Type == "nack" && fb.Parameter == "" {
			return true
		}
	}
	return false
}

// UnbindLocalStream forgets a stream, and the payloads it held.
func (n *nackResponder) UnbindLocalStream(info *interceptor.StreamInfo) {
	n.mu.Lock()
	st := n.streams[info.SSRC]
	delete(n.streams, info.SSRC)
	n.mu.Unlock()
	if st != nil {
		st.mu.Lock()
		clear(st.history[:])
		st.mu.Unlock()
	}
}

// Close forgets every stream.
func (n *nackResponder) Close() error {
	n.mu.Lock()
	all := n.streams
	n.streams = map[uint32]*sentStream{}
	n.mu.Unlock()
	for _, st := range all {
		st.mu.Lock()
		clear(st.history[:])
		st.mu.Unlock()
	}
	return nil
}

// BindRTCPReader answers the NACKs among the viewer's RTCP and takes the
// round-trip time from its receiver reports (it spaces retransmissions of
// one packet).
func (n *nackResponder) BindRTCPReader(reader interceptor.RTCPReader) interceptor.RTCPReader {
	return interceptor.RTCPReaderFunc(func(b []byte, a interceptor.Attributes) (int, interceptor.Attributes, error) {
		i, a, err := reader.Read(b, a)
		if err != nil {
			return 0, nil, err
		}
		if a == nil {
			a = make(interceptor.Attributes)
		}
		pkts, err := a.GetRTCPPackets(b[:i])
		if err != nil {
			return 0, nil, err
		}
		for _, p := range pkts {
			switch p := p.(type) {
			case *rtcp.ReceiverReport:
				n.roundTrip(p.Reports, time.Now())
			case *rtcp.SenderReport:
				n.roundTrip(p.Reports, time.Now())
			case *rtcp.TransportLayerNack:
				n.resend(p, time.Now())
			}
		}
		return i, a, nil
	})
}

func (n *nackResponder) stream(ssrc uint32) *sentStream {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.streams[ssrc]
}

// roundTrip takes each report's round-trip time (RFC 3550 6.4.1: the
// report's arrival less the sender report it answers and the delay since).
func (n *nackResponder) roundTrip(reports []rtcp.ReceptionReport, now time.Time) {
	for _, r := range reports {
		st := n.stream(r.SSRC)
		if st == nil || r.LastSenderReport == 0 {
			continue
		}
		rtt := ntp32(now) - r.LastSenderReport - r.Delay
		if rtt >= 1<<31 {
			continue // a report from before a clock step, or garbage
		}
		d := time.Duration(rtt) * time.Second >> 16
		st.mu.Lock()
		if st.rtt == 0 {
			st.rtt = d
		} else {
			st.rtt += (d - st.rtt) / 8
		}
		st.mu.Unlock()
	}
}

// ntp32 is the middle 32 bits of now's NTP time (16.16 seconds), the unit
// of reception reports' LSR and DLSR.
func ntp32(now time.Time) uint32 {
	const unixToNTP = 2208988800
	secs := uint64(now.Unix()) + unixToNTP
	frac := uint64(now.Nanosecond()) << 32 / uint64(time.Second)
	return uint32((secs<<32 | frac) >> 16)
}

// resend sends again the packets a NACK names that are still in the
// history, each at most once per round trip (plus 5 ms, as pion and
// libwebrtc do), since a viewer NACKs a packet again until it arrives.
func (n *nackResponder) resend(nack *rtcp.TransportLayerNack, now time.Time) {
	st := n.stream(nack.MediaSSRC)
	if st == nil {
		return
	}
	for _, pair := range nack.Nacks {
		pair.Range(func(seq uint16) bool {
			st.mu.Lock()
			p := &st.history[seq%historySize]
			if !p.valid || p.seq != seq || (p.resent != 0 && now.UnixNano()-p.resent < int64(st.rtt+5*time.Millisecond)) {
				st.mu.Unlock()
				return true
			}
			p.resent = now.UnixNano()
			sent := *p
			h := rtp.Header{Version: 2, Marker: sent.marker, PayloadType: sent.pt, SequenceNumber: sent.seq, Timestamp: sent.ts,
				SSRC: nack.MediaSSRC}
			payload := sent.payload
			if st.rtxSSRC != 0 && st.rtxPT != 0 {
				// RTX: the original sequence number, then the payload, in a
				// buffer of its own (the shared payload is never written).
				h.SSRC, h.PayloadType, h.SequenceNumber = st.rtxSSRC, st.rtxPT, st.rtxSeq
				st.rtxSeq++
				payload = make([]byte, 2+len(sent.payload))
				binary.BigEndian.PutUint16(payload, sent.seq)
				copy(payload[2:], sent.payload)
			}
			st.mu.Unlock()
			// A failed write means the connection is going away.
			_, _ = st.writer.Write(&h, payload, nil)
			return true
		})
	}
}
