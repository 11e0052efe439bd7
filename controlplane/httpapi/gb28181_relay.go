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

	"github.com/svcplatform/svc/controlplane/clusterlink"
	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/talk"
)

// Where a control node that does not hold a device's SIP transport passes
// a command to the one that does.
const (
	GB28181ControlPath     = "/internal/v1/gb28181/device-control"
	GB28181PresetQueryPath = "/internal/v1/gb28181/preset-query"
	GB28181RecordQueryPath = "/internal/v1/gb28181/record-query"
	GB28181InvitePath      = "/internal/v1/gb28181/invite"
	GB28181ByePath         = "/internal/v1/gb28181/bye"
	GB28181MediaEndedPath  = "/internal/v1/gb28181/media-ended"
	TalkPath               = "/internal/v1/talk"
)

// relayTimeout bounds a relayed command: the holder waits up to 10 s for
// the device, so a little more covers the link.
const relayTimeout = 15 * time.Second

// RelayedCommand is the body of the GB28181 internal paths; PTZCmd is for
// GB28181ControlPath only.
type RelayedCommand struct {
	DeviceID  string `json:"deviceId"`
	ChannelID string `json:"channelId"`
	PTZCmd    string `json:"ptzCmd,omitempty"`
}

// relayedBye is the body of GB28181ByePath and GB28181MediaEndedPath
// (with why).
type relayedBye struct {
	CallID string `json:"callId"`
	Why    string `json:"why,omitempty"`
}

// gbRelayHandler runs a relayed command through this node's own transport
// only (run), so a command is never passed on twice.
func gbRelayHandler[T any](gb *gb28181.Service, run func(context.Context, *gb28181.Service, T) (any, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		var r T
		dec := json.NewDecoder(c.Request.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			abortWithError(c, newError(http.StatusBadRequest, "invalid_body", "a relayed command that does not decode: "+err.Error()))
			return
		}
		if gb == nil {
			abortWithError(c, noSIP())
			return
		}
		out, err := run(c.Request.Context(), gb, r)
		if err != nil {
			abortWithError(c, gbDeviceError(err))
			return
		}
		c.JSON(http.StatusOK, out)
	}
}

func relayedControl(ctx context.Context, gb *gb28181.Service, r RelayedCommand) (any, error) {
	return gin.H{"sent": true}, gb.LocalDeviceControl(ctx, gb28181.DeviceID(r.DeviceID), r.ChannelID, r.PTZCmd)
}

func relayedPresetQuery(ctx context.Context, gb *gb28181.Service, r RelayedCommand) (any, error) {
	ps, err := gb.LocalQueryPresets(ctx, gb28181.DeviceID(r.DeviceID), r.ChannelID)
	return relayedPresets{Presets: ps}, err
}

func relayedRecordQuery(ctx context.Context, gb *gb28181.Service, r gb28181.RecordQueryRequest) (any, error) {
	return gb.LocalStartRecordQuery(ctx, r)
}

func relayedInvite(ctx context.Context, gb *gb28181.Service, r gb28181.InviteRequest) (any, error) {
	return gb.LocalInvite(ctx, r)
}

func relayedBYE(ctx context.Context, gb *gb28181.Service, r relayedBye) (any, error) {
	return gin.H{"sent": true}, gb.LocalBye(ctx, r.CallID)
}

func relayedMediaEnded(_ context.Context, gb *gb28181.Service, r relayedBye) (any, error) {
	gb.LocalMediaEnded(r.CallID, r.Why)
	return gin.H{"told": true}, nil
}

// talkRelayHandler runs a relayed talk operation on this node only.
func talkRelayHandler(e *talkEndpoints) gin.HandlerFunc {
	return gbRelayHandler(e.gb, func(ctx context.Context, _ *gb28181.Service, op talkOp) (any, error) {
		return e.local(ctx, op)
	})
}

type relayedPresets struct {
	Presets []gb28181.Preset `json:"presets"`
}

