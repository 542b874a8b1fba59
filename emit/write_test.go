package emit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"onnxpart/internal/onnxpb"
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
	m := loadConfig(t, corpusModel(t, name))
	stage, err := EqualFLOPs(m.Graph, k)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Prepare(m, &Assignment{Stage: stage}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestWriteRefusesExistingDir(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("mine"), 0o644)
	l := prepared(t, "squeezenet1_1_small.onnx", 2, Options{})
	err := l.WriteDir(dir)
	var ee *ExistsError
	if !errors.As(err, &ee) {
		t.Fatalf("got %v, want ExistsError", err)
	}
	if got := listDir(t, dir); len(got) != 1 || got[0] != "keep.txt" {
		t.Errorf("existing directory changed: %v", got)
	}
	if got := listDir(t, parent); len(got) != 1 {
		t.Errorf("left behind: %v", got)
	}
	// --force replaces it whole.
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

func TestWriteUnwritableLeavesNothing(t *testing.T) {
	parent := t.TempDir()
	l := prepared(t, "squeezenet1_1_small.onnx", 3, Options{})
	// The parent is a regular file: nothing can be created beneath it.
	blocker := filepath.Join(parent, "blocker")
	os.WriteFile(blocker, []byte("x"), 0o644)
	err := l.WriteDir(filepath.Join(blocker, "sub", "out"))
	var we *WriteError
	if !errors.As(err, &we) {
		t.Fatalf("got %v, want WriteError", err)
	}
	if got := listDir(t, parent); len(got) != 1 {
		t.Errorf("left behind: %v", got)
	}
	// A read-only parent (unless running as root, which ignores permissions).
	if os.Geteuid() != 0 {
		ro := filepath.Join(parent, "ro")
		os.Mkdir(ro, 0o555)
		defer os.Chmod(ro, 0o755)
		if err := l.WriteDir(filepath.Join(ro, "out")); !errors.As(err, &we) {
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
	// A failure while replacing with --force keeps the old directory.
	dir := filepath.Join(parent, "old")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("mine"), 0o644)
	l.opt.Force = true
	l.failAfterFiles = 2
	if err := l.WriteDir(dir); err == nil {
		t.Fatal("no error")
	}
	if got := listDir(t, dir); len(got) != 1 || got[0] != "keep.txt" {
		t.Errorf("old directory changed: %v", got)
	}
}

func TestWriteNeverTouchesModel(t *testing.T) {
	// A copy of a model and its external data in a directory; writing into that
	// directory, even with --force, is refused and the files stay.
	src := corpusModel(t, "resnet50_small_ext.onnx").path
	dir := t.TempDir()
	for _, f := range []string{src, src + ".data"} {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
	}
	m := loadPath(t, filepath.Join(dir, filepath.Base(src)))
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

// TestExternalData: a source with external data gives stages with their own data files
// (relative locations, inside the directory); a size limit moves large weights out of an
// inline source; "never" inlines them. Every variant verifies bit for bit.
func TestExternalData(t *testing.T) {
	needORT(t)
	check := func(name string, l *Layout, wantFn func(Stage) bool) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "out")
		if err := l.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := Check(dir); err != nil {
			t.Fatal(err)
		}
		for _, st := range l.Manifest.Stages {
			wantData := wantFn(st)
			if (st.DataFile != "") != wantData {
				t.Errorf("%s: stage %d data file %q", name, st.Index, st.DataFile)
			}
			mp := stageModelOf(t, dir, st)
			for _, w := range mp.Graph.Initializer {
				isExt := w.GetDataLocation() == onnxpb.TensorProto_EXTERNAL
				if isExt && w.ExternalData[0].GetValue() != st.DataFile {
					t.Errorf("%s: %s at %q", name, w.GetName(), w.ExternalData[0].GetValue())
				}
				if wantData && !isExt && len(w.RawData) >= ExternalMinBytes {
					t.Errorf("%s: %d-byte weight %s kept inline", name, len(w.RawData), w.GetName())
				}
			}
		}
		rep, err := Verify(context.Background(), dir, VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Pass {
			t.Errorf("%s: %v", name, (&MismatchError{Report: rep}).Error())
		}
	}
	yes := func(Stage) bool { return true }
	no := func(Stage) bool { return false }
	check("ext source", prepared(t, "resnet50_small_ext.onnx", 3, Options{}), yes)
	check("ext source, never", prepared(t, "resnet50_small_ext.onnx", 3, Options{ExternalData: ExternalNever}), no)
	check("inline source", prepared(t, "vgg16_small.onnx", 3, Options{}), no)
	// Only the stages over the limit move their weights out.
	over := func(st Stage) bool { return st.ParamsBytes > 64<<10 }
	l := prepared(t, "vgg16_small.onnx", 3, Options{MaxInlineBytes: 64 << 10})
	n := 0
	for _, st := range l.Manifest.Stages {
		if over(st) {
			n++
		}
	}
	if n == 0 || n == len(l.Manifest.Stages) {
		t.Fatalf("want some stages over the limit and some under: %d of %d", n, len(l.Manifest.Stages))
	}
	check("inline source, limit", l, over)
	check("inline source, always", prepared(t, "vgg16_small.onnx", 3, Options{ExternalData: ExternalAlways}), yes)
	l = prepared(t, "vgg16_small.onnx", 2, Options{MaxInlineBytes: 64 << 10, ExternalData: ExternalNever})
	if err := l.WriteDir(filepath.Join(t.TempDir(), "out")); err == nil || !strings.Contains(err.Error(), "external data is disabled") {
		t.Errorf("over the limit with external data disabled: %v", err)
	}
}

// TestSharedWeightsListed: a weight read by nodes of two stages is copied into both and
// listed in both stages' duplicated_weights.
func TestSharedWeightsListed(t *testing.T) {
	m := loadPath(t, controlFlowModel(t))
	// w is captured by the If (stage 0) and is a model output (last stage).
	stage := labels(t, m.Graph, map[string]int{"relu": 0, "sig_w2": 0, "if": 0, "square": 1, "mul_s": 1, "add_a": 1, "mul_s2": 1})
	l, err := Prepare(m, &Assignment{Stage: stage}, Options{})
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
