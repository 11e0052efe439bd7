package channels

import (
	"context"
	"strings"

	"github.com/svcplatform/svc/controlplane/store/query"
)

// Filter selects channels; nil or empty fields do not filter. It carries
// every filter of the third-party channel listing plus the group and the
// activation state.
type Filter struct {
	Keyword         string
	Protocol        Protocol
	MediaServerID   string
	NodeID          string
	DeviceID        string
	DeviceChannelID string
	Vhost           string
	App             string
	// Stream and StreamID both match the stream name (the contract uses
	// both words for it).
	Stream   string
	StreamID string
	// SourceURL matches as a case-insensitive substring of the source URL
	// without credentials.
	SourceURL      string
	GroupKey       GroupKey
	Activation     Activation
	DesiredState   DesiredState
	ActualState    ActualState
	Enabled        *bool
	AutoVideo      *bool
	AutoRecord     *bool
	NoPlayerBreak  *bool
	HasAudio       *bool
	HasPTZ         *bool
	IsShareChannel *bool
	Page           int
	PageSize       int
}

// List returns one page of channels, oldest first (ids are UUIDv7, so key
// order is creation order), and the total matching.
func (s *Service) List(ctx context.Context, f Filter) ([]Channel, int64, error) {
	var where query.Where
	eq, flag := where.EqIfSet, where.BoolIfSet
	eq("protocol", string(f.Protocol))
	eq("media_server_id", f.MediaServerID)
	eq("node_id", f.NodeID)
	eq("device_id", f.DeviceID)
	eq("device_channel_id", f.DeviceChannelID)
	eq("vhost", f.Vhost)
	eq("app", f.App)
	eq("stream", f.Stream)
	eq("stream", f.StreamID)
	eq("group_key", string(f.GroupKey))
	eq("activation_state", string(f.Activation))
	eq("desired_state", string(f.DesiredState))
	eq("actual_state", string(f.ActualState))
	flag("enabled", f.Enabled)
	flag("auto_video", f.AutoVideo)
	flag("auto_record", f.AutoRecord)
	flag("no_player_break", f.NoPlayerBreak)
	flag("has_audio", f.HasAudio)
	flag("has_ptz", f.HasPTZ)
	flag("is_share_channel", f.IsShareChannel)
	if f.SourceURL != "" {
		where.Add(query.Contains("source_url", stripCredentials(f.SourceURL)))
	}
	if kw := strings.TrimSpace(f.Keyword); kw != "" {
		// One keyword searches the names people use for a channel.
		var anyOf []query.Cond
		for _, col := range []string{"name", "description", "app", "stream", "device_id", "device_channel_id", query.Key} {
			anyOf = append(anyOf, query.Contains(col, kw))
		}
		where.Add(query.AnyOf(anyOf...))
	}
	return query.Page(ctx, s.Reader, query.Query{Index: Index.Name, Where: where, Order: []query.Order{query.Asc(query.Key)}},
		max(f.Page, 1), pageSize(f.PageSize), query.JSON[Channel])
}
