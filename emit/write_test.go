package emit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/internal/outdir"
	"github.com/onnxpart/onnxpart/internal/testmodel"
)

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func prepared(t *testing.T, name string, k int, opt Options) *Layout {
	t.Helper()
	m := testmodel.Load(t, testmodel.Corpus(t, name))
	stage, err := EqualFLOPs(m.Graph, k)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(m, &Assignment{Stage: stage}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestWriteRefusesExistingDir(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	os.Mkdir(dir, 0o755)
	l := prepared(t, "squeezenet1_1_small.onnx", 2, Options{})
	if err := l.WriteDir(dir); !isInput(err) || errors.As(err, new(*ForeignFile)) || !strings.Contains(err.Error(), "already exists (use Options.Force") {
		t.Fatalf("an empty directory: got %v, want an input error: it already exists", err)
	}
	// --force replaces an empty directory.
	l = prepared(t, "squeezenet1_1_small.onnx", 2, Options{Force: true})
	if err := l.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dir); strings.Join(got, " ") != "manifest.json stage0.onnx stage1.onnx" {
		t.Errorf("after --force: %v", got)
	}
	if got := listDir(t, parent); len(got) != 1 {
		t.Errorf("left behind: %v", got)
	}
	// A file is never replaced.
	f := filepath.Join(parent, "file")
	os.WriteFile(f, []byte("x"), 0o644)
	if err := l.WriteDir(f); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("over a file: %v", err)
	}
}

// previousOutput writes an onnxpart output into dir as a batched plan of two routes does:
// stage files, manifest, report.html, a Triton repository and route1/ with its own.
func previousOutput(t *testing.T, dir string) {
	t.Helper()
	extras := func(tmp string, man *Manifest) error {
		os.WriteFile(filepath.Join(tmp, outdir.ReportFile), []byte("<html>"), 0o644)
		os.MkdirAll(filepath.Join(tmp, outdir.TritonDir, "stage0", "1"), 0o755)
		return os.WriteFile(filepath.Join(tmp, outdir.TritonDir, "stage0", "config.pbtxt"), []byte("name: \"stage0\""), 0o644)
	}
	route := prepared(t, "squeezenet1_1_small.onnx", 2, Options{Extras: extras})
	l := prepared(t, "squeezenet1_1_small.onnx", 3, Options{Force: true, Extras: func(tmp string, man *Manifest) error {
		if err := route.WriteDir(filepath.Join(tmp, "route1")); err != nil {
			return err
		}
		return extras(tmp, man)
	}})
	l.Manifest.Batch = &Batch{Routes: []Route{{Index: 0, Dir: "."}, {Index: 1, Dir: "route1"}}}
	route.Manifest.Batch = l.Manifest.Batch
	if err := l.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
}

