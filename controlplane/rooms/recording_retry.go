package rooms

import (
	"context"
	"errors"
	"slices"

	"github.com/svcplatform/svc/controlplane/store"
)

// Track retries. A publication whose recorder could not start when it
// went Active (the recording reported rtc.recording.failed and went on),
// or whose recording session on the media server has failed since, is
// started again by the leader's sweep while the recording runs; each
// retry counts in the recording's trackRetries. The recording itself
// stays Recording: one track's failure does not stop the others.

// trackRetrier is a Recorder that can tell a stream's recording failed.
type trackRetrier interface {
	Failed(ctx context.Context, mediaServerID, stream string) (bool, error)
}

// retryTracks starts again the tracks of a running recording that are
// not being recorded.
func (s *Service) retryTracks(ctx context.Context, r *Room, rec *Recording) error {
	if rec.State != RecordingRecording || s.Recorder == nil {
		return nil
	}
	kvs, err := s.roomPublications(ctx, r.RoomID)
	if err != nil {
		return err
	}
	var errs []error
	for _, kv := range kvs {
		p, err := store.Decode[Publication](kv)
		if err != nil {
			return err
		}
		pub := &p
		if pub.State != PublicationActive {
			continue
		}
		stream := streamName(r.RoomID, pub.PublicationID)
		retry := !slices.Contains(rec.Publications, pub.PublicationID)
		if t, ok := s.Recorder.(trackRetrier); ok && !retry {
			if retry, err = t.Failed(ctx, r.MediaServerID, stream); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if !retry {
			continue
		}
		if _, err := s.updateRecording(ctx, r.RoomID, rec.RecordingID, func(x *Recording) bool { x.TrackRetries++; return true }); err != nil {
			return err
		}
		if err := s.recordPublication(ctx, pub); err != nil {
			_, ferr := s.recordingFailed(ctx, r.RoomID, rec.RecordingID, err)
			errs = append(errs, ferr)
		}
	}
	return errors.Join(errs...)
}
