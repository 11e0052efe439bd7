package recording

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/svcplatform/svc/controlplane/channels"
)

// StreamEvaluation says whether auto-record or a plan wants a stream on a
// media server recorded at a time, and why: what the leader's pass would
// decide at that time, without doing it.
type StreamEvaluation struct {
	MediaServerID string    `json:"mediaServerId"`
	Vhost         string    `json:"vhost"`
	App           string    `json:"app"`
	StreamID      string    `json:"streamId"`
	At            time.Time `json:"at"`
	ChannelID     string    `json:"channelId,omitempty"`
	// ShouldRecord is the decision; RecordSource who wants it (auto wins
	// over plan, as in the pass).
	ShouldRecord bool         `json:"shouldRecord"`
	RecordSource string       `json:"recordSource,omitempty"`
	AutoRecord   bool         `json:"autoRecord"`
	Plans        []Evaluation `json:"plans"`
	Reasons      []string     `json:"reasons"`
	// SessionState is the stream's recording session now ("" without one).
	SessionState string `json:"sessionState,omitempty"`
}

// EvaluateStream evaluates auto-record and the plans for a stream at a
// time; it changes nothing.
func (s *Service) EvaluateStream(ctx context.Context, r StreamRef, at time.Time) (*StreamEvaluation, error) {
	if r.Vhost == "" {
		r.Vhost = channels.DefaultVhost
	}
	for name, v := range map[string]string{"mediaServerId": r.MediaServerID, "vhost": r.Vhost, "app": r.App, "streamId": r.StreamID} {
		if !nameOK(v) {
			return nil, fmt.Errorf("%w: %s %q", ErrInvalidQuery, name, v)
		}
	}
	out := &StreamEvaluation{MediaServerID: r.MediaServerID, Vhost: r.Vhost, App: r.App, StreamID: r.StreamID, At: at.UTC(), Plans: []Evaluation{},
		Reasons: []string{}}
	ch, err := s.Channels.ByStream(ctx, r.Vhost, r.App, r.StreamID)
	switch {
	case errors.Is(err, channels.ErrNotFound):
		out.Reasons = append(out.Reasons, "no channel has this stream: auto-record and plans apply to channels only")
	case err != nil:
		return nil, err
	default:
		out.ChannelID = string(ch.ChannelID)
		onServer := ch.MediaServerID == r.MediaServerID
		if !onServer {
			out.Reasons = append(out.Reasons, fmt.Sprintf("the channel's media server is %q, not %q", ch.MediaServerID, r.MediaServerID))
		}
		if !ch.Enabled {
			out.Reasons = append(out.Reasons, "the channel is disabled")
		}
		out.AutoRecord = ch.AutoRecord
		if ch.AutoRecord && ch.Enabled && onServer {
			out.ShouldRecord, out.RecordSource = true, RecordAuto
			out.Reasons = append(out.Reasons, "the channel has autoRecord")
		}
		plans, err := s.Plans(ctx, "")
		if err != nil {
			return nil, err
		}
		for _, p := range plans {
			if !slices.Contains(p.ChannelIDs, out.ChannelID) {
				continue
			}
			ev := p.Evaluate(at)
			out.Plans = append(out.Plans, ev)
			if ev.Hit && p.Enabled && ch.Enabled && onServer && !out.ShouldRecord {
				out.ShouldRecord, out.RecordSource = true, RecordPlan
				out.Reasons = append(out.Reasons, fmt.Sprintf("plan %s (%s) has a slot at %s", p.PlanID, p.Name, ev.Local))
			}
		}
		if !out.ShouldRecord {
			out.Reasons = append(out.Reasons, "neither autoRecord nor an enabled plan's slot asks for it at this time")
		}
	}
	sess, err := s.Session(ctx, r)
	if err != nil {
		return nil, err
	}
	if sess != nil {
		out.SessionState = sess.State
	}
	return out, nil
}
