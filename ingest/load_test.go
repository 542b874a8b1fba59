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

// TestSqueezeNetFLOPs checks the FLOP count of the full-size SqueezeNet 1.1 against its
// published ≈0.35 GMAC (0.70 GFLOP at 2 FLOPs per MAC), within 5%.
func TestSqueezeNetFLOPs(t *testing.T) {
	p := filepath.Join(corpusDir, "squeezenet1_1.onnx")
	m, err := Load(p, Options{})
	if err != nil {
		t.Skip(err)
	}
	got := float64(m.Graph.TotalFLOPs())
	const published = 2 * 0.35e9
	if r := got / published; r < 0.95 || r > 1.05 {
		t.Fatalf("SqueezeNet 1.1: %.4g FLOPs, %.1f%% off the published %.3g", got, 100*(r-1), published)
	}
	// The convolutions carry almost all of it; check one by hand: the first Conv is
	// 3→64 channels, 3×3 kernel, stride 2, 224→111: 2·64·111·111·3·9 MACs·2 + bias.
	for _, n := range m.Graph.Nodes {
		if n.OpType == "Conv" {
			want := int64(2*64*111*111*3*9 + 64*111*111)
			if n.FLOPs != want {
				t.Fatalf("first Conv: %d FLOPs, want %d", n.FLOPs, want)
			}
			break
		}
	}
}

// TestExternalDataNotLoaded checks that a model with external weights is read without
// bringing the weights into the protobuf: initializers stay references.
func TestExternalDataNotLoaded(t *testing.T) {
	p := filepath.Join(corpusDir, "external", "resnet50_small_ext.onnx")
	m, err := Load(p, Options{})
	if err != nil {
		t.Skip(err)
	}
	if !m.ExternalData {
		t.Fatal("ExternalData is false")
	}
	var external, inline int
	for _, init := range m.proto.Graph.Initializer {
		if init.GetDataLocation() == 1 {
			external++
			if len(init.RawData) != 0 {
				t.Fatalf("%s: external initializer has raw_data in memory", init.GetName())
			}
			ref, err := m.ExternalRef(init.GetName())
			if err != nil || ref == nil || ref.Length <= 0 {
				t.Fatalf("%s: bad reference %+v %v", init.GetName(), ref, err)
			}
		} else {
			inline++
		}
	}
	if external == 0 {
		t.Fatal("no external initializers")
	}
	if m.Graph.ParamBytes() < 1_000_000 {
		t.Fatalf("parameter bytes %d: sizes of external weights not counted", m.Graph.ParamBytes())
	}
	if m.FileSize > 100_000 {
		t.Fatalf("model file is %d bytes; expected only the graph", m.FileSize)
	}
}
