package ingest

import (
	"testing"

	"github.com/onnxpart/onnxpart/internal/ops"
)

// TestRegistryShapes walks the op registry: every shape rule an entry names is bound to a
// function here, every bound rule is named by some entry, and every op with a shape rule is
// exercised by at least one of the cases that compare inference with ONNX Runtime (the
// op's "test row"), unless listed below with the reason.
func TestRegistryShapes(t *testing.T) {
	untested := map[string]string{
		"ai.onnx.ml:Binarizer":                       "an ai.onnx.ml op; the harness builds default-domain models",
		"com.microsoft:BiasAdd":                      "ORT has a CUDA kernel only",
		"com.microsoft:SparseAttention":              "ORT's CPU kernel needs past and present bound to one buffer (IO binding), which the comparison does not do",
		"com.microsoft:GemmFastGelu":                 "ORT has CUDA and ROCm kernels only",
		"com.microsoft:BiasSplitGelu":                "ORT has a CUDA kernel only",
		"com.microsoft:PackedMultiHeadAttention":     "ORT has a CUDA kernel only",
		"com.microsoft:GatedRelativePositionBias":    "ORT has a CUDA kernel only",
		"com.microsoft:NhwcConv":                     "ORT has a CUDA kernel only",
		"com.microsoft:LayerNormalization":           "ORT defines it in the default domain only",
		"com.microsoft:SimplifiedLayerNormalization": "ORT defines it in the default domain only",
	}
	used := map[ops.ShapeRule]bool{}
	for _, e := range ops.All() {
		if e.Shape == "" {
			continue
		}
		used[e.Shape] = true
		if shapeRules[e.Shape] == nil {
			t.Errorf("%s:%s names shape rule %q, which ingest does not have", e.Domain, e.Name, e.Shape)
		}
	}
	for r := range shapeRules {
		if !used[r] {
			t.Errorf("shape rule %q is named by no registry entry", r)
		}
	}
	covered := map[string]bool{}
	for _, group := range [][]ocCase{ocElementwise(), ocLinear(), ocConvPool(), ocNorm(), ocMovement(),
		ocIndexing(), ocGenerators(), ocReduce(), ocMisc(), ocRecurrent(), ocQuant(), ocControl(), ocFolding(),
		ocExtra(), ocContrib()} {
		for _, c := range group {
			m := newOCModel(c.opset)
			c.build(m)
			for _, n := range m.g.Node {
				d := n.GetDomain()
				if d == "ai.onnx" {
					d = ""
				}
				covered[d+":"+n.GetOpType()] = true
			}
		}
	}
	for _, e := range ops.All() {
		k := e.Domain + ":" + e.Name
		if e.Shape == "" || covered[k] {
			continue
		}
		if _, ok := untested[k]; !ok {
			t.Errorf("%s has a shape rule but no case compares it with ONNX Runtime", k)
		}
	}
	for k := range untested {
		if covered[k] {
			t.Errorf("%s is listed as untested but a case covers it: drop it from the list", k)
		}
	}
}
