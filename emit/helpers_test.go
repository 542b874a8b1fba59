package emit

import (
	"path/filepath"
	"testing"

	"github.com/onnxpart/onnxpart/internal/testmodel"
)

func writeSplit(t *testing.T, c testmodel.Config, k int) (string, *Manifest) {
	t.Helper()
	m := testmodel.Load(t, c)
	stage, err := EqualFLOPs(m.Graph, k)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	man, err := Write(m, &Assignment{Stage: stage, Split: SplitInfo{Method: "stages", RequestedStages: k}}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, man
}
