// Package engineconfig owns the engine's configuration file on the media
// host: it writes the first one, keeps the fields the agent manages
// (identity, control secret, hooks and their credentials) as the agent says,
// and changes the file for operators: a plan shows the changes and a diff
// and writes nothing; an apply backs the file up, writes it atomically,
// reads it back, has the engine reload it, and restores the backup when the
// engine refuses it.
package engineconfig

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/svc/agent/atomicfile"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Errors the command handlers map to agentapi codes.
var (
	ErrInvalid  = errors.New("invalid engine configuration")
	ErrConflict = errors.New("the configuration file changed since it was read")
	ErrRefused  = errors.New("the engine refused the new configuration")
)

// ErrNotRunning is what Reload returns when no engine runs; the new file is
// then simply used at the next start.
var ErrNotRunning = errors.New("the engine is not running")

// ManagedFields are owned by the agent; operators cannot change them.
var ManagedFields = []string{"nodeId", "controlSecretFile", "hooks.url", "hooks.fallbackUrls", "hooks.clientCertFile", "hooks.clientKeyFile", "hooks.caFile"}

// restartFields take effect only when the engine starts again.
var restartFields = map[string]bool{"controlAddr": true, "httpAddr": true, "rtspAddr": true, "rtpPortMin": true, "rtpPortMax": true, "dataDir": true}

// backupsKept bounds the backups of the file.
const backupsKept = 20

// File is the engine configuration file of this host.
type File struct {
	Path      string
	BackupDir string
	// Managed sets the agent's fields on a configuration.
	Managed func(*engineapi.Config)
	// Reload has the running engine re-read the file.
	Reload func(ctx context.Context) error

	mu sync.Mutex
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Ensure writes the first configuration (initial with the managed fields)
// when there is none, and puts the managed fields back when they differ
// (after a re-enrollment, say). A file that does not parse is left for the
// operator to fix with a raw apply.
func (f *File) Ensure(initial engineapi.Config) (engineapi.Config, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		f.Managed(&initial)
		if err := initial.Validate(); err != nil {
			return engineapi.Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		data, err := initial.Marshal()
		if err != nil {
			return engineapi.Config{}, err
		}
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
			return engineapi.Config{}, err
		}
		return initial, writeAtomic(f.Path, data)
	}
	if err != nil {
		return engineapi.Config{}, err
	}
	cfg, _, err := f.putManaged(cur)
	return cfg, err
}

// Refresh puts the managed fields back into the file when they changed
// since (the control nodes the hooks go to moved) and says whether it
// wrote; the caller has the engine reload.
func (f *File) Refresh() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, err := os.ReadFile(f.Path)
	if err != nil {
		return false, err
	}
	_, wrote, err := f.putManaged(cur)
	return wrote, err
}

// putManaged writes cur with the managed fields as the agent says, when
// they differ; called under f.mu.
func (f *File) putManaged(cur []byte) (engineapi.Config, bool, error) {
	cfg, err := engineapi.Parse(cur)
	if err != nil {
		return engineapi.Config{}, false, err
	}
	want := cfg
	f.Managed(&want)
	if managedDiff(cfg, want) == "" {
		return cfg, false, nil
	}
	data, err := want.Marshal()
	if err != nil {
		return engineapi.Config{}, false, err
	}
	if _, err := f.backup(cur); err != nil {
		return engineapi.Config{}, false, err
	}
	return want, true, writeAtomic(f.Path, data)
}

// Load reads the current file.
func (f *File) Load() (engineapi.Config, error) { return engineapi.Load(f.Path) }

// toMap is a configuration's settings object (its JSON form).
func toMap(c engineapi.Config) map[string]any {
	b, _ := json.Marshal(c)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// fromMap reads a settings object over the defaults; unknown keys fail.
func fromMap(m map[string]any) (engineapi.Config, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return engineapi.Config{}, err
	}
	c := engineapi.Defaults()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return engineapi.Config{}, err
	}
	return c, nil
}

// mergePatch applies an RFC 7396 JSON merge patch.
func mergePatch(target map[string]any, patch map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range target {
		out[k] = v
	}
	for k, v := range patch {
		if v == nil {
			delete(out, k)
			continue
		}
		if pm, ok := v.(map[string]any); ok {
			tm, _ := out[k].(map[string]any)
			if tm == nil {
				tm = map[string]any{}
			}
			out[k] = mergePatch(tm, pm)
			continue
		}
		out[k] = v
	}
	return out
}

// flatten lists every leaf of a settings object by dotted path, as JSON.
func flatten(prefix string, m map[string]any, out map[string]string) {
	for k, v := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			flatten(p, sub, out)
			continue
		}
		b, _ := json.Marshal(v)
		out[p] = string(b)
	}
}

