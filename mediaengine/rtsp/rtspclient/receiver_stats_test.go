package rtspclient

import (
	"testing"
	"time"
)

func TestReceiverStats(t *testing.T) {
	s := receiverStats{clock: 90000}
	if _, ok := s.report(time.Now()); ok {
		t.Fatal("report before any packet")
	}
	start := time.Unix(1000, 0)
	// 100 packets 40 ms apart with sequence numbers wrapping, 10 lost.
	seq := uint16(65500)
	for i := 0; i < 110; i++ {
		if i%11 != 5 {
			s.packet(0xabc, seq, uint32(i*3600), start.Add(time.Duration(i)*40*time.Millisecond))
		}
		seq++
	}
	s.senderReport(0x0001_2345_6789_0000, start.Add(4*time.Second))
	rep, ok := s.report(start.Add(5 * time.Second))
	if !ok {
		t.Fatal("no report")
	}
	if rep.SSRC != 0xabc || rep.TotalLost != 10 || rep.LastSequenceNumber != 1<<16+uint32(seq-1) {
		t.Fatalf("report %+v", rep)
	}
	if rep.FractionLost != uint8(10*256/110) {
		t.Fatalf("fraction lost %d", rep.FractionLost)
	}
	if rep.Jitter > 10 {
		t.Fatalf("jitter %d for evenly spaced packets", rep.Jitter)
	}
	if rep.LastSenderReport != 0x2345_6789 || rep.Delay != 65536 {
		t.Fatalf("LSR %x DLSR %d", rep.LastSenderReport, rep.Delay)
	}
	// The next interval lost nothing.
	s.packet(0xabc, seq, 110*3600, start.Add(5*time.Second))
	if rep, _ := s.report(start.Add(6 * time.Second)); rep.FractionLost != 0 {
		t.Fatalf("fraction lost %d in a clean interval", rep.FractionLost)
	}
}
