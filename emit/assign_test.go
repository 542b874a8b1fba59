package emit

import (
	"errors"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/testmodel"
)

func TestCutAfter(t *testing.T) {
	c := testmodel.Corpus(t, "resnet50_small.onnx")
	g := testmodel.Load(t, c).Graph
	order := g.TopoOrder()
	// The stage boundary falls right after each named tensor's producer.
	t1 := g.Nodes[order[10]].Outputs[0]
	t2 := g.Nodes[order[60]].Outputs[0]
	stage, err := CutAfter(g, []string{g.Tensors[t2].Name, g.Tensors[t1].Name}) // any order
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range order {
		want := 0
		if i > 10 {
			want = 1
		}
		if i > 60 {
			want = 2
		}
		if stage[v] != want {
			t.Fatalf("node at position %d in stage %d, want %d", i, stage[v], want)
		}
	}
	last := g.Nodes[order[len(order)-1]].Outputs[0]
	for _, tc := range []struct {
		cuts []string
		want string
	}{
		{[]string{"/layer1/layer1.0/conv1/Conv_outptu_0"}, `did you mean "/layer1/layer1.0/conv1/Conv_output_0"`},
		{[]string{"nope"}, "no tensor of that name"},
		{[]string{"input"}, "is a model input"},
		{[]string{"fc.weight"}, "is a model initializer"},
		{[]string{g.Tensors[t1].Name, g.Tensors[t1].Name}, "given twice"},
		{[]string{g.Tensors[last].Name}, "is the last node"},
	} {
		_, err := CutAfter(g, tc.cuts)
		var de *diag.Error
		if !errors.As(err, &de) || de.Kind != diag.KindUsage || de.Subject.Kind != diag.Tensor || de.Subject.Name != tc.cuts[len(tc.cuts)-1] || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CutAfter(%q) = %v, want a usage error about the tensor with %q", tc.cuts, err, tc.want)
		}
	}
}

func TestEqualFLOPs(t *testing.T) {
	for _, c := range testmodel.Configs(t) {
		g := testmodel.Load(t, c).Graph
		total := g.TotalFLOPs()
		for _, k := range []int{1, 2, 3, 5, 8} {
			stage, err := EqualFLOPs(g, k)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.CheckStageOrder(stage); err != nil {
				t.Fatalf("%s k=%d: %v", c.Name, k, err)
			}
			flops := make([]int64, k)
			nonStatic := make([]int, k)
			for v, s := range stage {
				flops[s] += g.Nodes[v].FLOPs
				if !g.Nodes[v].Static {
					nonStatic[s]++
				}
			}
			var worst int64
			for s := 0; s < k; s++ {
				if nonStatic[s] == 0 {
					t.Errorf("%s k=%d: stage %d has no node of its own", c.Name, k, s)
				}
				worst = max(worst, flops[s])
			}
			// The largest part is within the ideal share plus the largest node.
			var big int64
			for v := range g.Nodes {
				big = max(big, g.Nodes[v].FLOPs)
			}
			if total > 0 && float64(worst) > float64(total)/float64(k)+float64(big) {
				t.Errorf("%s k=%d: largest part %d FLOPs, ideal %d, largest node %d", c.Name, k, worst, total/int64(k), big)
			}
		}
	}
	g := testmodel.Load(t, testmodel.Corpus(t, "vgg16_small.onnx")).Graph
	var se *StageCount
	if _, err := EqualFLOPs(g, len(g.Nodes)+1); !errors.As(err, &se) || se.Stages != len(g.Nodes)+1 || se.Max == 0 || diag.KindOf(err) != diag.KindUsage {
		t.Errorf("k > nodes: got %v", err)
	}
	if _, err := EqualFLOPs(g, 0); !errors.As(err, &se) || diag.KindOf(err) != diag.KindUsage {
		t.Errorf("k = 0: got %v", err)
	}
}

func TestReadAssignment(t *testing.T) {
	m := testmodel.LoadPath(t, testmodel.ControlFlowModel(t))
	g := m.Graph
	stage, err := ReadAssignment(strings.NewReader(`{"relu": 0, "if": 0, "square": 1, "mul_s": 1, "add_a": 2, "mul_s2": 2}`), g)
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := g.NodeByName("sig_w2")
	mul, _ := g.NodeByName("mul_s")
	if stage[sig] != stage[mul] {
		t.Errorf("unlisted weight-only node got stage %d, want its first consumer's %d", stage[sig], stage[mul])
	}
	for _, tc := range []struct{ in, want string }{
		{`[1, 2]`, "want a JSON object"},
		{`{"relu": 0`, "assignment:"},
		{`{"relu": "x"}`, "must be a number"},
		{`{"relu": -1}`, "not a non-negative integer"},
		{`{"relu": 1.5}`, "not a non-negative integer"},
		{`{"relu": 0, "relu": 1}`, "listed twice"},
		{`{"relau": 0}`, `did you mean "relu"`},
		{`{"relu": 0, "if": 0}`, "nodes have no stage"},
		{`{"relu": 0} {}`, "trailing data"},
	} {
		_, err := ReadAssignment(strings.NewReader(tc.in), g)
		if diag.KindOf(err) != diag.KindInput || !errors.As(err, new(*diag.Error)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadAssignment(%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
	// Unnamed nodes are addressed as op#index; names shared by several nodes are refused.
	b := graph.NewBuilder("g")
	b.AddInput("x")
	b.AddNode("", "Relu", "", []string{"x"}, []string{"a"}, nil, nil)
	b.AddNode("dup", "Neg", "", []string{"a"}, []string{"b"}, nil, nil)
	b.AddNode("dup", "Neg", "", []string{"b"}, []string{"c"}, nil, nil)
	b.AddOutput("c")
	g2, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAssignment(strings.NewReader(`{"Relu#0": 0, "dup": 1}`), g2); err == nil || !strings.Contains(err.Error(), "several nodes are named") {
		t.Errorf("duplicate names: got %v", err)
	}
}
