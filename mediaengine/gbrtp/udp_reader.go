package gbrtp

import (
	"net"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// UDP receive sizing. A device sends each frame as a burst (a 2 Mbit/s
// keyframe is ~85 packets back to back), and with hundreds of sessions on
// one engine core a session's goroutine may wait a while for its turn, so
// the socket queue must hold seconds of media and each turn should drain
// many packets: one read(2) and one goroutine wake-up per packet was most
// of the receive cost (gbbench, docs/benchmarks.md).
const (
	// udpReadBuffer is the SO_RCVBUF asked for. The kernel caps it at
	// net.core.rmem_max (the agent's host tuning raises that; its
	// recommended value allows this) and doubles it for its bookkeeping.
	udpReadBuffer = 8 << 20
	// udpBatch is how many datagrams one recvmmsg(2) may return.
	udpBatch = 16
	// udpSlot holds any datagram up to a jumbo frame. Devices packetize
	// RTP under the path MTU, so a larger datagram is rare; the first one
	// is counted malformed (truncated) and the session switches to slots
	// of the largest UDP datagram.
	udpSlot      = 9216
	udpLargeSlot = maxUDPPacket
	udpLargeN    = 4
)

// udpReader reads a session's datagrams a batch at a time into buffers it
// reuses; on systems without recvmmsg x/net reads one per call.
type udpReader struct {
	pc   *ipv4.PacketConn
	msgs []ipv4.Message
}

func newUDPReader(c *net.UDPConn) *udpReader {
	r := &udpReader{pc: ipv4.NewPacketConn(c)}
	r.size(udpBatch, udpSlot)
	return r
}

func (r *udpReader) size(n, slot int) {
	buf := make([]byte, n*slot)
	r.msgs = make([]ipv4.Message, n)
	for i := range r.msgs {
		r.msgs[i].Buffers = [][]byte{buf[i*slot : (i+1)*slot : (i+1)*slot]}
	}
}

// read waits for at least one datagram (or the read deadline) and returns
// how many of r.msgs are filled. A datagram's bytes are valid until the
// next read.
func (r *udpReader) read() (int, error) { return r.pc.ReadBatch(r.msgs, 0) }

// datagram is message i: its bytes, its source, and whether it was cut
// short by a slot too small for it.
func (r *udpReader) datagram(i int) (b []byte, from *net.UDPAddr, truncated bool) {
	m := &r.msgs[i]
	from, _ = m.Addr.(*net.UDPAddr)
	return m.Buffers[0][:m.N], from, m.Flags&unix.MSG_TRUNC != 0
}

// grow switches to slots that hold the largest UDP datagram.
func (r *udpReader) grow() {
	if len(r.msgs[0].Buffers[0]) < udpLargeSlot {
		r.size(udpLargeN, udpLargeSlot)
	}
}
