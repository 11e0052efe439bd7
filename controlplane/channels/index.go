package channels

import "github.com/svcplatform/svc/controlplane/store/query"

// Key layout. Everything the catalogue writes lives under these prefixes.
const (
	// ChannelPrefix holds one record per channel, keyed by channel id.
	ChannelPrefix = "/channels/items/"
	// StreamNamePrefix holds one claim per vhost/app/stream, whose value is
	// the owning channel id; creating it with a compare on its absence is
	// what makes the triple unique across the cluster.
	StreamNamePrefix = "/channels/stream-names/"
	// GroupPrefix holds one record per group, keyed by group key.
	GroupPrefix = "/channels/groups/"
	// RuntimeLogPrefix holds /channels/runtime-logs/<channelId>/<entryId>;
	// entry ids are UUIDv7, so key order is time order.
	RuntimeLogPrefix = "/channels/runtime-logs/"
	// CommandPrefix holds one record per stream command.
	CommandPrefix = "/streams/commands/"
)

// OwnedPrefixes are the prefixes of this package, for the server's
// migration audit.
var OwnedPrefixes = []string{"/channels/", CommandPrefix}

func channelKey(id ChannelID) string { return ChannelPrefix + string(id) }

func streamNameKey(vhost, app, stream string) string {
	return StreamNamePrefix + vhost + "/" + app + "/" + stream
}

func groupKey(k GroupKey) string { return GroupPrefix + string(k) }

func commandKey(id CommandID) string { return CommandPrefix + string(id) }

func runtimeLogKey(ch ChannelID, entry string) string {
	return RuntimeLogPrefix + string(ch) + "/" + entry
}

// Index serves every channel list filter. The substring searches (name,
// description, source URL) and the yes/no flags scan this table rather
// than have a b-tree each: every new channel would write all of them, for
// filters an index does not speed up.
var Index = query.Index{Name: "channels", Prefix: ChannelPrefix, Columns: []query.Column{
	{Name: "name", Type: "TEXT", Path: "$.name", NoIndex: true},
	{Name: "description", Type: "TEXT", Path: "$.description", NoIndex: true},
	{Name: "protocol", Type: "TEXT", Path: "$.protocol"},
	{Name: "source_url", Type: "TEXT", Path: "$.sourceUrl", NoIndex: true},
	{Name: "vhost", Type: "TEXT", Path: "$.vhost"},
	{Name: "app", Type: "TEXT", Path: "$.app"},
	{Name: "stream", Type: "TEXT", Path: "$.stream"},
	{Name: "media_server_id", Type: "TEXT", Path: "$.mediaServerId"},
	{Name: "node_id", Type: "TEXT", Path: "$.nodeId"},
	{Name: "device_id", Type: "TEXT", Path: "$.deviceId"},
	{Name: "device_channel_id", Type: "TEXT", Path: "$.deviceChannelId"},
	{Name: "group_key", Type: "TEXT", Path: "$.groupKey"},
	{Name: "enabled", Type: "INTEGER", Path: "$.enabled", NoIndex: true},
	{Name: "auto_video", Type: "INTEGER", Path: "$.autoVideo", NoIndex: true},
	{Name: "auto_record", Type: "INTEGER", Path: "$.autoRecord", NoIndex: true},
	{Name: "has_audio", Type: "INTEGER", Path: "$.hasAudio", NoIndex: true},
	{Name: "no_player_break", Type: "INTEGER", Path: "$.noPlayerBreak", NoIndex: true},
	{Name: "has_ptz", Type: "INTEGER", Path: "$.hasPtz", NoIndex: true},
	{Name: "is_share_channel", Type: "INTEGER", Path: "$.isShareChannel", NoIndex: true},
	{Name: "activation_state", Type: "TEXT", Path: "$.activationState"},
	{Name: "desired_state", Type: "TEXT", Path: "$.desiredState"},
	{Name: "actual_state", Type: "TEXT", Path: "$.actualState"},
	{Name: "auto_recovery_paused", Type: "INTEGER", Path: "$.autoRecoveryPaused", NoIndex: true},
	{Name: "created_at", Type: "TEXT", Path: "$.createdAt", NoIndex: true},
}}

// RuntimeLogIndex serves the runtime-log timeline of one channel.
var RuntimeLogIndex = query.Index{Name: "channel_runtime_logs", Prefix: RuntimeLogPrefix, Columns: []query.Column{
	{Name: "channel_id", Type: "TEXT", Path: "$.channelId"},
	{Name: "kind", Type: "TEXT", Path: "$.kind"},
	{Name: "command_id", Type: "TEXT", Path: "$.commandId"},
	// entry_id is a UUIDv7: ordering by it is ordering by time, which the
	// retention sweep uses across channels.
	{Name: "entry_id", Type: "TEXT", Path: "$.entryId"},
}}

// CommandIndex serves the stream command listings (by channel, state,
// action, media server).
var CommandIndex = query.Index{Name: "stream_commands", Prefix: CommandPrefix, Columns: []query.Column{
	{Name: "channel_id", Type: "TEXT", Path: "$.channelId"},
	{Name: "action", Type: "TEXT", Path: "$.action"},
	{Name: "state", Type: "TEXT", Path: "$.state"},
	{Name: "media_server_id", Type: "TEXT", Path: "$.mediaServerId"},
	{Name: "created_at", Type: "TEXT", Path: "$.createdAt"},
}}

// Indexes are this package's index tables, for the server's IndexSpecs.
var Indexes = []query.Index{Index, RuntimeLogIndex, CommandIndex}
