package recorder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
)

// The directory browser of the console walks the recording roots only:
// every path a client gives is relative to a root, and what it names must
// stay under that root once symlinks are resolved.

// Refusals of a browser path (engineapi.BrowseResult.Problem).
var (
	// ErrOutsideRoot: the path is absolute, holds "..", or resolves
	// (through a symlink) outside its root.
	ErrOutsideRoot = errors.New("recorder: the path leads outside the recording root")
	// ErrBadPath: empty components aside, the path is not a usable name
	// (NUL, too long, a hidden or odd new directory name).
	ErrBadPath = errors.New("recorder: unusable path")
)

// CleanRel checks a client's path relative to a root
// (engineapi.BrowsePathProblem) and answers it cleaned ("" for the root
// itself).
func CleanRel(rel string) (string, error) {
	switch engineapi.BrowsePathProblem(rel) {
	case engineapi.BrowseBadPath:
		return "", fmt.Errorf("%w: %q", ErrBadPath, rel)
	case engineapi.BrowseOutsideRoot:
		return "", fmt.Errorf("%w: %q is absolute or holds a .. component", ErrOutsideRoot, rel)
	}
	return filepath.Clean("/" + rel)[1:], nil
}

// Confine resolves a client's path under root to the absolute path it
// names, following symlinks: the result, and every directory on the way,
// lies under root's own resolved path. A path whose last components do
// not exist yet (a directory to create) is resolved as far as it exists.
func Confine(root, rel string) (string, error) {
	rel, err := CleanRel(rel)
	if err != nil {
		return "", err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	p := filepath.Join(realRoot, rel)
	// The deepest existing prefix is resolved; what follows it does not
	// exist, so it holds no symlink.
	existing, rest := p, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		if existing == realRoot {
			return "", fmt.Errorf("%w: the root %s is gone", fs.ErrNotExist, root)
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = filepath.Dir(existing)
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrOutsideRoot, rel, err) // a dangling symlink: where it leads is unknown
	}
	if !within(realRoot, resolved) {
		return "", fmt.Errorf("%w: %q", ErrOutsideRoot, rel)
	}
	return filepath.Join(resolved, rest), nil
}

// rootOf answers the directory of a browser root name: "primary" (the
// recording root) or "fallback".
func (r *Recorder) rootOf(name string) (string, error) {
	switch name {
	case engineapi.BrowseRootPrimary, "":
		return r.root, nil
	case engineapi.BrowseRootFallback:
		if fb := r.fallback.Load(); fb != nil {
			return fb.root, nil
		}
	}
	return "", fmt.Errorf("%w: no recording root %q", ErrBadPath, name)
}

// maxBrowseEntries bounds one listing.
const maxBrowseEntries = 1000

// Browse lists the directory at rel under the named root (directories
// first, by name; at most maxBrowseEntries), or with create makes it (its
// parent must exist) and checks that the engine can write there.
func (r *Recorder) Browse(req engineapi.BrowseRequest) engineapi.BrowseResult {
	res := engineapi.BrowseResult{Root: req.Root, Path: req.Path, Entries: []engineapi.BrowseEntry{}}
	if res.Root == "" {
		res.Root = engineapi.BrowseRootPrimary
	}
	root, err := r.rootOf(req.Root)
	if err != nil {
		res.Problem, res.Detail = engineapi.BrowseBadPath, err.Error()
		return res
	}
	abs, err := Confine(root, req.Path)
	if err == nil && req.Create {
		res.Created, err = createDir(root, abs)
	}
	if err != nil {
		res.Problem, res.Detail = browseProblem(err), err.Error()
		return res
	}
	st, err := os.Stat(abs)
	switch {
	case err != nil:
		res.Problem, res.Detail = browseProblem(err), err.Error()
		return res
	case !st.IsDir():
		res.Problem, res.Detail = engineapi.BrowseNotDirectory, req.Path+" is not a directory"
		return res
	}
	if req.Create {
		f, err := os.CreateTemp(abs, ".svc-write-probe-*")
		if err == nil {
			f.Close()
			os.Remove(f.Name())
		}
		res.Writable = err == nil
		return res
	}
	des, err := os.ReadDir(abs)
	if err != nil {
		res.Problem, res.Detail = browseProblem(err), err.Error()
		return res
	}
	for _, de := range des {
		if strings.HasPrefix(de.Name(), ".") {
			continue // the identity marker, write probes, recovery temporaries
		}
		e := engineapi.BrowseEntry{Name: de.Name(), Type: engineapi.BrowseFile}
		if info, err := de.Info(); err == nil {
			e.Size, e.ModifiedAt = info.Size(), info.ModTime().UTC().Truncate(time.Second)
			switch {
			case info.IsDir():
				e.Type, e.Size = engineapi.BrowseDirectory, 0
			case info.Mode()&fs.ModeSymlink != 0:
				e.Type = engineapi.BrowseSymlink // never followed by a listing; browsing into it is confined
			}
		}
		res.Entries = append(res.Entries, e)
	}
	sort.SliceStable(res.Entries, func(i, j int) bool {
		a, b := res.Entries[i], res.Entries[j]
		if (a.Type == engineapi.BrowseDirectory) != (b.Type == engineapi.BrowseDirectory) {
			return a.Type == engineapi.BrowseDirectory
		}
		return a.Name < b.Name
	})
	if len(res.Entries) > maxBrowseEntries {
		res.Entries, res.Truncated = res.Entries[:maxBrowseEntries], true
	}
	return res
}

// createDir makes the confined directory abs (one level: its parent must
// exist) with a plain, visible name, and says whether it made it (false:
// it was there).
func createDir(root, abs string) (bool, error) {
	made, err := mkdirOnce(abs)
	if err != nil {
		return false, err
	}
	return made, confirmWithin(root, abs)
}

func mkdirOnce(abs string) (bool, error) {
	if !nameRE.MatchString(filepath.Base(abs)) {
		return false, fmt.Errorf("%w: %q is not a directory name (letters, digits, . _ -, not starting with .)", ErrBadPath, filepath.Base(abs))
	}
	err := os.Mkdir(abs, 0o750)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	return err == nil, err
}

// confirmWithin checks that what is at abs now, made or found, resolves
// under root (a symlink raced in would fail here).
func confirmWithin(root, abs string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	if !within(realRoot, resolved) {
		return fmt.Errorf("%w: %s", ErrOutsideRoot, abs)
	}
	return nil
}

func browseProblem(err error) string {
	switch {
	case errors.Is(err, ErrOutsideRoot):
		return engineapi.BrowseOutsideRoot
	case errors.Is(err, ErrBadPath):
		return engineapi.BrowseBadPath
	case errors.Is(err, fs.ErrNotExist):
		return engineapi.BrowseNotFound
	}
	return engineapi.BrowseFailed
}