// gbRelay passes commands to the member holding a device over the signed
// internal link and returns that member's answer as its own: the caller
// sees the holder's status and error body.
type gbRelay struct {
	node   *raftnode.Node
	keys   [][]byte
	client *http.Client
}

func newGBRelay(node *raftnode.Node, keys [][]byte) *gbRelay {
	return &gbRelay{node: node, keys: keys, client: &http.Client{}}
}

func (g *gbRelay) DeviceControl(ctx context.Context, holder string, id gb28181.DeviceID, channelID, ptzCmd string) error {
	return g.post(ctx, holder, GB28181ControlPath, string(id), relayTimeout, RelayedCommand{DeviceID: string(id), ChannelID: channelID, PTZCmd: ptzCmd}, nil)
}

func (g *gbRelay) QueryPresets(ctx context.Context, holder string, id gb28181.DeviceID, channelID string) ([]gb28181.Preset, error) {
	var out relayedPresets
	if err := g.post(ctx, holder, GB28181PresetQueryPath, string(id), relayTimeout, RelayedCommand{DeviceID: string(id), ChannelID: channelID}, &out); err != nil {
		return nil, err
	}
	return out.Presets, nil
}

func (g *gbRelay) StartRecordQuery(ctx context.Context, holder string, r gb28181.RecordQueryRequest) (*gb28181.RecordQuery, error) {
	var out gb28181.RecordQuery
	if err := g.post(ctx, holder, GB28181RecordQueryPath, string(r.DeviceID), relayTimeout, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Invite waits as long as the holder waits for the device, and a little
// more for the link.
func (g *gbRelay) Invite(ctx context.Context, holder string, r gb28181.InviteRequest) (*gb28181.MediaSession, error) {
	var out gb28181.MediaSession
	if err := g.post(ctx, holder, GB28181InvitePath, string(r.DeviceID), r.Timeout+5*time.Second, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (g *gbRelay) Bye(ctx context.Context, holder, callID string) error {
	return g.post(ctx, holder, GB28181ByePath, "the dialog "+callID, relayTimeout, relayedBye{CallID: callID}, nil)
}

// MediaEnded is not a device's command: origin is any member, and its
// absence is not the device's.
func (g *gbRelay) MediaEnded(ctx context.Context, origin, callID, why string) error {
	return g.post(ctx, origin, GB28181MediaEndedPath, "the dialog "+callID, relayTimeout, relayedBye{CallID: callID, Why: why}, nil)
}

// Talk runs a talk operation on holder, the node holding the session or
// its device; a create waits as long as the holder waits for the device.
func (g *gbRelay) Talk(ctx context.Context, holder string, op talkOp) (*talk.Session, error) {
	var out talk.Session
	what := "talk session " + op.SessionID
	if op.Op == "create" {
		what = op.DeviceID
	}
	if err := g.post(ctx, holder, TalkPath, what, time.Duration(op.TimeoutSeconds)*time.Second+relayTimeout, op, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// post sends cmd to holder's path, waiting up to timeout; what names the
// device (or dialog) in errors.
func (g *gbRelay) post(ctx context.Context, holder, path, what string, timeout time.Duration, cmd, out any) error {
	offline := func(why string) error {
		return fmt.Errorf("%w: %s is held by control node %s, which %s", gb28181.ErrDeviceOffline, what, holder, why)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	members, err := g.node.Members(ctx)
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
	body, _ := json.Marshal(cmd)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header = clusterlink.Sign(g.keys[0], http.MethodPost, hr.URL.Host, path, body, time.Now())
	hr.Header.Set("Content-Type", "application/json")
	resp, err := g.client.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return offline("does not answer")
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusOK {
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("control node %s answered %s with %w", holder, path, err)
		}
		return nil
	}
	var eb ErrorBody
	if json.Unmarshal(raw, &eb) != nil || eb.Code == "" {
		return offline(fmt.Sprintf("answered %d without an error body", resp.StatusCode))
	}
	return &Error{Status: resp.StatusCode, Code: eb.Code, Message: eb.Message, Retryable: eb.Retryable, Details: eb.Details}
}
