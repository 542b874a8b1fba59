package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/internal/testmodel"
	"github.com/onnxpart/onnxpart/onnxpb"
)

func needORT(t testing.TB) {
	t.Helper()
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
}

func writeSplit(t *testing.T, c testmodel.Config, k int) (string, *emit.Manifest) {
	t.Helper()
	m := testmodel.Load(t, c)
	stage, err := emit.EqualFLOPs(m.Graph, k)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	man, err := emit.Write(m, &emit.Assignment{Stage: stage, Split: emit.SplitInfo{Method: "stages", RequestedStages: k}}, dir, emit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, man
}

func stageModelOf(t *testing.T, dir string, st emit.Stage) *onnxpb.ModelProto {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, st.File))
	if err != nil {
		t.Fatal(err)
	}
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(data, &mp); err != nil {
		t.Fatal(err)
	}
	return &mp
}

func ortAvailable() bool {
	_, err := ort.LibraryPath()
	return err == nil
}

func prepared(t *testing.T, name string, k int, opt emit.Options) *emit.Layout {
	t.Helper()
	m := testmodel.Load(t, testmodel.Corpus(t, name))
	stage, err := emit.EqualFLOPs(m.Graph, k)
	if err != nil {
		t.Fatal(err)
	}
	l, err := emit.NewLayout(m, &emit.Assignment{Stage: stage}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// stageFile and dataFile are the names emit gives stage i's files.
func stageFile(i int) string { return fmt.Sprintf("stage%d.onnx", i) }
func dataFile(i int) string  { return stageFile(i) + ".data" }
