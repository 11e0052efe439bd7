package gb28181

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store"
)

// PTZ settings and presets of GB28181 channels. The settings (the manual
// switch, the administrator's confirmation of PTZ the catalog does not
// report, the presets last read from the device) are one replicated record
// per channel, so every control node answers the GET operations; commands
// go to the device through the node holding its transport.

// PTZPrefix holds one record per channel whose PTZ settings or presets
// were ever written, keyed by the platform's channel id.
const PTZPrefix = "/gb28181/ptz/"

// MaxPresets bounds the presets a PresetQuery answer may carry: PTZCmd
// addresses presets 1-255.
const MaxPresets = 255

var (
	// ErrPTZDisabled: 409 ptz_disabled.
	ErrPTZDisabled = fault.New(fault.Conflict, "ptz_disabled", "PTZ of this channel is switched off in its PTZ settings")
	// ErrPTZNotConfirmed: 409 ptz_not_confirmed.
	ErrPTZNotConfirmed = fault.New(fault.Conflict, "ptz_not_confirmed", "the device does not report PTZ for this channel and no administrator confirmed it")
	// ErrDeviceTimeout: 504 gb28181_device_timeout.
	ErrDeviceTimeout = fault.NewRetryable(fault.GatewayTimeout, "gb28181_device_timeout", "the GB28181 device did not answer in time")
)

// Preset is one PTZ preset a device keeps.
type Preset struct {
	PresetID int    `json:"presetId"`
	Name     string `json:"name"`
}

// PTZSettings is a channel's PTZ record.
type PTZSettings struct {
	ChannelID string `json:"channelId"`
	// Disabled is the manual switch turned off (absent: on).
	Disabled                 bool       `json:"disabled,omitempty"`
	ConfirmedByAdministrator bool       `json:"confirmedByAdministrator"`
	Presets                  []Preset   `json:"presets"`
	PresetsAt                *time.Time `json:"presetsAt,omitempty"`
	UpdatedAt                time.Time  `json:"updatedAt"`
}

// PTZAllowed says why PTZ commands to a channel are refused: the switch is
// off, or the device does not report PTZ (hasPtz, which its catalog sets
// from PTZType) and no administrator confirmed it.
func (p *PTZSettings) PTZAllowed(deviceReportsPTZ bool) error {
	switch {
	case p.Disabled:
		return fmt.Errorf("%w (channel %s)", ErrPTZDisabled, p.ChannelID)
	case !deviceReportsPTZ && !p.ConfirmedByAdministrator:
		return fmt.Errorf("%w (channel %s); confirm it with PUT /api/v2/channels/%s/ptz/settings", ErrPTZNotConfirmed, p.ChannelID, p.ChannelID)
	}
	return nil
}

// GetPTZSettings reads a channel's PTZ record; a channel without one has
// the defaults (switch on, nothing confirmed, no presets read).
func GetPTZSettings(ctx context.Context, st store.Store, channelID string) (*PTZSettings, error) {
	p, kv, err := store.GetRecord[PTZSettings](ctx, st, PTZPrefix+channelID, store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return &PTZSettings{ChannelID: channelID}, nil
	}
	return &p, nil
}

// UpdatePTZSettings changes a channel's PTZ record with fn.
func UpdatePTZSettings(ctx context.Context, st store.Store, channelID string, now time.Time, fn func(*PTZSettings)) (*PTZSettings, error) {
	var out *PTZSettings
	_, err := store.UpdateRecord(ctx, st, PTZPrefix+channelID, func(cur *PTZSettings) (*PTZSettings, []store.Op, []store.Compare, error) {
		next := PTZSettings{ChannelID: channelID}
		if cur != nil {
			next = *cur
		}
		fn(&next)
		next.UpdatedAt = now.UTC()
		out = &next
		return &next, nil, nil, nil
	})
	return out, err
}

