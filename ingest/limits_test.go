package ingest

import (
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/onnxpb"
)

// A model with more nodes than Options.MaxNodes is refused with an *Error naming the count
// and the limit, before its graph is built; one at the limit loads.
func TestMaxNodes(t *testing.T) {
	dir := t.TempDir()
	chain := func(n int) *onnxpb.ModelProto {
		return tiny(func(m *onnxpb.ModelProto) {
			m.Graph.Node = nil
			prev := "x"
			for i := range n {
				out := "h" + string(rune('a'+i))
				if i == n-1 {
					out = "y"
				}
				m.Graph.Node = append(m.Graph.Node, node("relu"+out, "Relu", []string{prev}, []string{out}))
				prev = out
			}
		})
	}
	p := writeModel(t, dir, "chain5.onnx", chain(5))
	if _, err := Load(p, Options{MaxNodes: 5}); err != nil {
		t.Fatalf("5 nodes at a limit of 5: %v", err)
	}
	_, err := Load(p, Options{MaxNodes: 4})
	if !isInput(err) || !strings.Contains(err.Error(), "has 5 nodes, over the limit of 4 nodes") {
		t.Fatalf("5 nodes at a limit of 4: %v", err)
	}
}