// TestWriteForceKeepsUserFiles: --force replaces a previous onnxpart output (every file it
// wrote, route directories included) but never a directory holding anything else, wherever
// the foreign file sits; the refused directory and its parent are left exactly as they were.
func TestWriteForceKeepsUserFiles(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	previousOutput(t, dir)
	before := testmodel.ListTree(t, parent)
	if want := "out/route1/stage1.onnx"; !strings.Contains(strings.Join(before, " "), want) {
		t.Fatalf("the previous output has no %s: %v", want, before)
	}
	// Replacing a previous output removes all of it.
	l := prepared(t, "squeezenet1_1_small.onnx", 2, Options{Force: true})
	if err := l.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	if got := testmodel.ListTree(t, parent); strings.Join(got, " ") != "out out/manifest.json out/stage0.onnx out/stage1.onnx" {
		t.Errorf("after replacing a previous output: %v", got)
	}

	for _, c := range []struct {
		name    string
		plant   func(dir string) // called on a previous output
		foreign string           // the entry the error names
	}{
		{"a user's file", func(d string) { os.WriteFile(filepath.Join(d, "thesis.tex"), []byte("mine"), 0o644) }, "thesis.tex"},
		{"the first of several", func(d string) {
			os.WriteFile(filepath.Join(d, "zz.txt"), []byte("mine"), 0o644)
			os.WriteFile(filepath.Join(d, "notes.txt"), []byte("mine"), 0o644)
		}, "notes.txt"},
		{"a hidden file", func(d string) { os.WriteFile(filepath.Join(d, ".env"), []byte("mine"), 0o644) }, ".env"},
		{"a user's directory", func(d string) { os.Mkdir(filepath.Join(d, "data"), 0o755) }, "data"},
		{"inside a route directory", func(d string) { os.WriteFile(filepath.Join(d, "route1", "keep.txt"), []byte("mine"), 0o644) }, "route1/keep.txt"},
		{"a link in a stage file's place", func(d string) {
			os.Remove(filepath.Join(d, "stage1.onnx"))
			os.Symlink(filepath.Join(parent, "elsewhere"), filepath.Join(d, "stage1.onnx"))
		}, "stage1.onnx"},
		{"a report that is a directory", func(d string) {
			os.Remove(filepath.Join(d, outdir.ReportFile))
			os.Mkdir(filepath.Join(d, outdir.ReportFile), 0o755)
		}, outdir.ReportFile},
		{"not an onnxpart manifest", func(d string) { os.WriteFile(filepath.Join(d, ManifestFile), []byte(`{"name": "mine"}`), 0o644) }, ManifestFile},
		{"no manifest", func(d string) { os.Remove(filepath.Join(d, ManifestFile)) }, "report.html"},
		{"a manifest that lists a user's file", func(d string) {
			man, err := ReadManifest(d)
			if err != nil {
				t.Fatal(err)
			}
			man.Stages[0].DataFile = "thesis.tex"
			js, _ := man.MarshalIndent()
			os.WriteFile(filepath.Join(d, ManifestFile), js, 0o644)
			os.WriteFile(filepath.Join(d, "thesis.tex"), []byte("mine"), 0o644)
		}, "thesis.tex"},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			previousOutput(t, dir)
			c.plant(dir)
			before := testmodel.ListTree(t, parent)
			for _, force := range []bool{false, true} {
				l := prepared(t, "squeezenet1_1_small.onnx", 2, Options{Force: force})
				for _, check := range []struct {
					name string
					do   func() error
				}{{"CheckOutput", func() error { return CheckOutput(l.m, dir, Options{Force: force}) }}, {"WriteDir", func() error { return l.WriteDir(dir) }}} {
					err := check.do()
					var fe *ForeignFile
					switch {
					case !isInput(err) || !errors.As(err, &fe) || fe.File != c.foreign || fe.Dir != dir:
						t.Errorf("%s (force %v): got %v, want an input error caused by a ForeignFile naming %s", check.name, force, err, c.foreign)
					case !force && !strings.Contains(err.Error(), "already exists and holds"):
						t.Errorf("%s: got %v, want: it already exists and holds %s", check.name, err, c.foreign)
					case !strings.Contains(err.Error(), c.foreign) || strings.Contains(err.Error(), "use Options.Force"):
						t.Errorf("%s: %v", check.name, err)
					}
					if got := testmodel.ListTree(t, parent); strings.Join(got, " ") != strings.Join(before, " ") {
						t.Fatalf("%s (force %v) changed the tree: %v, was %v", check.name, force, got, before)
					}
				}
			}
		})
	}
}

