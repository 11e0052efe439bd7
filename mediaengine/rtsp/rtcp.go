package rtsp

import (
	"time"

	"github.com/pion/rtcp"
)

// RTCP helpers shared by the client and the server: sender reports carry
// the NTP wall clock that lines RTP timestamps up across tracks.

// ReportInterval is how often a player gets RTCP sender reports, which let it
// synchronise the tracks, and how often the client sends receiver reports.
const ReportInterval = 5 * time.Second

// UDPReadBuffer is the kernel receive buffer asked for: bursts of a
// keyframe from several cameras must not overflow the default.
const UDPReadBuffer = 4 << 20

// ForSenderReports calls fn for each sender report in a compound RTCP
// packet; anything unparsable is ignored (RTCP is advisory).
func ForSenderReports(raw []byte, fn func(*rtcp.SenderReport)) {
	pkts, err := rtcp.Unmarshal(raw)
	if err != nil {
		return
	}
	for _, p := range pkts {
		if sr, ok := p.(*rtcp.SenderReport); ok {
			fn(sr)
		}
	}
}

// NTPTime converts a 64-bit NTP timestamp.
func NTPTime(v uint64) time.Time {
	const ntpEpochOffset = 2208988800
	secs := int64(v>>32) - ntpEpochOffset
	frac := int64(v & 0xffffffff)
	return time.Unix(secs, frac*1e9>>32)
}

// ToNTP is the 64-bit NTP timestamp of t.
func ToNTP(t time.Time) uint64 {
	const ntpEpochOffset = 2208988800
	secs := uint64(t.Unix() + ntpEpochOffset)
	frac := uint64(t.Nanosecond()) << 32 / 1e9
	return secs<<32 | frac
}
