package mediaengine

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/svcplatform/svc/mediaengine/filesource"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/proxy"
)

// filePuller pulls file:///path/clip.ts (or file://builtin for the demo
// clip) as a live stream: the proxy registry's Puller for the file scheme.
// ?loops=N plays the file N times and then ends the session (the proxy's
// retry policy decides what follows); the default loops forever.
type filePuller struct{}

func (filePuller) Pull(ctx context.Context, src proxy.Source, publish func([]*media.Track) (proxy.FrameWriter, error)) error {
	u, err := url.Parse(src.URL)
	if err != nil {
		return err
	}
	name := u.Path
	if u.Host == filesource.Builtin {
		name = filesource.Builtin
	}
	loops := 0
	if v := u.Query().Get("loops"); v != "" {
		if loops, err = strconv.Atoi(v); err != nil || loops < 0 {
			return fmt.Errorf("file source: loops=%q is not a count", v)
		}
	}
	clip, err := filesource.LoadFile(name)
	if err != nil {
		return err
	}
	w, err := publish(clip.Tracks)
	if err != nil {
		return err
	}
	if err := filesource.Play(ctx, clip, w, loops); err != nil {
		return err
	}
	return filesource.ErrEnded
}
