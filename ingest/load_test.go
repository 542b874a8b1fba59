package ingest

import (
	"os"
	"path/filepath"
	"testing"
)

// corpusDir is the shared model corpus (real architectures, small weights).
var corpusDir = filepath.Join("..", "..", "shared", "models")

// corpus lists every .onnx model in the shared corpus, skipping the test when it is absent.
func corpus(t testing.TB) []string {
	t.Helper()
	var files []string
	filepath.WalkDir(corpusDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".onnx" {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Skip("model corpus not found at " + corpusDir)
	}
	return files
}

// dimsFor returns the --dim bindings a corpus model needs to be fully static.
func dimsFor(path string) map[string]int64 {
	if filepath.Base(path) == "mobilenet_v2_small_dynbatch.onnx" {
		return map[string]int64{"batch": 4}
	}
	return nil
}

func TestCorpusEveryTensorShaped(t *testing.T) {
	for _, p := range corpus(t) {
		t.Run(filepath.Base(p), func(t *testing.T) {
			m, err := Load(p, Options{Dims: dimsFor(p)})
			if err != nil {
				t.Fatal(err)
			}
			g := m.Graph
			unknown := 0
			for _, tn := range g.Tensors {
				if !tn.Shape.Known() || tn.DType.Bits() == 0 || tn.Bytes < 0 {
					unknown++
					if unknown <= 5 {
						prod := "-"
						if tn.Producer >= 0 {
							prod = g.Nodes[tn.Producer].OpType
						}
						t.Errorf("tensor %q (from %s) has dtype %v shape %v", tn.Name, prod, tn.DType, tn.Shape)
					}
				}
			}
			if len(m.Unsupported) > 0 {
				t.Errorf("unsupported ops: %v", m.Unsupported)
			}
			for _, w := range m.Warnings {
				t.Errorf("warning: %s", w)
			}
			t.Logf("%d nodes, %d tensors, %.3f GFLOPs, %d param bytes", len(g.Nodes), len(g.Tensors), float64(g.TotalFLOPs())/1e9, g.ParamBytes())
		})
	}
}