// TestWriteProtectedDirs: the root, the current directory, the home directory and their
// parents are never the output, with or without --force, even when empty or holding a
// previous output; CheckOutput refuses them alike.
func TestWriteProtectedDirs(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home", "user")
	work := filepath.Join(root, "work", "project")
	os.MkdirAll(home, 0o755)
	os.MkdirAll(work, 0o755)
	previousOutput(t, filepath.Join(root, "work", "prev"))
	// The model by its absolute path: the corpus path is relative to the package.
	model, err := filepath.Abs(testmodel.Corpus(t, "squeezenet1_1_small.onnx").Path)
	if err != nil {
		t.Fatal(err)
	}
	m := testmodel.LoadPath(t, model)
	stage, err := EqualFLOPs(m.Graph, 2)
	if err != nil {
		t.Fatal(err)
	}
	layout := func(force bool) *Layout {
		l, err := NewLayout(m, &Assignment{Stage: stage}, Options{Force: force})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	t.Setenv("HOME", home)
	t.Chdir(work)
	os.Symlink(work, filepath.Join(root, "link_to_work"))
	before := testmodel.ListTree(t, root)
	for _, c := range []struct{ out, want string }{
		{".", "it is the current directory"},
		{"./", "it is the current directory"},
		{work, "it is the current directory"},
		{filepath.Join(root, "link_to_work"), "it is the current directory"},
		{"sub/..", "it is the current directory"},
		{"..", "it holds the current directory"},
		{root, "it holds the current directory"},
		{home, "it is your home directory"},
		{filepath.Join(root, "home"), "it holds your home directory"},
		{"/", "onnxpart never"},
	} {
		for _, force := range []bool{false, true} {
			l := layout(force)
			for _, err := range []error{CheckOutput(l.m, c.out, Options{Force: force}), l.WriteDir(c.out)} {
				if !isInput(err) || !strings.HasPrefix(err.Error(), "cannot write ") || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "Options.Force") {
					t.Errorf("-o %s (force %v): got %v, want %q", c.out, force, err, c.want)
				}
			}
		}
	}
	if got := testmodel.ListTree(t, root); strings.Join(got, " ") != strings.Join(before, " ") {
		t.Errorf("the tree changed: %v, was %v", got, before)
	}
	// Beside them is fine, and so is a previous output there.
	l := layout(true)
	for _, out := range []string{"out", filepath.Join(home, "out"), filepath.Join(root, "work", "prev")} {
		if err := CheckOutput(l.m, out, Options{Force: true}); err != nil {
			t.Errorf("CheckOutput -o %s --force: %v", out, err)
		}
		if err := l.WriteDir(out); err != nil {
			t.Errorf("-o %s --force: %v", out, err)
		}
	}
}

// TestCheckOutput: the checks run before planning report what WriteDir would, write
// nothing, and also find a path that cannot be created.
func TestCheckOutput(t *testing.T) {
	parent := t.TempDir()
	l := prepared(t, "squeezenet1_1_small.onnx", 2, Options{})
	os.WriteFile(filepath.Join(parent, "file"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(parent, "empty"), 0o755)
	before := testmodel.ListTree(t, parent)
	for _, c := range []struct {
		out   string
		force bool
		want  string // "" for no error
	}{
		{"new/deeper/out", false, ""},
		{"empty", true, ""},
		{"empty", false, "already exists (use --force to replace it)"},
		{"file", true, "exists and is not a directory"},
		{"file/out", false, "file is not a directory"},
		{"file/sub/out", false, "file is not a directory"},
		{"", false, "no output directory given"},
	} {
		out := c.out
		if out != "" {
			out = filepath.Join(parent, c.out)
		}
		err := CheckOutput(l.m, out, Options{Force: c.force, Names: diag.Names{"Force": "--force"}})
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("-o %s (force %v): got %v, want %q", c.out, c.force, err, c.want)
		}
	}
	if got := testmodel.ListTree(t, parent); strings.Join(got, " ") != strings.Join(before, " ") {
		t.Errorf("CheckOutput changed the tree: %v, was %v", got, before)
	}
	// A read-only parent (unless running as root, which ignores permissions).
	if os.Geteuid() != 0 {
		ro := filepath.Join(parent, "ro")
		os.Mkdir(ro, 0o555)
		defer os.Chmod(ro, 0o755)
		if err := CheckOutput(l.m, filepath.Join(ro, "a", "out"), Options{}); err == nil || !strings.Contains(err.Error(), "ro is not writable") {
			t.Errorf("read-only parent: got %v", err)
		}
	}
}

