package channels

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// CommandAction is what a stream command asks for. Values are append-only.
type CommandAction string

const (
	ActionStart CommandAction = "start"
	ActionStop  CommandAction = "stop"
)

// CommandState follows the node command's states (DESIGN.md section 5).
// Values are append-only.
type CommandState string

const (
	CommandPending    CommandState = "Pending"
	CommandDispatched CommandState = "Dispatched"
	CommandRunning    CommandState = "Running"
	CommandSucceeded  CommandState = "Succeeded"
	CommandFailed     CommandState = "Failed"
	CommandTimedOut   CommandState = "TimedOut"
	CommandCanceled   CommandState = "Canceled"
)

// Finished reports whether s is terminal.
func (s CommandState) Finished() bool {
	switch s {
	case CommandSucceeded, CommandFailed, CommandTimedOut, CommandCanceled:
		return true
	}
	return false
}

// rank orders the live states; a command only moves forward.
func (s CommandState) rank() int {
	switch s {
	case CommandPending:
		return 0
	case CommandDispatched:
		return 1
	case CommandRunning:
		return 2
	}
	return 3
}

// Valid reports whether s is a known state.
func (s CommandState) Valid() bool { return s.rank() < 3 || s.Finished() }

// StreamCommand is a start or stop of a channel's stream, recorded in the
// same Txn as the desired-state change and left Pending for the stream
// dispatcher, which turns it into a node command for the media server's
// agent and reports its progress with MarkCommand.
type StreamCommand struct {
	CommandID     CommandID     `json:"commandId"`
	ChannelID     ChannelID     `json:"channelId"`
	Action        CommandAction `json:"action"`
	State         CommandState  `json:"state"`
	NodeCommandID string        `json:"nodeCommandId,omitempty"`
	MediaServerID string        `json:"mediaServerId,omitempty"`
	RequestedBy   string        `json:"requestedBy"`
	TraceID       string        `json:"traceId,omitempty"`
	CreatedAt     time.Time     `json:"createdAt"`
	UpdatedAt     time.Time     `json:"updatedAt"`
	FinishedAt    *time.Time    `json:"finishedAt,omitempty"`
	Error         string        `json:"error,omitempty"`
	// GB is how a GB28181 channel's start INVITEs its device, when the
	// request said (POST /api/v2/gb28181/live/invite).
	GB *GBStart `json:"gb,omitempty"`
}

// GBStart is what a GB28181 live invite asks of a channel's start.
type GBStart struct {
	// TCP has the device send over TCP to the media server (the engine
	// listens) instead of UDP.
	TCP bool `json:"tcp,omitempty"`
	// TimeoutSeconds bounds waiting for the device's answer (0: 10 s).
	TimeoutSeconds int `json:"timeoutSeconds,omitempty"`
}

func newCommand(ch *Channel, action CommandAction, a Actor, now time.Time) (*StreamCommand, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	return &StreamCommand{CommandID: CommandID(id.String()), ChannelID: ch.ChannelID, Action: action, State: CommandPending,
		MediaServerID: ch.MediaServerID, RequestedBy: who(a), TraceID: a.TraceID, CreatedAt: now, UpdatedAt: now}, nil
}

func putCommand(c *StreamCommand) (store.Op, error) {
	val, err := json.Marshal(c)
	if err != nil {
		return store.Op{}, err
	}
	return store.Put(commandKey(c.CommandID), val), nil
}

// Command reads one stream command.
func (s *Service) Command(ctx context.Context, id CommandID) (*StreamCommand, error) {
	c, _, err := s.getCommand(ctx, id)
	return c, err
}

func (s *Service) getCommand(ctx context.Context, id CommandID) (*StreamCommand, int64, error) {
	if err := checkID(ChannelID(id)); err != nil {
		return nil, 0, fmt.Errorf("%w: %q", ErrCommandNotFound, id)
	}
	kv, _, err := store.Get(ctx, s.Store, commandKey(id), store.Local)
	if err != nil {
		return nil, 0, err
	}
	if kv == nil {
		return nil, 0, fmt.Errorf("%w: %q", ErrCommandNotFound, id)
	}
	c, err := store.Decode[StreamCommand](kv)
	if err != nil {
		return nil, 0, err
	}
	return &c, kv.ModRevision, nil
}

// CommandQuery filters stream commands; zero values do not filter.
type CommandQuery struct {
	ChannelID     ChannelID
	Action        CommandAction
	State         CommandState
	MediaServerID string
	Page          int
	PageSize      int
}

// Commands lists one page of stream commands, newest first, and the total.
// The dispatcher lists State Pending oldest-first with PendingCommands.
func (s *Service) Commands(ctx context.Context, q CommandQuery) ([]StreamCommand, int64, error) {
	return query.Page(ctx, s.Reader, query.Query{Index: CommandIndex.Name, Where: commandFilters(q), Order: []query.Order{query.Desc(query.Key)}},
		max(q.Page, 1), pageSize(q.PageSize), query.JSON[StreamCommand])
}

// PendingCommands lists up to limit Pending commands, oldest first: the
// dispatcher's work queue.
func (s *Service) PendingCommands(ctx context.Context, limit int) ([]StreamCommand, error) {
	return query.All(ctx, s.Reader, query.Query{Index: CommandIndex.Name, Where: commandFilters(CommandQuery{State: CommandPending}),
		Order: []query.Order{query.Asc(query.Key)}, Limit: pageSize(limit)}, query.JSON[StreamCommand])
}

func commandFilters(q CommandQuery) query.Where {
	var where query.Where
	where.EqIfSet("channel_id", string(q.ChannelID))
	where.EqIfSet("action", string(q.Action))
	where.EqIfSet("state", string(q.State))
	where.EqIfSet("media_server_id", q.MediaServerID)
	return where
}

func pageSize(n int) int {
	if n <= 0 {
		return 50
	}
	return min(n, 1000)
}
