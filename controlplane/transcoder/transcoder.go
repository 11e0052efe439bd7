// Package transcoder keeps the transcoder (ffmpeg) templates: named output
// profiles, cluster-wide or for one media server, that engines use when a
// stream is transcoded. Encoder options are structured fields plus a short
// allow-list of further options, so a template can never smuggle an input,
// an output file or a filter graph onto a media host's command line.
package transcoder

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/shared/pki"
)

// Prefix holds one record per template under its scope.
const Prefix = "/nodes/transcoder-templates/"

// allScope is the scope of templates for every media server.
const allScope = "_all"

// Sentinel errors, mapped to contract codes at the boundary.
var (
	ErrInvalid  = fault.New(fault.Invalid, "invalid_body", "invalid transcoder template")
	ErrNotFound = fault.New(fault.NotFound, "not_found", "no such transcoder template")
	ErrExists   = fault.New(fault.Conflict, "conflict", "a transcoder template of that name exists in that scope")
)

// Template is one stored template.
type Template struct {
	TemplateName     string    `json:"templateName"`
	MediaServerID    string    `json:"mediaServerId"`
	Description      string    `json:"description"`
	VideoCodec       string    `json:"videoCodec"`
	AudioCodec       string    `json:"audioCodec"`
	Width            int       `json:"width"`
	Height           int       `json:"height"`
	FrameRate        int       `json:"frameRate"`
	VideoBitrateKbps int       `json:"videoBitrateKbps"`
	AudioBitrateKbps int       `json:"audioBitrateKbps"`
	ExtraArgs        []string  `json:"extraArgs"`
	CreatedAt        time.Time `json:"createdAt"`
	UpdatedAt        time.Time `json:"updatedAt"`
	UpdatedBy        string    `json:"updatedBy"`
}

var (
	nameRe  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	valueRe = regexp.MustCompile(`^[A-Za-z0-9_.:+-]{1,32}$`)
	// allowedOptions take exactly one value each.
	allowedOptions = map[string]bool{"-preset": true, "-tune": true, "-profile:v": true, "-level": true, "-g": true, "-keyint_min": true,
		"-bf": true, "-crf": true, "-maxrate": true, "-bufsize": true, "-pix_fmt": true, "-ar": true, "-ac": true, "-sc_threshold": true}
	videoCodecs = map[string]bool{"copy": true, "h264": true, "h265": true, "none": true}
	audioCodecs = map[string]bool{"copy": true, "aac": true, "opus": true, "pcm_alaw": true, "pcm_mulaw": true, "none": true}
)

// Validate checks a template from a request.
func (t *Template) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	if !nameRe.MatchString(t.TemplateName) {
		return bad("templateName must be 1-64 letters, digits, '.', '_' or '-'")
	}
	if t.MediaServerID != "" && !pki.NodeIDPattern.MatchString(t.MediaServerID) {
		return bad("mediaServerId %q is not a valid id", t.MediaServerID)
	}
	if len(t.Description) > 512 {
		return bad("description must be at most 512 characters")
	}
	if !videoCodecs[t.VideoCodec] || !audioCodecs[t.AudioCodec] {
		return bad("unknown videoCodec %q or audioCodec %q", t.VideoCodec, t.AudioCodec)
	}
	if t.VideoCodec == "none" && t.AudioCodec == "none" {
		return bad("a template must keep audio or video")
	}
	if (t.VideoCodec == "copy" || t.VideoCodec == "none") && (t.Width != 0 || t.Height != 0 || t.FrameRate != 0 || t.VideoBitrateKbps != 0) {
		return bad("size, frame rate and video bit rate need a video encoder, not %q", t.VideoCodec)
	}
	if t.Width%2 != 0 || t.Height%2 != 0 {
		return bad("width and height must be even")
	}
	if len(t.ExtraArgs)%2 != 0 || len(t.ExtraArgs) > 32 {
		return bad("extraArgs are option/value pairs, at most 16")
	}
	for i := 0; i < len(t.ExtraArgs); i += 2 {
		if !allowedOptions[t.ExtraArgs[i]] {
			return bad("extraArgs option %q is not allowed", t.ExtraArgs[i])
		}
		if !valueRe.MatchString(t.ExtraArgs[i+1]) {
			return bad("extraArgs value %q for %s is not allowed", t.ExtraArgs[i+1], t.ExtraArgs[i])
		}
	}
	if t.ExtraArgs == nil {
		t.ExtraArgs = []string{}
	}
	return nil
}

