package gbrtp

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/testkit"
)

// rtpPacket is an RTP packet of size bytes (header included) whose
// payload is padding the demuxer skips as garbage.
func rtpPacket(seq uint16, ssrc uint32, size int) []byte {
	b := make([]byte, size)
	b[0], b[1] = 0x80, 96
	binary.BigEndian.PutUint16(b[2:], seq)
	binary.BigEndian.PutUint32(b[8:], ssrc)
	return b
}

func TestSessionUDPReadsABurstLargerThanABatchInOrder(t *testing.T) {
	s, err := Listen(Config{Transport: UDP, Listen: "127.0.0.1:0", SSRC: 9, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c, err := net.Dial("udp", s.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Queued before the session reads, as a keyframe's burst is while the
	// session's goroutine waits for its turn: many batches at once.
	const burst = 20*udpBatch + 3
	for i := range burst {
		if _, err := c.Write(rtpPacket(uint16(60000+i), 9, 1400)); err != nil {
			t.Fatal(err)
		}
	}
	go s.Run(context.Background(), (&frameSink{}).publish)
	testkit.Eventually(t, 30*time.Second, "every packet of the burst", func() bool { return s.Stats().Packets == burst })
	if st := s.Stats(); st.Lost != 0 || st.Malformed != 0 {
		t.Fatalf("a burst read in batches lost or broke packets: %+v", st)
	}
}

func TestSessionUDPTakesDatagramsLargerThanASlot(t *testing.T) {
	s, err := Listen(Config{Transport: UDP, Listen: "127.0.0.1:0", SSRC: 9, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	go s.Run(context.Background(), (&frameSink{}).publish)
	c, err := net.Dial("udp", s.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The first datagram over a slot is cut short and counted malformed;
	// then the session reads whole datagrams of up to 64 KiB.
	if _, err := c.Write(rtpPacket(1, 9, 2*udpSlot)); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the cut datagram counted", func() bool { return s.Stats().Malformed == 1 })
	for i := range 3 {
		if _, err := c.Write(rtpPacket(uint16(2+i), 9, 60000)); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 30*time.Second, "three large datagrams", func() bool { return s.Stats().Packets == 3 })
	if st := s.Stats(); st.Malformed != 1 || st.Bytes != 3*60000 {
		t.Fatalf("large datagrams: %+v", st)
	}
}