func changes(a, b engineapi.Config) []agentapi.ConfigChange {
	fa, fb := map[string]string{}, map[string]string{}
	flatten("", toMap(a), fa)
	flatten("", toMap(b), fb)
	keys := map[string]bool{}
	for k := range fa {
		keys[k] = true
	}
	for k := range fb {
		keys[k] = true
	}
	var out []agentapi.ConfigChange
	for k := range keys {
		if fa[k] != fb[k] {
			out = append(out, agentapi.ConfigChange{Field: k, OldValue: fa[k], NewValue: fb[k], RestartRequired: restartFields[k]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	if out == nil {
		out = []agentapi.ConfigChange{}
	}
	return out
}

// managedDiff names the first managed field that differs, or "".
func managedDiff(a, b engineapi.Config) string {
	for _, c := range changes(a, b) {
		for _, m := range ManagedFields {
			if c.Field == m {
				return m
			}
		}
	}
	return ""
}

// Get is the file as settings.
func (f *File) Get() (agentapi.ConfigDocument, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, err := os.ReadFile(f.Path)
	if err != nil {
		return agentapi.ConfigDocument{}, err
	}
	cfg, err := engineapi.Parse(cur)
	if err != nil {
		return agentapi.ConfigDocument{}, fmt.Errorf("%w: the file does not parse (fix it with a raw apply): %w", ErrInvalid, err)
	}
	return agentapi.ConfigDocument{FileName: f.Path, Sha256: digest(cur), Settings: toMap(cfg), ManagedFields: ManagedFields}, nil
}

// Raw is the file as text.
func (f *File) Raw() (agentapi.RawConfig, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, err := os.ReadFile(f.Path)
	if err != nil {
		return agentapi.RawConfig{}, err
	}
	return agentapi.RawConfig{FileName: f.Path, Content: string(cur), Sha256: digest(cur)}, nil
}

// proposal is a planned file.
type proposal struct {
	plan agentapi.ConfigPlan
	data []byte
	// err is why the proposed content is not valid (plan.Message says
	// it in words).
	err error
}

// propose builds a plan from the current file and the proposed content
// (made by next from the current configuration).
func (f *File) propose(expected string, next func(cur engineapi.Config, curOK bool) ([]byte, engineapi.Config, error)) (proposal, error) {
	cur, err := os.ReadFile(f.Path)
	if err != nil {
		return proposal{}, err
	}
	p := agentapi.ConfigPlan{FileName: f.Path, CurrentSha256: digest(cur), Changes: []agentapi.ConfigChange{}}
	if expected != "" && !strings.EqualFold(expected, p.CurrentSha256) {
		return proposal{}, fmt.Errorf("%w: expected sha256 %s, the file has %s", ErrConflict, expected, p.CurrentSha256)
	}
	curCfg, perr := engineapi.Parse(cur)
	data, newCfg, err := next(curCfg, perr == nil)
	if err != nil {
		p.Valid, p.Message = false, err.Error()
		return proposal{plan: p, err: err}, nil
	}
	if perr == nil {
		if m := managedDiff(curCfg, newCfg); m != "" {
			p.Valid, p.Message = false, fmt.Sprintf("%s is managed by the node agent and cannot be changed", m)
			return proposal{plan: p}, nil
		}
		p.Changes = changes(curCfg, newCfg)
	} else {
		want := newCfg
		f.Managed(&want)
		if m := managedDiff(newCfg, want); m != "" {
			p.Valid, p.Message = false, fmt.Sprintf("%s must keep the value the node agent manages", m)
			return proposal{plan: p}, nil
		}
	}
	for _, c := range p.Changes {
		p.RestartRequired = p.RestartRequired || c.RestartRequired
	}
	p.Valid, p.PlannedSha256, p.Changed = true, digest(data), !bytes.Equal(cur, data)
	p.Diff = unifiedDiff(filepath.Base(f.Path), string(cur), string(data))
	switch {
	case !p.Changed:
		p.Message = "nothing would change"
	case p.RestartRequired:
		p.Message = fmt.Sprintf("%d settings would change; some take effect only after an engine restart", len(p.Changes))
	default:
		p.Message = fmt.Sprintf("%d settings would change and be reloaded by the running engine", len(p.Changes))
	}
	return proposal{plan: p, data: data}, nil
}

func patchNext(settings map[string]any) func(engineapi.Config, bool) ([]byte, engineapi.Config, error) {
	return func(cur engineapi.Config, ok bool) ([]byte, engineapi.Config, error) {
		if !ok {
			return nil, engineapi.Config{}, errors.New("the current file does not parse; replace it with a raw apply")
		}
		c, err := fromMap(mergePatch(toMap(cur), settings))
		if err != nil {
			return nil, engineapi.Config{}, err
		}
		if err := c.Validate(); err != nil {
			return nil, engineapi.Config{}, err
		}
		if err := c.CheckFallbackRoot(); err != nil {
			return nil, engineapi.Config{}, err
		}
		data, err := c.Marshal()
		return data, c, err
	}
}

func rawNext(content string) func(engineapi.Config, bool) ([]byte, engineapi.Config, error) {
	return func(engineapi.Config, bool) ([]byte, engineapi.Config, error) {
		c, err := engineapi.Parse([]byte(content))
		if err == nil {
			err = c.CheckFallbackRoot()
		}
		return []byte(content), c, err
	}
}

// PlanPatch previews a settings change; nothing is written.
func (f *File) PlanPatch(p agentapi.ConfigPatch) (agentapi.ConfigPlan, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pr, err := f.propose(p.ExpectedSha256, patchNext(p.Settings))
	return pr.plan, err
}

// PlanRaw previews a new file; nothing is written.
func (f *File) PlanRaw(r agentapi.RawConfigChange) (agentapi.ConfigPlan, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pr, err := f.propose(r.ExpectedSha256, rawNext(r.Content))
	return pr.plan, err
}

// ApplyPatch writes a settings change.
func (f *File) ApplyPatch(ctx context.Context, p agentapi.ConfigPatch) (agentapi.ConfigApplyResult, error) {
	return f.apply(ctx, p.ExpectedSha256, patchNext(p.Settings))
}

// ApplyRaw writes a new file.
func (f *File) ApplyRaw(ctx context.Context, r agentapi.RawConfigChange) (agentapi.ConfigApplyResult, error) {
	return f.apply(ctx, r.ExpectedSha256, rawNext(r.Content))
}

func (f *File) apply(ctx context.Context, expected string, next func(engineapi.Config, bool) ([]byte, engineapi.Config, error)) (agentapi.ConfigApplyResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pr, err := f.propose(expected, next)
	if err != nil {
		return agentapi.ConfigApplyResult{}, err
	}
	p := pr.plan
	res := agentapi.ConfigApplyResult{FileName: f.Path, Sha256: p.CurrentSha256, Changes: p.Changes, RestartRequired: p.RestartRequired}
	if !p.Valid {
		if errors.Is(pr.err, engineapi.ErrFallbackOverlap) {
			return res, pr.err
		}
		return res, fmt.Errorf("%w: %s", ErrInvalid, p.Message)
	}
	if !p.Changed {
		res.Applied, res.Message = true, "nothing to change"
		return res, nil
	}
	cur, err := os.ReadFile(f.Path)
	if err != nil {
		return res, err
	}
	if res.BackupFile, err = f.backup(cur); err != nil {
		return res, fmt.Errorf("backing up the configuration: %w", err)
	}
	restore := func(why error) (agentapi.ConfigApplyResult, error) {
		if err := writeAtomic(f.Path, cur); err != nil {
			return res, fmt.Errorf("%w; restoring the backup %s also failed: %w", why, res.BackupFile, err)
		}
		res.RolledBack, res.Sha256 = true, digest(cur)
		if f.Reload != nil {
			f.Reload(ctx)
		}
		res.Message = why.Error() + "; the previous file was restored from " + res.BackupFile
		return res, why
	}
	if err := writeAtomic(f.Path, pr.data); err != nil {
		return restore(fmt.Errorf("writing the configuration: %w", err))
	}
	back, err := os.ReadFile(f.Path)
	if err != nil || !bytes.Equal(back, pr.data) {
		return restore(fmt.Errorf("%w: the file did not read back as written", ErrRefused))
	}
	if _, err := engineapi.Parse(back); err != nil {
		return restore(fmt.Errorf("%w: %w", ErrRefused, err))
	}
	res.Sha256 = digest(back)
	if f.Reload != nil {
		switch err := f.Reload(ctx); {
		case err == nil:
			res.Reloaded = true
		case errors.Is(err, ErrNotRunning):
		default:
			return restore(fmt.Errorf("%w: %w", ErrRefused, err))
		}
	}
	res.Applied = true
	switch {
	case res.RestartRequired:
		res.Message = "written; restart the engine for the listen addresses or the RTP range to take effect"
	case res.Reloaded:
		res.Message = "written and reloaded by the engine"
	default:
		res.Message = "written; the engine is not running and reads it at its next start"
	}
	return res, nil
}

// backup copies the current file into the backup directory and keeps the
// newest backupsKept copies.
func (f *File) backup(cur []byte) (string, error) {
	if err := os.MkdirAll(f.BackupDir, 0o700); err != nil {
		return "", err
	}
	name := filepath.Join(f.BackupDir, filepath.Base(f.Path)+"."+time.Now().UTC().Format("20060102T150405.000000000Z")+".bak")
	if err := writeAtomic(name, cur); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(f.BackupDir)
	if err == nil && len(entries) > backupsKept {
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".bak") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names[:max(len(names)-backupsKept, 0)] {
			os.Remove(filepath.Join(f.BackupDir, n))
		}
	}
	return name, nil
}

func writeAtomic(path string, data []byte) error { return atomicfile.Write(path, data, 0o600, true) }
