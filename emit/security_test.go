package emit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/internal/testmodel"
)

// TestWriteNeverIntoModelDir: the output directory may not be the model's directory or
// hold it, however it is spelt (relative, with dot segments, through a symbolic link), not
// even with --force; the model's files are untouched.
func TestWriteNeverIntoModelDir(t *testing.T) {
	src := testmodel.Corpus(t, "resnet50_small_ext.onnx").Path
	root := t.TempDir()
	dir := filepath.Join(root, "models", "m")
	os.MkdirAll(dir, 0o755)
	for _, f := range []string{src, src + ".data"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
	}
	os.Symlink(dir, filepath.Join(root, "link_to_model_dir"))
	os.Symlink(filepath.Join(root, "models"), filepath.Join(root, "link_to_parent"))
	m := testmodel.LoadPath(t, filepath.Join(dir, filepath.Base(src)))
	stage, err := EqualFLOPs(m.Graph, 2)
	if err != nil {
		t.Fatal(err)
	}
	before := testmodel.ListTree(t, root)
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{
		dir, dir + "/", ".", "./", "..", "../..", filepath.Join(dir, "sub", ".."), filepath.Dir(dir), root,
		filepath.Join(root, "link_to_model_dir"), filepath.Join(root, "link_to_parent"),
		filepath.Join(root, "link_to_parent", "m"), m.Path,
	} {
		_, err := Write(m, &Assignment{Stage: stage}, out, Options{Force: true})
		if err == nil || !strings.Contains(err.Error(), "never overwrites") {
			t.Errorf("-o %s --force: %v", out, err)
		}
	}
	if got := testmodel.ListTree(t, root); strings.Join(got, " ") != strings.Join(before, " ") {
		t.Errorf("the tree changed: %v, was %v", got, before)
	}
}

// TestWriteCopiesWeightsThroughCheckedResolution: emit copies external weights through
// ingest's checked resolution at write time, not through a path remembered at load time:
// a data file replaced by a link leading outside, or truncated, after Load makes Write fail
// with nothing written, and the outside file is never copied.
func TestWriteCopiesWeightsThroughCheckedResolution(t *testing.T) {
	src := testmodel.Corpus(t, "resnet50_small_ext.onnx").Path
	data, err := os.ReadFile(src + ".data")
	if err != nil {
		t.Fatal(err)
	}
	for _, tamper := range []string{"link outside", "truncated"} {
		t.Run(tamper, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "m")
			os.Mkdir(dir, 0o755)
			b, _ := os.ReadFile(src)
			os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o644)
			dataPath := filepath.Join(dir, filepath.Base(src)+".data")
			os.WriteFile(dataPath, data, 0o644)
			m := testmodel.LoadPath(t, filepath.Join(dir, filepath.Base(src)))
			stage, _ := EqualFLOPs(m.Graph, 3)
			l, err := NewLayout(m, &Assignment{Stage: stage}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			switch tamper {
			case "link outside":
				secret := filepath.Join(root, "secret.data")
				os.WriteFile(secret, data, 0o644) // same size: only the location check can tell
				os.Remove(dataPath)
				if err := os.Symlink(secret, dataPath); err != nil {
					t.Fatal(err)
				}
			case "truncated":
				os.Truncate(dataPath, int64(len(data)/2))
			}
			before := testmodel.ListTree(t, root)
			out := filepath.Join(root, "out")
			err = l.WriteDir(out)
			if err == nil {
				t.Fatal("written")
			}
			want := map[string]string{"link outside": "outside the model's directory", "truncated": "too short"}[tamper]
			if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %q, want one line mentioning %q", err, want)
			}
			if got := testmodel.ListTree(t, root); strings.Join(got, " ") != strings.Join(before, " ") {
				t.Errorf("left behind: %v", got)
			}
		})
	}
}
