package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/webrtc/v4"
)

// viewer counts one viewer's packets: received ones (retransmissions
// included) against the span of sequence numbers seen, so what NACK
// recovered is not loss and what it did not is.
type viewer struct {
	first, highest atomic.Int64
	received       atomic.Uint64
}

// viewers are every viewer of this process, under their mutex.
var viewers []*viewer

// lostPackets is the packets no viewer received (yet).
func lostPackets(mu *sync.Mutex) uint64 {
	mu.Lock()
	defer mu.Unlock()
	var lost uint64
	for _, v := range viewers {
		expected := v.highest.Load() - v.first.Load() + 1
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
	api := webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithSettingEngine(se))
	var packets, bytesIn atomic.Uint64
	var connected atomic.Int64
	var mu sync.Mutex
	var firsts []time.Duration
	pcs := make([]*webrtc.PeerConnection, n)
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopWriter := func() { stopOnce.Do(func() { close(stop) }) }
	defer stopWriter()
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			mu.Lock()
			p50, p99 := pctMs(firsts, 0.5), pctMs(firsts, 0.99)
			mu.Unlock()
			_ = writeStats(statsPath, clientStats{Connected: int(connected.Load()), Packets: packets.Load(), Lost: lostPackets(&mu), Bytes: bytesIn.Load(),
				FirstP50: p50, FirstP99: p99})
		}
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
				pc, err := api.NewPeerConnection(webrtc.Configuration{})
				if err != nil {
					errs <- err
					continue
				}
				pcs[i] = pc
				errs <- joinViewer(pc, url, i, &connected, &packets, &bytesIn, &mu, &firsts)
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
	stopWriter() // the final counters below are not overwritten
	mu.Lock()
	p50, p99 := pctMs(firsts, 0.5), pctMs(firsts, 0.99)
	mu.Unlock()
	for _, pc := range pcs {
		if pc != nil {
			pc.Close()
		}
	}
	return writeStats(statsPath, clientStats{Connected: int(connected.Load()), Packets: packets.Load(), Lost: lostPackets(&mu), Bytes: bytesIn.Load(),
		FirstP50: p50, FirstP99: p99})
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
func joinViewer(pc *webrtc.PeerConnection, url string, i int, connected *atomic.Int64, packets, bytesIn *atomic.Uint64, mu *sync.Mutex,
	firsts *[]time.Duration) error {
	if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeVideo, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
		return err
	}
	start := time.Now()
	v := &viewer{}
	mu.Lock()
	viewers = append(viewers, v)
	mu.Unlock()
	pc.OnTrack(func(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		connected.Add(1)
		first := true
		var highest int64 // extended sequence number
		for {
			p, _, err := tr.ReadRTP()
			if err != nil {
				return
			}
			if first {
				mu.Lock()
				*firsts = append(*firsts, time.Since(start))
				mu.Unlock()
				highest = int64(p.SequenceNumber)
				v.first.Store(highest)
				first = false
			} else if d := int16(p.SequenceNumber - uint16(highest)); d > 0 {
				highest += int64(d)
			}
			v.highest.Store(highest)
			v.received.Add(1)
			packets.Add(1)
			bytesIn.Add(uint64(len(p.Payload)))
		}
	})
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
	return pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: string(answer)})
}
