// Package channels owns the channel catalogue: video channels (RTSP, ONVIF,
// GB28181 sources) with their sealed source credentials, channel groups, the
// pending-activation pool, each channel's desired state, auto-recovery pause
// and retry backoff, the stream commands a start or stop records, the
// per-channel runtime log, and the export and import of the catalogue.
//
// It decides what a channel should be doing; it does not run streams. The
// stream dispatcher turns Pending stream commands into node commands and
// reports back through SetActualState, RecordFailedAttempt, MarkCommand and
// AssignMediaServer, each of which is one store transaction carrying its
// runtime-log entry. SourceURL gives that server-side code the source URL
// with its credentials, which no API answer ever contains.
package channels
