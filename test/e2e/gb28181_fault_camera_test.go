package e2e

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/test/testkit"
)

// faultCamera is a SIPp camera answering with gb28181_fault_answer.xml,
// registered with a GB cluster's holder and its one channel seen through
// via; the fault tests read what reached it (INVITEs, BYEs, talk audio at
// its speaker) and what the cluster holds for it (RTP leases on media-1,
// dialog records).
type faultCamera struct {
	t                   *testing.T
	dir                 string
	sippLog             func() string
	deviceID, channelID string
	// channel is the camera's channel as the platform lists it.
	channel struct{ ChannelID, Stream string }
	media   *controlNode
	// heard counts the RTP packets at the camera's speaker.
	heard atomic.Int64
}

func startFaultCamera(t *testing.T, g gbCluster, media *controlNode, deviceID, channelID, platform, domain string) *faultCamera {
	t.Helper()
	speaker, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { speaker.Close() })
	c := &faultCamera{t: t, deviceID: deviceID, channelID: channelID, media: media}
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := speaker.ReadFrom(buf); err != nil {
				return
			}
			c.heard.Add(1)
		}
	}()
	c.dir, c.sippLog = startSIPpCamera(t, g.sip[g.holder], "gb28181_fault_answer.xml", deviceID, channelID, platform, domain,
		"-key", "audioport", strconv.Itoa(speaker.LocalAddr().(*net.UDPAddr).Port))
	testkit.Eventually(t, 60*time.Second, "the camera registered with the holder and its channel seen through via", func() bool {
		r := g.via.Get("/api/v2/channels?deviceId="+deviceID, g.via.Token("channels.view"))
		var list struct {
			Total int
			Rows  []struct{ ChannelID, Stream string }
		}
		if r.Status != 200 || json.Unmarshal(r.Body, &list) != nil || list.Total != 1 {
			return false
		}
		c.channel = list.Rows[0]
		return true
	})
	return c
}

// invites are the INVITEs the camera noted, one line each.
func (c *faultCamera) invites() []string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "invites.log"))
	return strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' })
}

// byes is the number of BYEs the camera received.
func (c *faultCamera) byes() int {
	b, _ := os.ReadFile(filepath.Join(c.dir, "bye.txt"))
	return len(strings.Fields(string(b)))
}

// gbLeases are the ports of media-1's active GB28181 RTP leases.
func (c *faultCamera) gbLeases() []int {
	var list struct {
		Rows []struct {
			Port    int
			Purpose string
		}
	}
	c.media.call("GET", "/api/v2/node/rtp/leases?status=active&mediaServerId=media-1", nil, &list)
	var ports []int
	for _, l := range list.Rows {
		if l.Purpose == "gb28181" {
			ports = append(ports, l.Port)
		}
	}
	return ports
}

// dialogs is the number of dialog records of the camera's channel in st.
func (c *faultCamera) dialogs(st store.Store) int {
	ds, err := gb28181.ChannelDialogs(context.Background(), st, gb28181.DeviceID(c.deviceID), c.channelID)
	if err != nil {
		c.t.Fatal(err)
	}
	return len(ds)
}

// udpPortFree says whether port binds for UDP now: an RTP server's port
// is not free while the server is open.
func udpPortFree(port int) bool {
	l, err := net.ListenPacket("udp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
