package rtc

import (
	"net"
	"net/netip"
	"sync"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// batchConn is the shared UDP port with its writes batched: a write
// copies the datagram into a queue and returns; one writer goroutine sends
// what has queued with sendmmsg, so fanning a packet out to hundreds of
// viewers costs a system call per batch rather than per viewer. Datagrams
// keep their order. It implements ice.AddrPortReaderWriter, so pion's UDP
// mux writes through it without allocating addresses.
type batchConn struct {
	*net.UDPConn
	batch interface {
		WriteBatch(ms []ipv4.Message, flags int) (int, error)
	}

	mu     sync.Mutex
	queue  []ipv4.Message
	held   []*datagram // the buffers of queue, in its order
	closed bool
	// addrs caches each peer's *net.UDPAddr (WriteBatch takes a net.Addr).
	addrs map[netip.AddrPort]*net.UDPAddr
	wake  chan struct{}
	done  chan struct{}
	bufs  sync.Pool
}

// datagram is a queued datagram's buffer; bufs is its Message's Buffers,
// so queueing allocates nothing.
type datagram struct {
	data [1500]byte
	bufs [1][]byte
}

// maxQueued bounds the datagrams waiting: beyond it a write is dropped, as
// the kernel drops a datagram its full socket buffer cannot take.
const maxQueued = 8192

// writeBatch is the most datagrams one sendmmsg sends.
const writeBatch = 64

func newBatchConn(c *net.UDPConn) *batchConn {
	b := &batchConn{UDPConn: c, addrs: map[netip.AddrPort]*net.UDPAddr{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() != nil {
		b.batch = ipv4.NewPacketConn(c)
	} else {
		b.batch = ipv6.NewPacketConn(c)
	}
	b.bufs.New = func() any { return new(datagram) }
	go b.writer()
	return b
}

// ReadFromAddrPort reads a datagram (ice.AddrPortReaderWriter).
func (b *batchConn) ReadFromAddrPort(p []byte) (int, netip.AddrPort, error) {
	return b.ReadFromUDPAddrPort(p)
}

// WriteTo queues p for addr.
func (b *batchConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return b.UDPConn.WriteTo(p, addr)
	}
	return b.WriteToAddrPort(p, ua.AddrPort())
}

// WriteToAddrPort queues p for addr (ice.AddrPortReaderWriter).
func (b *batchConn) WriteToAddrPort(p []byte, addr netip.AddrPort) (int, error) {
	if len(p) > 1500 {
		return b.WriteToUDPAddrPort(p, addr)
	}
	d := b.bufs.Get().(*datagram)
	n := copy(d.data[:], p)
	d.bufs[0] = d.data[:n]
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.bufs.Put(d)
		return 0, net.ErrClosed
	}
	if len(b.queue) >= maxQueued {
		b.mu.Unlock()
		b.bufs.Put(d)
		return n, nil
	}
	ua := b.addrs[addr]
	if ua == nil {
		if len(b.addrs) >= 4*maxQueued {
			clear(b.addrs) // peers come and go: the cache must not grow for ever
		}
		ua = net.UDPAddrFromAddrPort(addr)
		b.addrs[addr] = ua
	}
	b.queue = append(b.queue, ipv4.Message{Buffers: d.bufs[:], Addr: ua})
	b.held = append(b.held, d)
	first := len(b.queue) == 1
	b.mu.Unlock()
	if first {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
	return n, nil
}

// writer sends the queue whenever it is not empty.
func (b *batchConn) writer() {
	var out []ipv4.Message
	var held []*datagram
	for {
		select {
		case <-b.wake:
		case <-b.done:
			return
		}
		for {
			b.mu.Lock()
			out, b.queue = b.queue, out[:0]
			held, b.held = b.held, held[:0]
			b.mu.Unlock()
			if len(out) == 0 {
				break
			}
			for i := 0; i < len(out); {
				n, err := b.batch.WriteBatch(out[i:min(len(out), i+writeBatch)], 0)
				if err != nil || n <= 0 {
					// A datagram the kernel refuses (an unreachable peer)
					// is dropped, as a plain write's error would be.
					n = 1
				}
				i += n
			}
			for i, d := range held {
				b.bufs.Put(d)
				held[i], out[i] = nil, ipv4.Message{}
			}
		}
	}
}

// Close stops the writer and closes the socket.
func (b *batchConn) Close() error {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.done)
	}
	b.mu.Unlock()
	return b.UDPConn.Close()
}
