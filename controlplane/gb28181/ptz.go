package gb28181

import (
	"context"
	"encoding/hex"
	"fmt"
)

// PTZ is one pan-tilt-zoom command: each axis -1, 0 or 1 (left/stop/right,
// down/stop/up, out/stop/in) with its speed.
type PTZ struct {
	Pan, Tilt, Zoom     int
	PanSpeed, TiltSpeed uint8
	// ZoomSpeed is 0-15.
	ZoomSpeed uint8
}

// Preset operations of a PTZCmd (GB/T 28181 A.3.3).
const (
	PresetSet    byte = 0x81
	PresetGoto   byte = 0x82
	PresetDelete byte = 0x83
)

// ptzBytes frames an instruction into the 8-byte PTZCmd (GB/T 28181 A.3.1):
// A5, version 0 with the header checksum, address 1, the instruction and
// its data, and the sum of the first seven bytes.
func ptzBytes(instruction, data1, data2, data3 byte) string {
	b := [8]byte{0xa5, 0, 0x01, instruction, data1, data2, data3 << 4, 0}
	b[1] = (0xa + 0x5 + 0x0) % 16 // version 0 in the high nibble
	var sum int
	for _, v := range b[:7] {
		sum += int(v)
	}
	b[7] = byte(sum % 256)
	return fmt.Sprintf("%X", b[:])
}

// PTZCmd encodes a movement (all axes 0 is stop).
func PTZCmd(p PTZ) string {
	var ins byte
	switch {
	case p.Pan > 0:
		ins |= 0x01
	case p.Pan < 0:
		ins |= 0x02
	}
	switch {
	case p.Tilt < 0:
		ins |= 0x04
	case p.Tilt > 0:
		ins |= 0x08
	}
	switch {
	case p.Zoom > 0:
		ins |= 0x10
	case p.Zoom < 0:
		ins |= 0x20
	}
	return ptzBytes(ins, p.PanSpeed, p.TiltSpeed, min(p.ZoomSpeed, 15))
}

// PresetCmd encodes a preset operation on preset n (1-255).
func PresetCmd(op byte, n uint8) string { return ptzBytes(op, 0, n, 0) }

// DeviceControl sends a PTZCmd to one channel of a device through the
// node holding its transport: this node when the device registered here,
// otherwise the node its record names, over the relay.
func (s *Service) DeviceControl(ctx context.Context, id DeviceID, channelID, ptzCmd string) error {
	if err := checkControl(id, channelID, ptzCmd); err != nil {
		return err
	}
	h, err := s.holder(ctx, id)
	if err != nil {
		return err
	}
	if h != "" {
		return s.relay.DeviceControl(ctx, h, id, channelID, ptzCmd)
	}
	return s.LocalDeviceControl(ctx, id, channelID, ptzCmd)
}

func checkControl(id DeviceID, channelID, ptzCmd string) error {
	if !ValidCode(string(id)) || !ValidCode(channelID) {
		return fmt.Errorf("%w: deviceId and channelId: %w", ErrInvalid, ErrDeviceID)
	}
	if _, err := hex.DecodeString(ptzCmd); len(ptzCmd) != 16 || err != nil {
		return fmt.Errorf("%w: PTZCmd %q is not 8 bytes of hex", ErrInvalid, ptzCmd)
	}
	return nil
}

// LocalDeviceControl is DeviceControl through this node's transport only:
// what a relayed command runs, so a relay never passes it on again.
func (s *Service) LocalDeviceControl(ctx context.Context, id DeviceID, channelID, ptzCmd string) error {
	if !ValidCode(string(id)) || !ValidCode(channelID) {
		return fmt.Errorf("%w: deviceId and channelId: %w", ErrInvalid, ErrDeviceID)
	}
	if len(ptzCmd) != 16 {
		return fmt.Errorf("%w: PTZCmd %q is not 8 bytes of hex", ErrInvalid, ptzCmd)
	}
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Control>\r\n<CmdType>DeviceControl</CmdType>\r\n<SN>%d</SN>\r\n"+
		"<DeviceID>%s</DeviceID>\r\n<PTZCmd>%s</PTZCmd>\r\n<Info>\r\n<ControlPriority>5</ControlPriority>\r\n</Info>\r\n</Control>\r\n", s.nextSN(), channelID, ptzCmd)
	return s.sendManscdp(ctx, id, body)
}

// ChannelPTZ moves a channel by a contract command name (up, down-left,
// zoom-in, focus-far, iris-open, stop, ...) at speed percent (1-100).
func (s *Service) ChannelPTZ(ctx context.Context, id DeviceID, channelID, command string, speed int) error {
	speed = min(max(speed, 1), 100)
	v := byte(speed * 255 / 100)
	z := byte(speed * 15 / 100)
	var cmd string
	switch command {
	case "stop":
		cmd = PTZCmd(PTZ{})
	case "focus-far", "focus-near", "iris-open", "iris-close":
		ins := map[string]byte{"focus-far": 0x41, "focus-near": 0x42, "iris-open": 0x44, "iris-close": 0x48}[command]
		cmd = ptzBytes(ins, v, v, 0)
	default:
		p := PTZ{PanSpeed: v, TiltSpeed: v, ZoomSpeed: z}
		known := false
		for _, part := range []struct {
			name string
			set  func()
		}{
			{"up", func() { p.Tilt = 1 }}, {"down", func() { p.Tilt = -1 }}, {"left", func() { p.Pan = -1 }}, {"right", func() { p.Pan = 1 }},
			{"zoom-in", func() { p.Zoom = 1 }}, {"zoom-out", func() { p.Zoom = -1 }},
			{"up-left", func() { p.Tilt, p.Pan = 1, -1 }}, {"up-right", func() { p.Tilt, p.Pan = 1, 1 }},
			{"down-left", func() { p.Tilt, p.Pan = -1, -1 }}, {"down-right", func() { p.Tilt, p.Pan = -1, 1 }},
		} {
			if part.name == command {
				part.set()
				known = true
			}
		}
		if !known {
			return fmt.Errorf("%w: PTZ command %q", ErrInvalid, command)
		}
		cmd = PTZCmd(p)
	}
	return s.DeviceControl(ctx, id, channelID, cmd)
}