func key(mediaServerID, name string) string {
	scope := mediaServerID
	if scope == "" {
		scope = allScope
	}
	return Prefix + scope + "/" + name
}

// Service stores the templates.
type Service struct {
	Store store.Store
}

// List returns every template, or those of one media server plus the
// cluster-wide ones, by scope and name.
func (s *Service) List(ctx context.Context, mediaServerID string) ([]Template, error) {
	resp, err := s.Store.Range(ctx, Prefix, store.RangeOptions{End: store.PrefixEnd(Prefix)})
	if err != nil {
		return nil, err
	}
	out := []Template{}
	for _, kv := range resp.KVs {
		t, err := store.Decode[Template](kv)
		if err != nil {
			return nil, fmt.Errorf("transcoder template %s: %w", kv.Key, err)
		}
		if mediaServerID == "" || t.MediaServerID == "" || t.MediaServerID == mediaServerID {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].MediaServerID != out[j].MediaServerID {
			return out[i].MediaServerID < out[j].MediaServerID
		}
		return out[i].TemplateName < out[j].TemplateName
	})
	return out, nil
}

// Scoped names the templates made for one media server.
func (s *Service) Scoped(ctx context.Context, mediaServerID string) ([]string, error) {
	all, err := s.List(ctx, mediaServerID)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range all {
		if t.MediaServerID == mediaServerID {
			names = append(names, t.TemplateName)
		}
	}
	return names, nil
}

// Save creates (create=true, refused when the name exists in the scope) or
// replaces (refused when it does not) a template.
func (s *Service) Save(ctx context.Context, actor audit.Actor, t Template, create bool) (*Template, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	k := key(t.MediaServerID, t.TemplateName)
	now := time.Now().UTC()
	var out *Template
	_, err := store.Update(ctx, s.Store, k, func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		switch {
		case create && kv != nil:
			return nil, nil, nil, fmt.Errorf("%w: %q", ErrExists, t.TemplateName)
		case !create && kv == nil:
			return nil, nil, nil, fmt.Errorf("%w: %q", ErrNotFound, t.TemplateName)
		}
		t.CreatedAt, t.UpdatedAt, t.UpdatedBy = now, now, actor.Type+":"+actor.ID
		if kv != nil {
			if old, err := store.Decode[Template](kv); err == nil {
				t.CreatedAt = old.CreatedAt
			}
		}
		verb := "updated"
		if create {
			verb = "created"
		}
		op, err := actor.Success("transcoder.template."+verb, "transcoder-template:"+strings.TrimPrefix(k, Prefix), t.Description)
		if err != nil {
			return nil, nil, nil, err
		}
		val, err := json.Marshal(t)
		out = &t
		return val, []store.Op{op}, nil, err
	})
	return out, err
}

// Delete removes a template of a scope.
func (s *Service) Delete(ctx context.Context, actor audit.Actor, mediaServerID, name string) (*Template, error) {
	k := key(mediaServerID, name)
	kv, _, err := store.Get(ctx, s.Store, k, store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	t, err := store.Decode[Template](kv)
	if err != nil {
		return nil, err
	}
	op, err := actor.Success("transcoder.template.deleted", "transcoder-template:"+strings.TrimPrefix(k, Prefix), "")
	if err != nil {
		return nil, err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(k, kv.ModRevision)}, Then: []store.Op{store.Delete(k), op}})
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("%w: %q changed meanwhile", store.ErrContended, name)
	}
	return &t, nil
}
