package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/channels"
)

func TestChannelErrorCodes(t *testing.T) {
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{channels.ErrInvalid, http.StatusBadRequest, "invalid_body"},
		{channels.ErrNotFound, http.StatusNotFound, "not_found"},
		{channels.ErrGroupNotFound, http.StatusNotFound, "not_found"},
		{channels.ErrCommandNotFound, http.StatusNotFound, "not_found"},
		{channels.ErrDuplicateStream, http.StatusConflict, "channel_stream_conflict"},
		{channels.ErrDuplicateGroup, http.StatusConflict, "channel_group_conflict"},
		{channels.ErrGroupNotEmpty, http.StatusConflict, "channel_group_not_empty"},
		{channels.ErrPending, http.StatusConflict, "channel_pending_activation"},
		{channels.ErrNotPending, http.StatusConflict, "channel_not_pending"},
		{channels.ErrDisabled, http.StatusConflict, "channel_disabled"},
		{channels.ErrRunning, http.StatusConflict, "channel_running"},
		{channels.ErrCommandFinished, http.StatusConflict, "stream_command_finished"},
		{channels.ErrPTZNotSupported, http.StatusConflict, "ptz_not_supported"},
		{channels.ErrPTZUnavailable, http.StatusConflict, "ptz_unavailable"},
		{channels.ErrBadTransition, http.StatusConflict, "conflict"},
		{channels.ErrContended, http.StatusConflict, "conflict"},
		{channels.ErrImportRejected, http.StatusConflict, "import_rejected"},
	}
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			wrapped := fmt.Errorf("%w: detail", tc.err)
			var e *Error
			if e = toError(wrapped); e.Status != tc.status || e.Code != tc.code || !errors.Is(e, tc.err) {
				t.Fatalf("toError(%v) = %+v", wrapped, e)
			}
		})
	}
	other := errors.New("disk on fire")
	if got := toError(other); !errors.Is(got, other) || got.Status != http.StatusInternalServerError || got.Message != "internal error" {
		t.Fatal("an unknown error was mapped")
	}
}

// TestToChannelNeverCarriesCredentials: the one conversion out of the
// domain masks the source and drops the sealed credentials.
func TestToChannelNeverCarriesCredentials(t *testing.T) {
	ch := &channels.Channel{ChannelID: "c1", SealedCredentials: "v1.sealed-secret", ActualStateAt: time.Now()}
	ch.SourceURL = "rtsp://10.0.0.1/a"
	out := toChannel(ch)
	if out.SourceUrl != "rtsp://***@10.0.0.1/a" || !out.HasSourceCredentials || out.StreamId != out.Stream {
		t.Fatalf("toChannel = %+v", out)
	}
	if s := fmt.Sprintf("%+v", out); strings.Contains(s, "sealed-secret") {
		t.Fatalf("sealed credentials leaked: %s", s)
	}
}
