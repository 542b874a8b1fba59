package emit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/proto"

	"onnxpart/ingest"
)

// ExistsError reports an output directory that already exists (and Force was not set).
// Link is set when it is a symbolic link, which is never followed.
type ExistsError struct {
	Dir  string
	Link bool
}

func (e *ExistsError) Error() string {
	if e.Link {
		return fmt.Sprintf("output directory %s is a symbolic link (use --force to replace the link itself; what it points to is left alone)", e.Dir)
	}
	return fmt.Sprintf("output directory %s already exists (use --force to replace it)", e.Dir)
}

// WriteError reports a failure to write the output directory; nothing is left behind.
type WriteError struct {
	Dir string
	Err error
}

func (e *WriteError) Error() string { return fmt.Sprintf("cannot write %s: %v", e.Dir, e.Err) }
func (e *WriteError) Unwrap() error { return e.Err }

// Write lays the model out by the assignment and writes the stage models and manifest into
// dir (see Prepare and Layout.WriteDir).
func Write(m *ingest.Model, a *Assignment, dir string, opt Options) (*Manifest, error) {
	l, err := Prepare(m, a, opt)
	if err != nil {
		return nil, err
	}
	if err := l.WriteDir(dir); err != nil {
		return nil, err
	}
	return l.Manifest, nil
}