func TestWriteUnwritableLeavesNothing(t *testing.T) {
	parent := t.TempDir()
	l := prepared(t, "squeezenet1_1_small.onnx", 3, Options{})
	// The parent is a regular file: nothing can be created beneath it.
	blocker := filepath.Join(parent, "blocker")
	os.WriteFile(blocker, []byte("x"), 0o644)
	err := l.WriteDir(filepath.Join(blocker, "sub", "out"))
	if !isInput(err) || !strings.HasPrefix(err.Error(), "cannot write ") {
		t.Fatalf("got %v, want an input error: cannot write", err)
	}
	if got := listDir(t, parent); len(got) != 1 {
		t.Errorf("left behind: %v", got)
	}
	// A read-only parent (unless running as root, which ignores permissions).
	if os.Geteuid() != 0 {
		ro := filepath.Join(parent, "ro")
		os.Mkdir(ro, 0o555)
		defer os.Chmod(ro, 0o755)
		if err := l.WriteDir(filepath.Join(ro, "out")); !isInput(err) {
			t.Errorf("read-only parent: got %v", err)
		}
		if got := listDir(t, ro); len(got) != 0 {
			t.Errorf("left behind: %v", got)
		}
	}
	// Failures part-way, after each file: nothing is left, not even created parents.
	for n := 1; n <= 4; n++ {
		l.failAfterFiles = n
		err := l.WriteDir(filepath.Join(parent, "new", "deeper", "out"))
		if err == nil || !strings.Contains(err.Error(), "injected failure") {
			t.Fatalf("after %d files: %v", n, err)
		}
		if got := listDir(t, parent); len(got) != 1 {
			t.Fatalf("after %d files, left behind: %v", n, got)
		}
	}
	// A failure while replacing a previous output with --force keeps it as it was.
	dir := filepath.Join(parent, "old")
	previousOutput(t, dir)
	before := testmodel.ListTree(t, dir)
	l.opt.Force = true
	l.failAfterFiles = 2
	if err := l.WriteDir(dir); err == nil {
		t.Fatal("no error")
	}
	if got := testmodel.ListTree(t, dir); strings.Join(got, " ") != strings.Join(before, " ") {
		t.Errorf("old directory changed: %v, was %v", got, before)
	}
}

