// Package atomicfs replaces files and directories so that a reader sees the old content or
// the new, never a half-written one, and a failure leaves the old content in place. It is
// the one place that does this: the output directory (emit), the Triton repository
// (deploy/triton), report.html (report), the host-calibration cache (profile) and the files
// written beside a plan all go through it.
package atomicfs

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes data to path through a synced temporary file in the same directory, then
// renames it over path with mode perm. On any error path is left as it was and the temporary
// file is removed.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	SyncDir(filepath.Dir(path))
	return nil
}

// ReplaceDir puts the directory tmp in the place of the existing directory dst. dst is first
// moved aside to old (dst + ".old" beside tmp's name); check, when not nil, then inspects old
// and may refuse, which puts dst back. On success it returns old, which the caller empties and
// removes (only the caller knows which of its entries are its own). When tmp cannot take the
// place, dst is put back; if even that fails the error says where the previous directory is.
func ReplaceDir(tmp, dst string, check func(old string) error) (old string, err error) {
	old = tmp + ".old"
	if err := os.Rename(dst, old); err != nil {
		return "", err
	}
	if check != nil {
		if err := check(old); err != nil {
			os.Rename(old, dst)
			return "", err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		if rerr := os.Rename(old, dst); rerr != nil {
			return "", fmt.Errorf("%v; the previous directory is left at %s", err, old)
		}
		return "", err
	}
	SyncDir(filepath.Dir(dst))
	return old, nil
}

// SyncDir flushes a directory's entries (a rename in it) to disk, where the system allows.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
