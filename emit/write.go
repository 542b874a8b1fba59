package emit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/atomicfs"
	"github.com/onnxpart/onnxpart/internal/outdir"
)

// existsErr is an output directory that already exists (and Force was not set): a
// *diag.Error of kind input. link: it is a symbolic link, which is never followed. foreign,
// when set, is the first entry of the directory that onnxpart did not write: Force would
// not replace it either, so the message does not suggest it (the cause is then a
// *ForeignFile).
// force is the caller's name of Options.Force.
func existsErr(dir string, link bool, foreign *ForeignFile, force string) *diag.Error {
	switch {
	case link:
		return diag.Input("output directory %s is a symbolic link (use %s to replace the link itself; what it points to is left alone)", dir, force)
	case foreign != nil:
		foreign.Dir = dir
		return diag.Input("output directory %s already exists and holds %s, which onnxpart did not write (choose another directory)", dir, foreign.File).Wrap(foreign)
	}
	return diag.Input("output directory %s already exists (use %s to replace it)", dir, force)
}

// ForeignFile is the cause of the error for an output directory that Force may not replace
// (a *diag.Error of kind input): Dir holds File (a path relative to Dir), which is not part
// of a previous onnxpart output. Force replaces only an empty directory or one holding
// onnxpart's output, and removes only the files its manifest lists, so that a user's file is
// never deleted.
type ForeignFile struct {
	Dir  string
	File string
	// Why says what is wrong with File when the name alone does not (a manifest that is
	// not onnxpart's).
	Why string
	// force is the caller's name of Options.Force (empty: "Options.Force").
	force string
}

// Error names the file and says why it is in the way.
func (e *ForeignFile) Error() string {
	why := "which onnxpart did not write"
	if e.Why != "" {
		why = e.Why
	}
	force := e.force
	if force == "" {
		force = diag.Names(nil).Name("Force")
	}
	return fmt.Sprintf("output directory %s holds %s, %s; %s replaces only an empty directory or onnxpart's own output (move the file or choose another directory)", e.Dir, e.File, why, force)
}

// foreignErr is the error for dir holding fe.File: a *diag.Error of kind input whose cause
// is fe; force is the caller's name of Options.Force.
func foreignErr(dir string, fe *ForeignFile, force string) *diag.Error {
	fe.Dir, fe.force = dir, force
	return diag.Wrap(diag.KindInput, fe)
}

// writeErr is a failure to write the output directory dir (nothing is left behind): a
// *diag.Error of kind input, "cannot write DIR: ERR", whose cause is err.
func writeErr(dir string, err error) *diag.Error {
	return diag.Input("cannot write %s: %w", dir, err)
}

// Write lays the model out by the assignment and writes the stage models and manifest into
// dir (see NewLayout and Layout.WriteDir).
func Write(m *ingest.Model, a *Assignment, dir string, opt Options) (*Manifest, error) {
	l, err := NewLayout(m, a, opt)
	if err != nil {
		return nil, err
	}
	if err := l.WriteDir(dir); err != nil {
		return nil, err
	}
	return l.Manifest, nil
}

