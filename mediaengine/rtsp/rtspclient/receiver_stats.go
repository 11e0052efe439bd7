package rtspclient

import (
	"sync"
	"time"

	"github.com/pion/rtcp"
)

// receiverStats keeps what an RTCP receiver report (RFC 3550 section
// 6.4.2 and appendix A.3, A.8) says about one source: sequence numbers
// seen, loss, interarrival jitter and the last sender report.
type receiverStats struct {
	mu       sync.Mutex
	clock    float64 // RTP ticks per second
	ssrc     uint32
	started  bool
	baseSeq  uint32
	maxSeq   uint16
	cycles   uint32
	received uint32
	// At the last report, for the fraction lost.
	expectedPrior, receivedPrior uint32
	transit                      float64
	jitter                       float64
	lastSR                       uint32 // middle 32 bits of its NTP time
	lastSRAt                     time.Time
}

func (s *receiverStats) packet(ssrc uint32, seq uint16, ts uint32, arrival time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || ssrc != s.ssrc {
		// A new source (or the first packet): start counting afresh.
		s.ssrc, s.started, s.baseSeq, s.maxSeq, s.cycles, s.received = ssrc, true, uint32(seq), seq, 0, 0
		s.expectedPrior, s.receivedPrior, s.transit, s.jitter = 0, 0, 0, 0
	}
	if seq < s.maxSeq && s.maxSeq-seq > 0x8000 {
		s.cycles += 1 << 16 // wrapped
	}
	if int16(seq-s.maxSeq) > 0 {
		s.maxSeq = seq
	}
	s.received++
	arr := float64(arrival.UnixNano()) / 1e9 * s.clock
	transit := arr - float64(ts)
	if s.received > 1 {
		d := transit - s.transit
		if d < 0 {
			d = -d
		}
		s.jitter += (d - s.jitter) / 16
	}
	s.transit = transit
}

func (s *receiverStats) senderReport(ntp uint64, at time.Time) {
	s.mu.Lock()
	s.lastSR, s.lastSRAt = uint32(ntp>>16), at
	s.mu.Unlock()
}

// report returns the reception report block, and false before any packet.
func (s *receiverStats) report(now time.Time) (rtcp.ReceptionReport, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return rtcp.ReceptionReport{}, false
	}
	ext := s.cycles + uint32(s.maxSeq)
	expected := ext - s.baseSeq + 1
	lost := int64(expected) - int64(s.received)
	expInterval := expected - s.expectedPrior
	recvInterval := s.received - s.receivedPrior
	s.expectedPrior, s.receivedPrior = expected, s.received
	var fraction uint8
	if lostInterval := int64(expInterval) - int64(recvInterval); expInterval > 0 && lostInterval > 0 {
		fraction = uint8(lostInterval << 8 / int64(expInterval))
	}
	var dlsr uint32
	if !s.lastSRAt.IsZero() {
		dlsr = uint32(now.Sub(s.lastSRAt).Seconds() * 65536)
	}
	return rtcp.ReceptionReport{
		SSRC:               s.ssrc,
		FractionLost:       fraction,
		TotalLost:          uint32(max(min(lost, 0x7fffff), 0)),
		LastSequenceNumber: ext,
		Jitter:             uint32(s.jitter),
		LastSenderReport:   s.lastSR,
		Delay:              dlsr,
	}, true
}