// WriteDir writes stage<i>.onnx (+ stage<i>.onnx.data) for every stage and manifest.json
// into dir, atomically: everything goes into a temporary directory beside dir, is synced,
// and is renamed into place; on any error the temporary directory is removed and dir is
// untouched. An existing dir is refused unless Options.Force, and a dir holding the input
// model is always refused. A symbolic link at dir is never followed: it is refused, or with
// Force the link itself is replaced and what it points to is left alone. The manifest's
// file hashes are filled in.
func (l *Layout) WriteDir(dir string) (err error) {
	if dir == "" {
		return &WriteError{Dir: dir, Err: errors.New("no output directory given")}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return &WriteError{Dir: dir, Err: err}
	}
	if err := l.refuseModelInside(abs); err != nil {
		return &WriteError{Dir: dir, Err: err}
	}
	exists, link := false, false
	switch fi, err := os.Lstat(abs); {
	case err == nil && fi.Mode()&os.ModeSymlink != 0 && !l.opt.Force:
		return &ExistsError{Dir: dir, Link: true}
	case err == nil && fi.Mode()&os.ModeSymlink != 0:
		exists, link = true, true
	case err == nil && !fi.IsDir():
		return &WriteError{Dir: dir, Err: errors.New("exists and is not a directory")}
	case err == nil && !l.opt.Force:
		return &ExistsError{Dir: dir}
	case err == nil:
		exists = true
	case !errors.Is(err, os.ErrNotExist):
		return &WriteError{Dir: dir, Err: err}
	}
	parent := filepath.Dir(abs)
	created, err := mkdirParents(parent)
	if err != nil {
		return &WriteError{Dir: dir, Err: err}
	}
	tmp, err := os.MkdirTemp(parent, "."+tempBase(abs)+".tmp-")
	if err != nil {
		if created != "" {
			os.RemoveAll(created)
		}
		return &WriteError{Dir: dir, Err: err}
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
			if created != "" {
				os.RemoveAll(created)
			}
		}
	}()
	fail := func(e error) error { return &WriteError{Dir: dir, Err: e} }
	if err := l.writeFiles(tmp); err != nil {
		return fail(err)
	}
	if l.opt.Extras != nil {
		if err := l.opt.Extras(tmp, l.Manifest); err != nil {
			return fail(err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fail(err)
	}
	if err := syncDir(tmp); err != nil {
		return fail(err)
	}
	if exists {
		old := tmp + ".old"
		if err := os.Rename(abs, old); err != nil {
			return fail(err)
		}
		if err := os.Rename(tmp, abs); err != nil {
			if rerr := os.Rename(old, abs); rerr != nil {
				return fail(fmt.Errorf("%v; the previous directory is left at %s", err, old))
			}
			return fail(err)
		}
		if link {
			os.Remove(old) // the link, not what it points to
		} else {
			os.RemoveAll(old)
		}
	} else {
		if _, err := os.Lstat(abs); err == nil {
			return &ExistsError{Dir: dir}
		}
		if err := os.Rename(tmp, abs); err != nil {
			return fail(err)
		}
	}
	syncDir(parent)
	return nil
}

// writeFiles writes every stage and the manifest into tmp.
func (l *Layout) writeFiles(tmp string) error {
	files := 0
	step := func() error {
		files++
		if l.failAfterFiles > 0 && files >= l.failAfterFiles {
			return errors.New("injected failure")
		}
		return nil
	}
	var buf []byte
	for i := range l.stages {
		mp, exts, err := l.stageModel(i)
		if err != nil {
			return err
		}
		st := &l.Manifest.Stages[i]
		if len(exts) > 0 {
			sum, err := writeData(filepath.Join(tmp, dataFile(i)), exts)
			if err != nil {
				return err
			}
			st.DataFile, st.DataSHA256 = dataFile(i), sum
			if err := step(); err != nil {
				return err
			}
		} else {
			st.DataFile, st.DataSHA256 = "", ""
		}
		buf, err = proto.MarshalOptions{Deterministic: true}.MarshalAppend(buf[:0], mp)
		if err != nil {
			return fmt.Errorf("stage %d: %w", i, err)
		}
		sum := sha256.Sum256(buf)
		st.SHA256 = hex.EncodeToString(sum[:])
		if err := writeFileSync(filepath.Join(tmp, st.File), buf); err != nil {
			return err
		}
		if err := step(); err != nil {
			return err
		}
	}
	js, err := l.Manifest.MarshalIndent()
	if err != nil {
		return err
	}
	if err := writeFileSync(filepath.Join(tmp, ManifestFile), js); err != nil {
		return err
	}
	return step()
}

// writeData writes a stage's external weights, streaming those that come from the source's
// data files, and returns the file's sha256.
func writeData(path string, exts []*externalTensor) (string, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	w := io.MultiWriter(f, h)
	var at int64
	zeros := make([]byte, 4096)
	srcs := map[string]*os.File{}
	defer func() {
		for _, s := range srcs {
			s.Close()
		}
	}()
	for _, et := range exts {
		if pad := et.at - at; pad > 0 {
			if _, err := w.Write(zeros[:pad]); err != nil {
				return "", err
			}
			at += pad
		}
		if et.path == "" {
			if _, err := w.Write(et.inline); err != nil {
				return "", err
			}
		} else {
			s := srcs[et.path]
			if s == nil {
				if s, err = os.Open(et.path); err != nil {
					return "", err
				}
				srcs[et.path] = s
			}
			n, err := io.Copy(w, io.NewSectionReader(s, et.offset, et.length))
			if err != nil {
				return "", err
			}
			if n != et.length {
				return "", fmt.Errorf("weight %q: external data file %s ended early", et.name, et.path)
			}
		}
		at += et.length
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return hexSum(h), nil
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// mkdirParents creates dir and its missing parents; it returns the topmost directory it
// created ("" when dir existed), so that a failed write can remove it again.
func mkdirParents(dir string) (string, error) {
	first := ""
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return "", fmt.Errorf("%s is not a directory", p)
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		first = p
		if filepath.Dir(p) == p {
			break
		}
	}
	if first == "" {
		return "", nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		os.RemoveAll(first)
		return "", err
	}
	return first, nil
}

// tempBase makes a safe, short file-name stem from the output directory's name.
func tempBase(abs string) string {
	base := filepath.Base(abs)
	var b strings.Builder
	for _, r := range base {
		if r < 128 && (r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= 48 {
			break
		}
	}
	return strings.TrimLeft(b.String(), ".")
}

// refuseModelInside refuses an output directory that holds the input model or its
// external data (replacing it would delete them).
func (l *Layout) refuseModelInside(abs string) error {
	real := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		if r, err := filepath.EvalSymlinks(a); err == nil {
			return r
		}
		return a
	}
	out := real(abs)
	paths := []string{l.m.Path}
	for _, tp := range l.m.Proto.Graph.Initializer {
		if ref, err := l.m.ExternalRef(tp.GetName()); err == nil && ref != nil {
			paths = append(paths, ref.Path)
		}
	}
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		rp := real(p)
		if rel, err := filepath.Rel(out, rp); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("it holds the input model's file %s, which onnxpart never overwrites", p)
		}
	}
	return nil
}

// joinDir joins a file name to a directory.
func joinDir(dir, name string) string { return filepath.Join(dir, name) }