// WriteDir writes stage<i>.onnx (+ stage<i>.onnx.data) for every stage and manifest.json
// (and what Options.BeforeManifest adds) into dir, atomically: everything goes into a
// temporary directory beside dir, is synced, and is renamed into place; on any error the
// temporary directory is removed and dir is untouched. An existing dir is refused unless Options.Force, and Force replaces only an
// empty directory or a previous onnxpart output, removing only the files its manifest lists
// (see CheckOutput). A dir holding the input model, the root, the current or the home
// directory or a parent of them is always refused. A symbolic link at dir is never
// followed: it is refused, or with Force the link itself is replaced and what it points to
// is left alone. The manifest's file hashes are filled in.
func (l *Layout) WriteDir(dir string) (err error) {
	o, err := checkOutput(dir, l.opt.Force, l.opt.Names.Name("Force"), modelFiles(l.m))
	if err != nil {
		return err
	}
	abs := o.abs
	parent := filepath.Dir(abs)
	created, err := mkdirParents(parent)
	if err != nil {
		return writeErr(dir, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+outdir.TempBase(abs)+".tmp-")
	if err != nil {
		if created != "" {
			os.RemoveAll(created)
		}
		return writeErr(dir, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
			if created != "" {
				os.RemoveAll(created)
			}
		}
	}()
	fail := func(e error) error { return writeErr(dir, e) }
	l.Manifest.Model.FromManifest = relativeTo(abs, l.opt.ModelPath)
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
	if err := atomicfs.SyncDir(tmp); err != nil {
		return fail(err)
	}
	if !o.exists {
		if _, err := os.Lstat(abs); err == nil {
			return existsErr(dir, false, nil, l.opt.Names.Name("Force"))
		}
		if err := os.Rename(tmp, abs); err != nil {
			return fail(err)
		}
		atomicfs.SyncDir(parent)
		return nil
	}
	owned := o.owned
	old, err := atomicfs.ReplaceDir(tmp, abs, func(old string) error {
		if o.link {
			return nil
		}
		// Checked again under the private name: a file that appeared since the first check
		// puts the directory back and keeps it.
		var err error
		owned, err = ownedEntries(old, "", true)
		return err
	})
	if err != nil {
		var fe *ForeignFile
		if errors.As(err, &fe) {
			return foreignErr(dir, fe, l.opt.Names.Name("Force"))
		}
		return fail(err)
	}
	if o.link {
		os.Remove(old) // the link, not what it points to
	} else {
		for _, name := range owned {
			os.RemoveAll(filepath.Join(old, name))
		}
		if err := os.Remove(old); err != nil {
			return fail(fmt.Errorf("wrote it, but the previous directory's other files are left at %s: %v", old, err))
		}
	}
	atomicfs.SyncDir(parent)
	return nil
}

// CheckOutput runs WriteDir's checks of the output directory dir for the model m without
// writing anything, and one more that WriteDir finds out only by writing: that the nearest
// existing directory on the way to dir is writable. Callers run it before planning so that
// a bad output directory is reported at once; WriteDir checks again. The errors are those of
// WriteDir, all *diag.Error of kind input: "cannot write DIR: …" (the model's directory, the
// root, the current or home directory or a parent of them, a file in the way, no
// permission), "output directory DIR already exists" (opt.Force is false) or "output
// directory DIR holds FILE" (opt.Force, but dir holds a file onnxpart did not write; the
// cause is a *ForeignFile). Of opt only Force and Names are read.
func CheckOutput(m *ingest.Model, dir string, opt Options) error {
	o, err := checkOutput(dir, opt.Force, opt.Names.Name("Force"), modelFiles(m))
	if err != nil {
		return err
	}
	p := filepath.Dir(o.abs)
	for {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return writeErr(dir, fmt.Errorf("%s is not a directory", p))
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) || filepath.Dir(p) == p {
			return writeErr(dir, err)
		}
		p = filepath.Dir(p)
	}
	probe, err := os.MkdirTemp(p, "."+outdir.TempBase(o.abs)+".probe-")
	if err != nil {
		// The probe's own name is an internal detail: the error names the directory.
		var pe *fs.PathError
		switch {
		case errors.Is(err, os.ErrPermission):
			err = fmt.Errorf("%s is not writable", p)
		case errors.As(err, &pe):
			err = fmt.Errorf("cannot create a directory in %s: %v", p, pe.Err)
		}
		return writeErr(dir, err)
	}
	return os.Remove(probe)
}

// outputDir is what checkOutput found at an output path.
type outputDir struct {
	abs          string
	exists, link bool
	// owned are the entries of an existing directory, all written by a previous onnxpart
	// run: the only ones a replacement removes.
	owned []string
}

// checkOutput checks an output path: not one of the protected directories (see
// refuseInputsInside and refuseProtected), not a file, and, when it exists, replaceable:
// force is set and it is a symbolic link, an empty directory or a previous output. forceName
// is the caller's name of Options.Force.
func checkOutput(dir string, force bool, forceName string, inputs []string) (*outputDir, error) {
	if dir == "" {
		return nil, writeErr(dir, errors.New("no output directory given"))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, writeErr(dir, err)
	}
	if err := refuseInputsInside(abs, inputs); err != nil {
		return nil, writeErr(dir, err)
	}
	if err := refuseProtected(abs); err != nil {
		return nil, writeErr(dir, err)
	}
	o := &outputDir{abs: abs}
	fi, err := os.Lstat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return o, nil // a file on the way is reported when the parents are made
	case err != nil:
		return nil, writeErr(dir, err)
	case fi.Mode()&os.ModeSymlink != 0:
		if !force {
			return nil, existsErr(dir, true, nil, forceName)
		}
		o.exists, o.link = true, true
		return o, nil
	case !fi.IsDir():
		return nil, writeErr(dir, errors.New("exists and is not a directory"))
	}
	owned, err := ownedEntries(abs, "", true)
	var fe *ForeignFile
	switch {
	case errors.As(err, &fe) && !force:
		return nil, existsErr(dir, false, fe, forceName)
	case errors.As(err, &fe):
		return nil, foreignErr(dir, fe, forceName)
	case err != nil:
		return nil, writeErr(dir, err)
	case !force:
		return nil, existsErr(dir, false, nil, forceName)
	}
	o.exists, o.owned = true, owned
	return o, nil
}

