package mediaengine

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/svcplatform/svc/mediaengine/recorder"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hooks"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Reload re-reads the configuration file and applies it; a file that does
// not parse is refused and the running configuration stays.
func (e *Engine) Reload() (engineapi.ConfigResult, error) {
	cfg, err := engineapi.Load(e.path)
	if err != nil {
		return engineapi.ConfigResult{}, err
	}
	return e.apply(cfg)
}

// restartFields are the settings a running engine cannot change: its
// listeners, identity, hub bounds and demo source. A changed value is
// stored and reported, and takes effect at the next start.
var restartFields = []string{"NodeID", "MediaServerID", "ControlAddr", "ControlSecretFile", "HTTPAddr", "RTSPAddr",
	"RTPPortMin", "RTPPortMax", "DataDir", "LogLevel", "GOPCacheMaxFrames", "ReaderQueueFrames", "NoReaderTimeout", "ContinueGrace", "MergeWrite", "DemoFile", "DemoPath"}

// apply makes next the running configuration: hooks are switched to a new
// client at once, HLS settings apply to new sessions, and the rest is
// listed as needing a restart.
func (e *Engine) apply(next engineapi.Config) (engineapi.ConfigResult, error) {
	cur := e.cfg.Load()
	res := engineapi.ConfigResult{Applied: true}
	cv, nv := reflect.ValueOf(*cur), reflect.ValueOf(next)
	for _, f := range restartFields {
		if !reflect.DeepEqual(cv.FieldByName(f).Interface(), nv.FieldByName(f).Interface()) {
			field, _ := reflect.TypeOf(next).FieldByName(f)
			res.RestartRequired = append(res.RestartRequired, field.Tag.Get("json"))
		}
	}
	if !reflect.DeepEqual(next.Hooks, cur.Hooks) {
		hc, err := hooks.New(next, e.log)
		if err != nil {
			return engineapi.ConfigResult{}, err
		}
		old := e.hooks.Swap(hc)
		old.Close()
	}
	if rc := next.Recording; e.records != nil {
		// The watermarks apply at once; the recorder's other settings at
		// its next start.
		e.records.SetWatermarks(recorder.Watermarks{LowSpaceBytes: rc.LowSpaceBytes, FullBytes: rc.FullBytes, Retention: rc.Retention, MaxAge: rc.MaxAge.D()})
		if err := e.records.SetFallback(rc.FallbackRoot); err != nil {
			return engineapi.ConfigResult{}, fmt.Errorf("engine: %w", err)
		}
	}
	e.cfg.Store(&next)
	e.log.Info("configuration applied", zap.Strings("restartRequired", res.RestartRequired))
	return res, nil
}

// writeConfig replaces the configuration file atomically (write, sync,
// rename), keeping it private to the engine's user.
func (e *Engine) writeConfig(cfg engineapi.Config) error {
	b, err := cfg.Marshal()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(e.path), ".engine-config-*")
	if err != nil {
		return fmt.Errorf("engine: writing the configuration: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), e.path)
}
