package mediaengine

import (
	"context"
	"errors"
	"testing"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
)

// TestPublishAndPlayForInputs drives the entry points the RTSP server
// uses: Publish through on_publish, Play through on_play, with the player
// listed and kickable.
func TestPublishAndPlayForInputs(t *testing.T) {
	rc, url := startHookReceiver(t)
	te := startEngine(t, func(c *engineapi.Config) { c.Hooks.URL = url })
	ctx := context.Background()
	path := media.Path{App: "push", Stream: "cam"}
	if _, err := te.Publish(ctx, path, hub.Origin{Kind: "rtsp-push", RemoteAddr: "127.0.0.1:9"}, map[string]string{"svc_ticket": "bad"}, mediatest.Tracks()); !errors.Is(
		err,
		ErrPublishDenied,
	) {
		t.Fatalf("publish with a refused ticket: %v", err)
	}
	tracks := mediatest.Tracks()
	pub, err := te.Publish(ctx, path, hub.Origin{Kind: "rtsp-push"}, map[string]string{"svc_ticket": "good"}, tracks)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	pub.WriteFrame(&media.Frame{Track: tracks[0], Keyframe: true, NALUs: [][]byte{{0x65, 1}}})
	if _, _, err := te.Play(ctx, path, "rtsp", "127.0.0.1:10", map[string]string{"svc_ticket": "bad"}); !errors.Is(err, ErrPlayDenied) {
		t.Fatalf("play with a refused ticket: %v", err)
	}
	rd, leave, err := te.Play(ctx, path, "rtsp", "127.0.0.1:10", map[string]string{"svc_ticket": "good"})
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	pkts, err := rd.Next(ctx, nil)
	if err != nil || len(pkts) != 1 || !pkts[0].Keyframe {
		t.Fatalf("first packets %d, %v", len(pkts), err)
	}
	var list engineapi.PlayerList
	te.control(t, "GET", engineapi.PathPlayers+"?protocol=rtsp", nil, &list)
	if len(list.Players) != 1 || list.Players[0].LeaseID != "lease-7" {
		t.Fatalf("players %+v", list.Players)
	}
	var res engineapi.KickResult
	te.control(t, "POST", engineapi.PathPlayersKick, engineapi.KickRequest{LeaseID: "lease-7"}, &res)
	if _, err := rd.Next(ctx, nil); !errors.Is(err, hub.ErrReaderClosed) || res.Kicked != 1 {
		t.Fatalf("after the kick: %v, %+v", err, res)
	}
	if rc.count(engineapi.HookOnPublish) != 2 {
		t.Fatalf("on_publish called %d times", rc.count(engineapi.HookOnPublish))
	}
}
