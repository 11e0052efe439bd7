package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pion/webrtc/v4"
)

// viewer counts one viewer's packets: received ones against the span of
// sequence numbers seen.
type viewer struct {
	first, highestSeen atomic.Int64
	received           atomic.Uint64
	// Set before its first packet can arrive.
	start     time.Time
	firsts    *[]time.Duration
	connected *atomic.Int64
	mu        *sync.Mutex
	// The socket reader's own.
	started         bool
	highest, lastTS int64 // extended sequence number and RTP timestamp
	// lags are, for the first packet of each frame received while the
	// window is open, its arrival time less its RTP time (ns); written by
	// the viewer's reader only, read once the window has closed.
	lagMu sync.Mutex
	lags  []int64
}

// recording is set while the parent's measurement window is open.
var recording atomic.Bool

// forwardingDelay is, for every frame any viewer received in the window,
// how much later than that viewer's fastest frame it arrived relative to
// its RTP timestamp (p50, p99 in ms). The source is paced by its
// timestamps, so a frame's extra lag is time spent between the source and
// the viewer: the engine's fan-out queueing and forwarding, and the load
// client's own receiving.
func forwardingDelay(mu *sync.Mutex) (p50, p99 float64) {
	mu.Lock()
	defer mu.Unlock()
	var all []time.Duration
	for _, v := range viewers {
		v.lagMu.Lock()
		empty := len(v.lags) == 0
		v.lagMu.Unlock()
		if empty {
			continue
		}
		v.lagMu.Lock()
		least := v.lags[0]
		for _, l := range v.lags {
			least = min(least, l)
		}
		for _, l := range v.lags {
			all = append(all, time.Duration(l-least))
		}
		v.lagMu.Unlock()
	}
	return pctMs(all, 0.5), pctMs(all, 0.99)
}

// epoch is the load client's start; lags count from it.
var epoch = time.Now()

// viewers are every viewer of this process, under their mutex.
var viewers []*viewer

// lostPackets is the packets no viewer received (yet).
func lostPackets(mu *sync.Mutex) uint64 {
	mu.Lock()
	defer mu.Unlock()
	var lost uint64
	for _, v := range viewers {
		expected := v.highestSeen.Load() - v.first.Load() + 1
		if got := int64(v.received.Load()); v.received.Load() > 0 && expected > got {
			lost += uint64(expected - got)
		}
	}
	return lost
}

// clientStats is what the load client reports when it ends.
type clientStats struct {
	Connected int     `json:"connected"`
	Packets   uint64  `json:"packets"`
	Lost      uint64  `json:"lost"`
	Bytes     uint64  `json:"bytes"`
	FirstP50  float64 `json:"firstPacketP50Ms"`
	FirstP99  float64 `json:"firstPacketP99Ms"`
	// Window is set once the parent closed its window (a second SIGUSR1):
	// Packets, Lost and Bytes are then the window's, and DelayP50 and
	// DelayP99 its forwarding delay.
	Window   bool    `json:"window"`
	DelayP50 float64 `json:"delayP50Ms"`
	DelayP99 float64 `json:"delayP99Ms"`
}

// runClient opens n WHEP viewers of url from this process, reads their
// video for the given time, and writes clientStats as JSON to statsPath:
// packets received, packets lost (sequence gaps), and the time from each
// offer to its first RTP packet.
func runClient(url string, n int, seconds int, statsPath string) error {
	me := &webrtc.MediaEngine{}
	if err := me.RegisterDefaultCodecs(); err != nil {
		return err
	}
	var se webrtc.SettingEngine
	se.SetIncludeLoopbackCandidate(true)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	// Each viewer has a socket of its own (the engine's one port tells
	// its peers apart by address), read through countingConn.
	var socketsMu sync.Mutex
	var sockets []*net.UDPConn
	defer func() {
		socketsMu.Lock()
		defer socketsMu.Unlock()
		for _, c := range sockets {
			c.Close()
		}
	}()
	newPeer := func() (*webrtc.PeerConnection, error) {
		udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil, err
		}
		_ = udp.SetReadBuffer(1 << 20)
		socketsMu.Lock()
		sockets = append(sockets, udp)
		socketsMu.Unlock()
		se := se
		se.SetICEUDPMux(webrtc.NewICEUDPMux(nil, countingConn{udp}))
		return webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
	}
	var connected atomic.Int64
	var mu sync.Mutex
	var firsts []time.Duration
	pcs := make([]*webrtc.PeerConnection, n)
	// writeMu orders the periodic writes before the window's final one.
	var writeMu sync.Mutex
	final := false
	snapshot := func() clientStats {
		mu.Lock()
		p50, p99 := pctMs(firsts, 0.5), pctMs(firsts, 0.99)
		mu.Unlock()
		return clientStats{Connected: int(connected.Load()), Packets: totalPackets.Load(), Lost: lostPackets(&mu), Bytes: totalBytes.Load(),
			FirstP50: p50, FirstP99: p99}
	}
	go func() {
		for {
			time.Sleep(200 * time.Millisecond)
			st := snapshot()
			writeMu.Lock()
			if final {
				writeMu.Unlock()
				return
			}
			_ = writeStats(statsPath, st)
			writeMu.Unlock()
		}
	}()
	// The parent opens and closes its window with SIGUSR1; the counters
	// are taken at each signal, so the window's are exactly the parent's.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGUSR1)
	go func() {
		<-signals
		recording.Store(true)
		open := snapshot()
		<-signals
		recording.Store(false)
		st := snapshot()
		st.Window = true
		st.Packets, st.Lost, st.Bytes = st.Packets-open.Packets, st.Lost-open.Lost, st.Bytes-open.Bytes
		st.DelayP50, st.DelayP99 = forwardingDelay(&mu)
		writeMu.Lock()
		final = true
		_ = writeStats(statsPath, st)
		writeMu.Unlock()
	}()
	// Viewers join eight at a time, as a crowd would.
	jobs := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				pc, err := newPeer()
				if err != nil {
					errs <- err
					continue
				}
				pcs[i] = pc
				errs <- joinViewer(pc, url, i, &connected, &mu, &firsts)
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	// Warm-up is the parent's business: it reads counters over its window.
	// The viewers play for seconds once all have joined.
	time.Sleep(time.Duration(seconds) * time.Second)
	for _, pc := range pcs {
		if pc != nil {
			pc.Close()
		}
	}
	return nil
}

