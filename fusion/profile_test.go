package fusion_test

import (
	"context"
	"path/filepath"
	"testing"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/profile"
)

// TestProfileKernelTime plugs profile's roofline into Grouping.Times: on the corpus, pricing
// groups as fused kernels (intermediates neither written nor read, one launch per kernel)
// must cost less in total than pricing every original node on its own.
func TestProfileKernelTime(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "shared", "models", "*.onnx"))
	if len(files) == 0 {
		t.Skip("model corpus not found")
	}
	cl, err := hw.Resolve(context.Background(), "t4", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := profile.NewCostModel(cl, profile.CostOptions{})
	rs, err := fusion.Builtin("tensorrt")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if b := filepath.Base(f); b != "bert_base_like_small.onnx" && b != "resnet50_small.onnx" && b != "efficientnet_b0_small.onnx" {
			continue
		}
		m, err := ingest.Load(f, ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := fusion.Coarsen(m.Graph, rs)
		if err != nil {
			t.Fatal(err)
		}
		times := c.Times(func(_ int, members []int, k *graph.Node) float64 {
			return cm.KernelTime(c.Orig, members, k, 0)
		}, nil)
		var fused, unfused float64
		for _, x := range times {
			fused += x
		}
		for v := range m.Graph.Nodes {
			unfused += cm.NodeTime(m.Graph, v, 0)
		}
		if !(fused > 0 && fused < unfused) {
			t.Errorf("%s: fused kernels %.3g s, unfused nodes %.3g s", filepath.Base(f), fused, unfused)
		}
		t.Logf("%s on a T4: %.1f µs as %d fused kernels, %.1f µs as %d nodes", filepath.Base(f), fused*1e6, len(times), unfused*1e6, len(m.Graph.Nodes))
	}
}
