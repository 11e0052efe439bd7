// Package atomicfile replaces files so a reader (or the agent after a
// crash) sees either the old content or the new one, never a torn file:
// the data goes to a temporary file beside the target, optionally synced,
// then renamed over it.
package atomicfile

import "os"

// Write replaces path with data, mode perm; sync makes the data durable
// before the rename (for files a host crash must not lose).
func Write(path string, data []byte, perm os.FileMode, sync bool) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