func TestWriteNeverTouchesModel(t *testing.T) {
	// A copy of a model and its external data in a directory; writing into that
	// directory, even with --force, is refused and the files stay.
	src := testmodel.Corpus(t, "resnet50_small_ext.onnx").Path
	dir := t.TempDir()
	for _, f := range []string{src, src + ".data"} {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
	}
	m := testmodel.LoadPath(t, filepath.Join(dir, filepath.Base(src)))
	stage, _ := EqualFLOPs(m.Graph, 2)
	for _, out := range []string{dir, filepath.Dir(dir)} {
		_, err := Write(m, &Assignment{Stage: stage}, out, Options{Force: true})
		if err == nil || !strings.Contains(err.Error(), "never overwrites") {
			t.Errorf("writing into %s: %v", out, err)
		}
	}
	if got := listDir(t, dir); len(got) != 2 {
		t.Errorf("model directory changed: %v", got)
	}
	// Writing beside it is fine, and the model's bytes do not change.
	before, _ := os.ReadFile(m.Path)
	if _, err := Write(m, &Assignment{Stage: stage}, filepath.Join(dir, "..", "split"), Options{}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(m.Path)
	if !bytes.Equal(before, after) {
		t.Error("the model file changed")
	}
}

// TestDeterministic: the same model and assignment give byte-identical directories, and
// the manifest holds no path of the output directory.
func TestDeterministic(t *testing.T) {
	for _, name := range []string{"bert_base_like_small.onnx", "resnet50_small_ext.onnx"} {
		l1 := prepared(t, name, 5, Options{})
		l2 := prepared(t, name, 5, Options{})
		d1, d2 := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
		if err := l1.WriteDir(d1); err != nil {
			t.Fatal(err)
		}
		if err := l2.WriteDir(d2); err != nil {
			t.Fatal(err)
		}
		files := listDir(t, d1)
		if strings.Join(files, " ") != strings.Join(listDir(t, d2), " ") {
			t.Fatalf("%s: different files", name)
		}
		for _, f := range files {
			a, _ := os.ReadFile(filepath.Join(d1, f))
			b, _ := os.ReadFile(filepath.Join(d2, f))
			if !bytes.Equal(a, b) {
				t.Errorf("%s: %s differs", name, f)
			}
		}
		js, _ := os.ReadFile(filepath.Join(d1, ManifestFile))
		if bytes.Contains(js, []byte(d1)) || bytes.Contains(js, []byte(os.TempDir())) {
			t.Errorf("%s: the manifest mentions the output directory", name)
		}
	}
}

// TestWriteModelPathRelative: the manifest records the model's path as given (path) and
// relative to the output directory, never absolute (from_manifest), whether the model was
// given by an absolute path or one relative to the current directory; ModelFile finds the
// model from there, wherever the program runs.
func TestWriteModelPathRelative(t *testing.T) {
	rel := testmodel.Corpus(t, "squeezenet1_1_small.onnx").Path
	abs, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{abs, rel} {
		m := testmodel.LoadPath(t, p)
		stage, err := EqualFLOPs(m.Graph, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, dir := range []string{filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "a", "b", "out")} {
			man, err := Write(m, &Assignment{Stage: stage}, dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			onDisk, err := ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if onDisk.Model.Path != p || man.Model.Path != p {
				t.Errorf("model %s, -o %s: manifest path %q (returned %q), want the path as given", p, dir, onDisk.Model.Path, man.Model.Path)
			}
			got := onDisk.Model.FromManifest
			if filepath.IsAbs(got) || got != man.Model.FromManifest || !strings.HasPrefix(got, "../") {
				t.Errorf("model %s, -o %s: from_manifest %q (returned %q)", p, dir, got, man.Model.FromManifest)
			}
			want, _ := os.Stat(abs)
			if fi, err := os.Stat(filepath.Join(dir, got)); err != nil || !os.SameFile(fi, want) {
				t.Errorf("model %s, -o %s: %s from the directory is not the model: %v", p, dir, got, err)
			}
			if fi, err := os.Stat(onDisk.ModelFile(dir)); err != nil || !os.SameFile(fi, want) {
				t.Errorf("ModelFile(%s) = %s: %v", dir, onDisk.ModelFile(dir), err)
			}
		}
	}
}

// TestSharedWeightsListed: a weight read by nodes of two stages is copied into both and
// listed in both stages' duplicated_weights.
func TestSharedWeightsListed(t *testing.T) {
	m := testmodel.LoadPath(t, testmodel.ControlFlowModel(t))
	// w is captured by the If (stage 0) and is a model output (last stage).
	stage := testmodel.Labels(t, m.Graph, map[string]int{"relu": 0, "sig_w2": 0, "if": 0, "square": 1, "mul_s": 1, "add_a": 1, "mul_s2": 1})
	l, err := NewLayout(m, &Assignment{Stage: stage}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, st := range l.Manifest.Stages {
		for _, w := range st.DuplicatedWeights {
			if w.Name == "w" && len(w.Stages) == 2 && w.Bytes == 24 {
				found++
			}
		}
	}
	if found != 2 {
		t.Errorf("w listed %d times: %+v", found, l.Manifest.Stages)
	}
}

// isInput: err is a *diag.Error of kind input, as every output-directory error is.
func isInput(err error) bool {
	var de *diag.Error
	return errors.As(err, &de) && de.Kind == diag.KindInput
}

// A one-stage plan holds every weight of the model: its params equal the model's, counted
// the same way (initializers, Constant-node values, weights inside subgraphs).
func TestOneStageParamsAreTheModels(t *testing.T) {
	for _, name := range []string{"bert_base_like_small.onnx", "squeezenet1_1_small.onnx", "googlenet_small.onnx"} {
		m := testmodel.LoadPath(t, testmodel.Corpus(t, name).Path)
		man, err := Write(m, &Assignment{Stage: make([]int, len(m.Graph.Nodes))}, filepath.Join(t.TempDir(), "out"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := man.Stages[0].ParamsBytes, m.Graph.ParamBytes(); got != want {
			t.Errorf("%s: one stage holds %d bytes of params, the model %d", name, got, want)
		}
	}
}

// TestOptionNames: emit's errors name its options as the caller does: a Go caller reads
// "Options.FreezeDims", the command passes its flags ("--freeze-dims").
func TestOptionNames(t *testing.T) {
	m := testmodel.Load(t, testmodel.Corpus(t, "squeezenet1_1_small.onnx"))
	stage, err := EqualFLOPs(m.Graph, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		names diag.Names
		want  string
	}{
		{nil, "Options.Batch = 4 runs each stage call on a batch, so the stage files keep a symbolic batch dim, and Options.FreezeDims fixes every dim"},
		{diag.Names{"Batch": "--batch", "FreezeDims": "--freeze-dims"}, "--batch 4 runs each stage call on a batch, so the stage files keep a symbolic batch dim, and --freeze-dims fixes every dim"},
	} {
		_, err := NewLayout(m, &Assignment{Stage: stage}, Options{Batch: 4, FreezeDims: true, Names: c.names})
		var de *diag.Error
		if !errors.As(err, &de) || de.Kind != diag.KindUsage || !strings.HasPrefix(de.Msg, c.want) || de.Subject.Kind != diag.Option {
			t.Errorf("names %v: got %v, want a usage error %q…", c.names, err, c.want)
		}
	}
}
