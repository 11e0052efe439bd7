package rtc

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// TestBatchConnKeepsOrderPerPeer writes datagrams to two real sockets from
// several goroutines through one batchConn and checks each peer gets every
// datagram, intact and in the order its writer sent them.
func TestBatchConnKeepsOrderPerPeer(t *testing.T) {
	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	bc := newBatchConn(udp)
	defer bc.Close()
	// Few enough that the receivers' socket buffers hold them all.
	const perPeer = 500
	var peers []*net.UDPConn
	for range 2 {
		p, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		_ = p.SetReadBuffer(8 << 20)
		peers = append(peers, p)
	}
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			to := p.LocalAddr().(*net.UDPAddr).AddrPort()
			b := make([]byte, 1200)
			for seq := range perPeer {
				binary.BigEndian.PutUint32(b, uint32(seq))
				b[4] = byte(i)
				if n, err := bc.WriteToAddrPort(b, to); err != nil || n != len(b) {
					t.Errorf("write %d: %d, %v", seq, n, err)
					return
				}
			}
		}()
	}
	for i, p := range peers {
		buf := make([]byte, 1500)
		for seq := range perPeer {
			_ = p.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := p.Read(buf)
			if err != nil {
				t.Fatalf("peer %d after %d datagrams: %v", i, seq, err)
			}
			if got := binary.BigEndian.Uint32(buf); n != 1200 || got != uint32(seq) || buf[4] != byte(i) {
				t.Fatalf("peer %d: datagram %d is #%d of peer %d, %d bytes", i, seq, got, buf[4], n)
			}
		}
	}
	wg.Wait()
	bc.Close()
	if _, err := bc.WriteToAddrPort([]byte("x"), peers[0].LocalAddr().(*net.UDPAddr).AddrPort()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after Close: %v", err)
	}
}
