// Package player keeps the engine's connected players, whatever protocol
// they use: HTTP-FLV and HTTP-fMP4 connections, HLS viewer sessions, later
// RTSP players. The control API lists and kicks them through it, and the
// flow-report hook reads their traffic from it.
package player

import (
	"sync/atomic"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
)

// ID identifies a player within the engine.
type ID string

// Query parameters a player's URL may carry (contract A: playback ticket,
// per-viewer id for HLS).
const (
	ParamTicket = "svc_ticket"
	ParamViewer = "svc_viewer"
)

// Player is one connected player. The output that serves it fills the
// descriptive fields before Registry.Add and counts bytes as it writes.
type Player struct {
	ID         ID
	Path       media.Path
	Protocol   string
	RemoteAddr string
	Params     map[string]string
	// LeaseID is the lease on_play said the ticket belongs to.
	LeaseID   string
	StartedAt time.Time
	// Counters reports frames delivered and dropped; nil for players that
	// are not hub readers.
	Counters func() (frames, dropped uint64)
	// Kick disconnects the player; the output then calls Registry.Remove.
	Kick func()

	bytes atomic.Uint64
}

// AddBytes counts bytes written to the player.
func (p *Player) AddBytes(n int) { p.bytes.Add(uint64(n)) }

// Bytes is the number of bytes written to the player.
func (p *Player) Bytes() uint64 { return p.bytes.Load() }

// Ticket is the svc_ticket the player connected with.
func (p *Player) Ticket() string { return p.Params[ParamTicket] }

// Info describes the player for the control API and hooks.
func (p *Player) Info() engineapi.PlayerInfo {
	info := engineapi.PlayerInfo{ID: string(p.ID), Vhost: p.Path.Vhost, App: p.Path.App, Stream: p.Path.Stream,
		Protocol: p.Protocol, RemoteAddr: p.RemoteAddr, Ticket: p.Params[ParamTicket], Viewer: p.Params[ParamViewer],
		LeaseID: p.LeaseID, Bytes: p.Bytes(), StartedAt: p.StartedAt.UTC()}
	if p.Counters != nil {
		info.Frames, info.Dropped = p.Counters()
	}
	return info
}
