package recording

import (
	"context"
	"fmt"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// BrowserRoot is an entry point of the directory browser: a media host's
// recording root (primary) or fallback root, by name.
type BrowserRoot struct {
	MediaServerID string `json:"mediaServerId"`
	NodeID        string `json:"nodeId"`
	Root          string `json:"root"`
	// Path is the directory on the media host.
	Path  string `json:"path"`
	State string `json:"state"`
}

// BrowserRoots lists the roots the browser may walk, read from the
// engines like DiskStates (a host that cannot be asked has none).
func (s *Service) BrowserRoots(ctx context.Context) ([]BrowserRoot, error) {
	states, err := s.DiskStates(ctx)
	if err != nil {
		return nil, err
	}
	out := []BrowserRoot{}
	for _, d := range states {
		if d.Path != "" {
			out = append(out, BrowserRoot{MediaServerID: d.MediaServerID, NodeID: d.NodeID, Root: engineapi.BrowseRootPrimary, Path: d.Path, State: d.State})
		}
		if d.FallbackRoot != "" {
			out = append(out, BrowserRoot{MediaServerID: d.MediaServerID, NodeID: d.NodeID, Root: engineapi.BrowseRootFallback, Path: d.FallbackRoot,
				State: d.FallbackState})
		}
	}
	return out, nil
}

// BrowseRequest names a directory of the browser: a media server, its
// root (primary when empty, or fallback) and a path relative to the root.
type BrowseRequest struct {
	MediaServerID string
	Root          string
	Path          string
}

// Browsed is a listing, or a directory made, with the host named.
type Browsed struct {
	MediaServerID string `json:"mediaServerId"`
	NodeID        string `json:"nodeId"`
	engineapi.BrowseResult
}

// Browse lists a directory under a media server's recording root, or
// with create makes it (its parent must exist) and checks that the engine
// can write there. Paths are checked here (absolute paths, .., NUL) and
// again by the engine, which also refuses a symlink leading out of the
// root: the browser never shows or makes anything outside the roots.
func (s *Service) Browse(ctx context.Context, actor audit.Actor, req BrowseRequest, create bool) (*Browsed, error) {
	if req.MediaServerID == "" {
		return nil, fmt.Errorf("%w: mediaServerId is required", ErrInvalid)
	}
	if req.Root != "" && req.Root != engineapi.BrowseRootPrimary && req.Root != engineapi.BrowseRootFallback {
		return nil, fmt.Errorf("%w: root must be primary or fallback, not %q", ErrInvalid, req.Root)
	}
	if create && req.Path == "" {
		return nil, fmt.Errorf("%w: path names the directory to create", ErrPathInvalid)
	}
	if err := browseRefusal(engineapi.BrowsePathProblem(req.Path), fmt.Sprintf("%q", req.Path)); err != nil {
		return nil, err
	}
	typ, reason := agentapi.TypeEngineRecordBrowse, "browse a recording root"
	if create {
		typ, reason = agentapi.TypeEngineRecordMkdir, "create a directory under a recording root"
	}
	var out Browsed
	o, err := s.Engines.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: req.MediaServerID}, Type: typ,
		Payload: engineapi.BrowseRequest{Root: req.Root, Path: req.Path}, Reason: reason, Actor: actor, Read: !create, Wait: s.engineWait()}, &out.BrowseResult)
	if err != nil {
		return nil, err
	}
	if !o.Done {
		return nil, fmt.Errorf("%w: media server %s did not answer in time; see node command %s", ErrEngine, req.MediaServerID, o.Command.CommandID)
	}
	if err := browseRefusal(out.Problem, out.Detail); err != nil {
		return nil, err
	}
	out.MediaServerID, out.NodeID = req.MediaServerID, o.Node.NodeID
	if out.Entries == nil {
		out.Entries = []engineapi.BrowseEntry{}
	}
	return &out, nil
}

// browseRefusal turns a browser problem into the contract's error.
func browseRefusal(problem, detail string) error {
	switch problem {
	case "":
		return nil
	case engineapi.BrowseOutsideRoot:
		return fmt.Errorf("%w: %s", ErrPathOutsideRoot, detail)
	case engineapi.BrowseBadPath:
		return fmt.Errorf("%w: %s", ErrPathInvalid, detail)
	case engineapi.BrowseNotFound:
		return fmt.Errorf("%w: %s", ErrPathNotFound, detail)
	case engineapi.BrowseNotDirectory:
		return fmt.Errorf("%w: %s", ErrPathNotDirectory, detail)
	}
	return fmt.Errorf("%w: %s", ErrEngine, detail)
}