func writeStats(path string, st clientStats) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readStats(path string) (clientStats, error) {
	var st clientStats
	b, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, errors.Join(errors.New("whepbench: client stats"), err)
	}
	return st, nil
}

// joinViewer negotiates one viewer and counts what it receives.
func joinViewer(pc *webrtc.PeerConnection, url string, i int, connected *atomic.Int64, mu *sync.Mutex,
	firsts *[]time.Duration) error {
	if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeVideo, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
		return err
	}
	start := time.Now()
	v := &viewer{}
	mu.Lock()
	viewers = append(viewers, v)
	mu.Unlock()
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		return err
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		return err
	}
	<-gathered
	resp, err := http.Post(url, "application/sdp", bytes.NewReader([]byte(pc.LocalDescription().SDP)))
	if err != nil {
		return err
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("viewer %d: WHEP answered %d %s", i, resp.StatusCode, answer)
	}
	ssrc, ok := mediaSSRC(string(answer))
	if !ok {
		return fmt.Errorf("viewer %d: the answer has no video SSRC", i)
	}
	v.start, v.firsts, v.connected = start, firsts, connected
	v.mu = mu
	bySSRC.Store(ssrc, v)
	return pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: string(answer)})
}

// mediaSSRC is the SSRC of the video the answer sends (not its RTX).
func mediaSSRC(sdp string) (uint32, bool) {
	for _, line := range strings.Split(sdp, "\n") {
		line = strings.TrimSpace(line)
		if f, ok := strings.CutPrefix(line, "a=ssrc-group:FID "); ok {
			if n, err := strconv.ParseUint(strings.Fields(f)[0], 10, 32); err == nil {
				return uint32(n), true
			}
		}
	}
	for _, line := range strings.Split(sdp, "\n") {
		if f, ok := strings.CutPrefix(strings.TrimSpace(line), "a=ssrc:"); ok {
			if n, err := strconv.ParseUint(strings.Fields(f)[0], 10, 32); err == nil {
				return uint32(n), true
			}
		}
	}
	return 0, false
}

// The RTP packets and payload bytes every viewer received.
var totalPackets, totalBytes atomic.Uint64

// bySSRC maps a viewer's video SSRC to the viewer.
var bySSRC sync.Map

// countingConn is the load client's one UDP socket, shared by every
// viewer's ICE (a UDP mux). It counts RTP packets by their clear header
// (SRTP encrypts only the payload) and keeps them from pion, so the client
// neither decrypts nor buffers the media: one core of viewers then keeps
// up with what the engine sends. STUN, DTLS and RTCP go on to pion. As no
// RTP reaches pion, the viewers send no NACKs: loss is every packet that
// did not arrive, none recovered.
type countingConn struct {
	*net.UDPConn
}

func (c countingConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.UDPConn.ReadFrom(b)
		if err != nil || n < 12 || b[0] < 128 || b[0] > 191 || (b[1] >= 192 && b[1] <= 223) {
			return n, addr, err
		}
		if v, ok := bySSRC.Load(binary.BigEndian.Uint32(b[8:12])); ok {
			v.(*viewer).count(b[:n], time.Now())
		}
	}
}

// count takes one RTP packet of the viewer (called by the socket's one
// reader).
func (v *viewer) count(b []byte, now time.Time) {
	seq := binary.BigEndian.Uint16(b[2:4])
	ts := binary.BigEndian.Uint32(b[4:8])
	hdr := 12 + 4*int(b[0]&0x0f)
	if b[0]&0x10 != 0 && len(b) >= hdr+4 {
		hdr += 4 + 4*int(binary.BigEndian.Uint16(b[hdr+2:hdr+4]))
	}
	if !v.started {
		v.started = true
		v.connected.Add(1)
		v.mu.Lock()
		*v.firsts = append(*v.firsts, now.Sub(v.start))
		v.mu.Unlock()
		v.highest, v.lastTS = int64(seq), int64(ts)
		v.first.Store(v.highest)
	} else {
		if d := int16(seq - uint16(v.highest)); d > 0 {
			v.highest += int64(d)
		}
		if d := int32(ts - uint32(v.lastTS)); d > 0 {
			v.lastTS += int64(d)
			if recording.Load() {
				v.lagMu.Lock()
				v.lags = append(v.lags, now.Sub(epoch).Nanoseconds()-v.lastTS*int64(time.Second)/90000)
				v.lagMu.Unlock()
			}
		}
	}
	v.highestSeen.Store(v.highest)
	v.received.Add(1)
	totalPackets.Add(1)
	if len(b) > hdr+16 { // less the SRTP tag (AES-GCM)
		totalBytes.Add(uint64(len(b) - hdr - 16))
	}
}
