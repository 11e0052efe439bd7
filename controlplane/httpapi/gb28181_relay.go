package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
)

// GB28181ControlPath is where a control node that does not hold a device's
// SIP transport passes a DeviceControl (PTZ, preset) to the one that does.
const GB28181ControlPath = "/internal/v1/gb28181/device-control"

// relayTimeout bounds a relayed command: the holder waits up to 10 s for
// the device, so a little more covers the link.
const relayTimeout = 15 * time.Second

// RelayedControl is the body of GB28181ControlPath.
type RelayedControl struct {
	DeviceID  string `json:"deviceId"`
	ChannelID string `json:"channelId"`
	PTZCmd    string `json:"ptzCmd"`
}

// gbControlHandler runs a relayed command through this node's own
// transport only, so a command is never passed on twice.
func gbControlHandler(gb *gb28181.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		var r RelayedControl
		dec := json.NewDecoder(c.Request.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			abortWithError(c, newError(http.StatusBadRequest, "invalid_body", "a relayed command needs deviceId, channelId and ptzCmd"))
			return
		}
		if gb == nil {
			abortWithError(c, noSIP())
			return
		}
		if err := gb.LocalDeviceControl(c.Request.Context(), gb28181.DeviceID(r.DeviceID), r.ChannelID, r.PTZCmd); err != nil {
			abortWithError(c, gbDeviceError(err))
			return
		}
		c.JSON(http.StatusOK, gin.H{"sent": true})
	}
}

// gbRelay passes commands to the member holding a device over the signed
// internal link and returns that member's answer as its own: the caller
// sees the holder's status and body.
func gbRelay(node *raftnode.Node, keys [][]byte) gb28181.Relay {
	client := &http.Client{Timeout: relayTimeout}
	return func(ctx context.Context, holder string, id gb28181.DeviceID, channelID, ptzCmd string) error {
		offline := func(why string) error {
			return fmt.Errorf("%w: %s is held by control node %s, which %s", gb28181.ErrDeviceOffline, id, holder, why)
		}
		members, err := node.Members(ctx)
		if err != nil {
			return err
		}
		base := ""
		for _, m := range members {
			if m.NodeID == holder && !m.Self {
				base = m.HTTPAddress
			}
		}
		if base == "" {
			return offline("is not a member of the cluster")
		}
		body, _ := json.Marshal(RelayedControl{DeviceID: string(id), ChannelID: channelID, PTZCmd: ptzCmd})
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+GB28181ControlPath, bytes.NewReader(body))
		if err != nil {
			return err
		}
		hr.Header = SignInternal(keys[0], http.MethodPost, hr.URL.Host, GB28181ControlPath, body, time.Now())
		hr.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(hr)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return offline("does not answer")
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var eb ErrorBody
		if json.Unmarshal(raw, &eb) != nil || eb.Code == "" {
			return offline(fmt.Sprintf("answered %d without an error body", resp.StatusCode))
		}
		return &Error{Status: resp.StatusCode, Code: eb.Code, Message: eb.Message, Retryable: eb.Retryable, Details: eb.Details}
	}
}