// presetQueryBody is a PresetQuery (GB/T 28181 A.2.4.9).
func presetQueryBody(sn int64, channelID string) string {
	return fmt.Sprintf("<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Query>\r\n<CmdType>PresetQuery</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n</Query>\r\n",
		sn, channelID)
}

// QueryPresets asks a device for a channel's presets through the node
// holding its transport (over the relay when that is another node).
func (s *Service) QueryPresets(ctx context.Context, id DeviceID, channelID string) ([]Preset, error) {
	if !ValidCode(string(id)) || !ValidCode(channelID) {
		return nil, fmt.Errorf("%w: deviceId and channelId: %w", ErrInvalid, ErrDeviceID)
	}
	h, err := s.holder(ctx, id)
	if err != nil {
		return nil, err
	}
	if h != "" {
		return s.relay.QueryPresets(ctx, h, id, channelID)
	}
	return s.LocalQueryPresets(ctx, id, channelID)
}

// LocalQueryPresets asks through this node's transport only and waits for
// the device's PresetQuery response (the one carrying the query's SN)
// until ctx ends or queryTimeout passes.
func (s *Service) LocalQueryPresets(ctx context.Context, id DeviceID, channelID string) ([]Preset, error) {
	if !ValidCode(string(id)) || !ValidCode(channelID) {
		return nil, fmt.Errorf("%w: deviceId and channelId: %w", ErrInvalid, ErrDeviceID)
	}
	sn := s.nextSN()
	ch := make(chan []Preset, 1)
	s.mu.Lock()
	s.presetWaits[sn] = presetWait{device: id, answer: ch}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.presetWaits, sn)
		s.mu.Unlock()
	}()
	if err := s.sendManscdp(ctx, id, presetQueryBody(sn, channelID)); err != nil {
		return nil, err
	}
	t := time.NewTimer(queryTimeout)
	defer t.Stop()
	select {
	case ps := <-ch:
		return ps, nil
	case <-t.C:
		return nil, fmt.Errorf("%w: no PresetQuery answer from %s for %s within %s", ErrDeviceTimeout, id, channelID, queryTimeout)
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: no PresetQuery answer from %s for %s: %w", ErrDeviceTimeout, id, channelID, ctx.Err())
	}
}

// presetWait is a PresetQuery waiting for its device's answer.
type presetWait struct {
	device DeviceID
	answer chan []Preset
}

// presetAnswer hands a PresetQuery response to its waiting query; an
// answer nobody waits for (late, an SN never sent, or from another device)
// is dropped.
func (s *Service) presetAnswer(id DeviceID, m Manscdp) {
	ps := make([]Preset, 0, len(m.PresetList))
	seen := map[int]bool{}
	for _, it := range m.PresetList {
		if it.PresetID < 1 || it.PresetID > MaxPresets || seen[it.PresetID] || len(ps) == MaxPresets {
			continue
		}
		seen[it.PresetID] = true
		name := it.PresetName
		if len([]rune(name)) > 64 {
			name = string([]rune(name)[:64])
		}
		ps = append(ps, Preset{PresetID: it.PresetID, Name: name})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].PresetID < ps[j].PresetID })
	s.mu.Lock()
	w, ok := s.presetWaits[m.SN]
	s.mu.Unlock()
	if ok && w.device == id {
		select {
		case w.answer <- ps:
		default:
		}
	}
}

// ChannelPreset sets, goes to or deletes preset n (1-255) of a channel
// (PTZCmd 0x81, 0x82, 0x83).
func (s *Service) ChannelPreset(ctx context.Context, id DeviceID, channelID string, op byte, n int) error {
	if n < 1 || n > MaxPresets {
		return fmt.Errorf("%w: presetId %d is not 1-%d", ErrInvalid, n, MaxPresets)
	}
	switch op {
	case PresetSet, PresetGoto, PresetDelete:
	default:
		return fmt.Errorf("%w: preset operation %#x", ErrInvalid, op)
	}
	return s.DeviceControl(ctx, id, channelID, PresetCmd(op, uint8(n)))
}