// ownedEntries returns the names of dir's entries when every one of them is part of a
// previous onnxpart output: manifest.json, the stage and data files it lists, report.html,
// genai_config.json, the Triton repository and, at the top (top), the batch's route
// directories, each checked the same way by its own manifest. The first other entry in name
// order is a *ForeignFile whose File is relative to the top directory (rel is dir's path
// from it). An empty directory has no entries.
func ownedEntries(dir, rel string, top bool) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil || len(es) == 0 {
		return nil, err
	}
	foreign := func(name, why string) error {
		return &ForeignFile{File: filepath.Join(rel, name), Why: why}
	}
	man, err := ReadManifest(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, foreign(es[0].Name(), "")
	} else if err != nil {
		return nil, foreign(ManifestFile, "which is not an onnxpart manifest")
	}
	// The kind each owned name must have (a symbolic link is never ours).
	kind := map[string]os.FileMode{ManifestFile: 0, outdir.ReportFile: 0, outdir.TritonDir: os.ModeDir, outdir.GenAIFile: 0}
	for _, st := range man.Stages {
		for _, f := range []string{st.File, st.DataFile} {
			if plainName(f) && (strings.HasSuffix(f, ".onnx") || strings.HasSuffix(f, ".onnx.data")) {
				kind[f] = 0
			}
		}
	}
	routes := map[string]bool{}
	if top && man.Batch != nil {
		for _, r := range man.Batch.Routes {
			if r.Dir != "." && plainName(r.Dir) {
				kind[r.Dir], routes[r.Dir] = os.ModeDir, true
			}
		}
	}
	owned := make([]string, 0, len(es))
	for _, e := range es {
		k, ok := kind[e.Name()]
		if !ok || e.Type() != k {
			return nil, foreign(e.Name(), "")
		}
		if routes[e.Name()] {
			if _, err := ownedEntries(filepath.Join(dir, e.Name()), filepath.Join(rel, e.Name()), false); err != nil {
				return nil, err
			}
		}
		owned = append(owned, e.Name())
	}
	return owned, nil
}

// relativeTo returns the path of file (absolute, or relative to the current directory)
// relative to the directory dir, as the manifest records the model: never an absolute path,
// and valid wherever the directory and the model move together. A file on another volume
// keeps its base name.
func relativeTo(dir, file string) string {
	abs, err := filepath.Abs(file)
	if err != nil {
		return filepath.Base(file)
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		return filepath.Base(file)
	}
	return filepath.ToSlash(rel)
}

// plainName reports whether name is one file name, not a path or a hidden name.
func plainName(name string) bool {
	return name != "" && name == filepath.Base(name) && !strings.HasPrefix(name, ".") && !strings.ContainsAny(name, `/\`)
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
		if err := outdir.WriteFileSync(filepath.Join(tmp, st.File), buf); err != nil {
			return err
		}
		if err := step(); err != nil {
			return err
		}
	}
	if l.opt.BeforeManifest != nil {
		if err := l.opt.BeforeManifest(tmp, l.Manifest); err != nil {
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
	if err := outdir.WriteFileSync(filepath.Join(tmp, ManifestFile), js); err != nil {
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

// modelFiles are the input model's file and its external data files.
func modelFiles(m *ingest.Model) []string {
	paths := []string{m.Path}
	seen := map[string]bool{m.Path: true}
	for _, tp := range m.Proto().Graph.Initializer {
		if ref, err := m.ExternalRef(tp.GetName()); err == nil && ref != nil && !seen[ref.Path] {
			seen[ref.Path] = true
			paths = append(paths, ref.Path)
		}
	}
	return paths
}

// realPath makes p absolute and resolves its symbolic links as far as it exists.
func realPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	if r, err := filepath.EvalSymlinks(a); err == nil {
		return r
	}
	return a
}

// within reports whether p is dir or lies beneath it (both cleaned and absolute).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// refuseInputsInside refuses an output directory that holds one of the input model's
// files (replacing it would delete them).
func refuseInputsInside(abs string, inputs []string) error {
	out := realPath(abs)
	for _, p := range inputs {
		if within(out, realPath(p)) {
			return fmt.Errorf("it holds the input model's file %s, which onnxpart never overwrites", p)
		}
	}
	return nil
}

// refuseProtected refuses the directories whose replacement would take a user's whole
// work away: the root, the current directory, the home directory and their parents.
func refuseProtected(abs string) error {
	out := realPath(abs)
	if filepath.Dir(out) == out {
		return errors.New("it is the root directory, which onnxpart never replaces")
	}
	cwd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	for _, d := range []struct{ path, name string }{{cwd, "the current directory"}, {home, "your home directory"}} {
		if d.path == "" {
			continue
		}
		switch p := realPath(d.path); {
		case p == out:
			return fmt.Errorf("it is %s, which onnxpart never replaces", d.name)
		case within(out, p):
			return fmt.Errorf("it holds %s, which onnxpart never replaces", d.name)
		}
	}
	return nil
}

// joinDir joins a file name to a directory.
func joinDir(dir, name string) string { return filepath.Join(dir, name) }
