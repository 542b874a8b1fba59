package fusion

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/graph"
)

// TestCorpusTargets checks issue 5's targets: the BERT-like model at opset 14 loses at
// least 60% of its nodes with ort-cuda, and no Relu of ResNet-50 stays alone after its Conv.
func TestCorpusTargets(t *testing.T) {
	files := corpus(t)
	find := func(name string) string {
		for _, f := range files {
			if filepath.Base(f) == name {
				return f
			}
		}
		t.Fatalf("%s missing from the corpus", name)
		return ""
	}
	g := loadModel(t, find("bert_base_like_small.onnx"))
	c := mustCoarsen(t, g, mustBuiltin(t, "ort-cuda"))
	if red := 1 - float64(len(c.Groups))/float64(len(g.Nodes)); red < 0.60 {
		t.Errorf("bert_base_like_small, ort-cuda: %d -> %d nodes, %.1f%% fewer, want >= 60%%", len(g.Nodes), len(c.Groups), 100*red)
	}
	// Every LayerNorm of the opset-14 export and every attention core is one group.
	counts := map[string]int{}
	for _, r := range c.Rule {
		counts[r]++
	}
	if ln := counts["layernorm"] + counts["skip-layernorm"] + counts["bias-skip-layernorm"]; ln != 25 {
		t.Errorf("bert: %d LayerNorm groups, want 25 (%v)", ln, counts)
	}
	if at := counts["attention-core"] + counts["attention-core-prescaled"]; at != 12 {
		t.Errorf("bert: %d attention cores, want 12 (%v)", at, counts)
	}
	for _, model := range []string{"resnet50_small.onnx", "resnet50_small_fp16.onnx"} {
		g := loadModel(t, find(model))
		for _, set := range []string{"ort-cpu", "ort-cuda", "tensorrt", "generic"} {
			c := mustCoarsen(t, g, mustBuiltin(t, set))
			for v := range g.Nodes {
				n := &g.Nodes[v]
				if n.OpType != "Relu" {
					continue
				}
				p := g.Tensors[n.Inputs[0]].Producer
				if p >= 0 && g.Nodes[p].OpType == "Conv" && c.GroupOf[p] != c.GroupOf[v] {
					t.Errorf("%s, %s: %s is not fused with %s", model, set, n.Label(), g.Nodes[p].Label())
				}
				if len(c.Groups[c.GroupOf[v]]) == 1 {
					t.Errorf("%s, %s: %s stands alone", model, set, n.Label())
				}
			}
		}
	}
}

// TestCorpusTable prints nodes before/after per corpus model and rule set (make
// bench-fusion; the benchmarks give the times), and checks that coarsening is deterministic and that none is the identity.
func TestCorpusTable(t *testing.T) {
	files := corpus(t)
	sets := BuiltinNames()
	var b strings.Builder
	fmt.Fprintf(&b, "\n| model | nodes |")
	for _, s := range sets {
		if s != "none" {
			fmt.Fprintf(&b, " %s |", s)
		}
	}
	fmt.Fprintf(&b, "\n| --- | ---: |%s\n", strings.Repeat(" ---: |", len(sets)-1))
	for _, f := range files {
		g := loadModel(t, f)
		fmt.Fprintf(&b, "| %s | %d |", strings.TrimSuffix(filepath.Base(f), ".onnx"), len(g.Nodes))
		for _, s := range sets {
			rs := mustBuiltin(t, s)
			c := mustCoarsen(t, g, rs)
			again := mustCoarsen(t, g, rs)
			if !reflect.DeepEqual(c.Groups, again.Groups) || !reflect.DeepEqual(c.Rule, again.Rule) {
				t.Errorf("%s, %s: two runs differ", filepath.Base(f), s)
			}
			if s == "none" {
				if len(c.Groups) != len(g.Nodes) {
					t.Errorf("%s: none gives %d groups for %d nodes", filepath.Base(f), len(c.Groups), len(g.Nodes))
				}
				continue
			}
			fmt.Fprintf(&b, " %d (−%.0f%%) |", len(c.Groups), 100*(1-float64(len(c.Groups))/float64(len(g.Nodes))))
		}
		b.WriteString("\n")
	}
	t.Log(b.String())
}

// transformerStack builds a BERT-like encoder of the given depth with gb: decomposed
// LayerNorms, attention cores fed by one shared mask, GELU feed-forward blocks, residuals.
func transformerStack(tb testing.TB, layers int) *graph.Graph {
	x := &gb{t: tb, b: graph.NewBuilder(fmt.Sprintf("stack%d", layers)), bytes: map[string]int64{}, vals: map[string][]int64{}}
	c := func() string { return x.constant() }
	w := func() string { return x.weight(fmt.Sprintf("w%d", x.n)) }
	ln := func(in string) string {
		m := x.op("ReduceMean", in)
		d := x.op("Sub", in, m)
		v := x.op("ReduceMean", x.op("Pow", d, c()))
		s := x.op("Sqrt", x.op("Add", v, c()))
		return x.op("Add", x.op("Mul", x.op("Div", d, s), w()), w())
	}
	lin := func(in string) string { return x.op("Add", x.op("MatMul", in, w()), w()) }
	mask := x.op("Mul", x.op("Cast", x.input("mask")), c())
	h := x.op("Add", x.op("Gather", w(), x.input("ids")), w())
	for l := 0; l < layers; l++ {
		qkv := lin(h)
		q := x.op("Transpose", x.op("Reshape", x.op("Slice", qkv, c(), c()), c()))
		k := x.op("Transpose", x.op("Reshape", x.op("Slice", qkv, c(), c()), c()))
		v := x.op("Transpose", x.op("Reshape", x.op("Slice", qkv, c(), c()), c()))
		s := x.op("Mul", x.op("MatMul", x.op("Div", q, c()), k), c())
		a := x.op("MatMul", x.op("Softmax", x.op("Add", s, mask)), v)
		o := lin(x.op("Reshape", x.op("Transpose", a), c()))
		h = ln(x.op("Add", h, o))
		f := lin(h)
		e := x.op("Add", x.op("Erf", x.op("Div", f, c())), c())
		g := x.op("Mul", x.op("Mul", f, e), c())
		h = ln(x.op("Add", h, lin(g)))
	}
	return x.build(h)
}

// TestLargeGraph coarsens a 10k-node encoder: the cycle checks must stay local (a bounded
// number of vertices visited per merge), not O(n) per merge.
func TestLargeGraph(t *testing.T) {
	layers := 150
	if testing.Short() {
		layers = 40
	}
	g := transformerStack(t, layers)
	start := time.Now()
	c := mustCoarsen(t, g, mustBuiltin(t, "ort-cuda"))
	el := time.Since(start)
	perMerge := float64(c.stats.searched) / float64(c.stats.merges)
	t.Logf("%d nodes -> %d groups in %v; %d merges, %.1f vertices searched per merge", len(g.Nodes), len(c.Groups), el, c.stats.merges, perMerge)
	if perMerge > 20 {
		t.Errorf("cycle checks visit %.1f vertices per merge: not local", perMerge)
	}
	if red := 1 - float64(len(c.Groups))/float64(len(g.Nodes)); red < 0.6 {
		t.Errorf("only %.0f%% fewer nodes", 100*red)
	}
}

func BenchmarkCoarsen(b *testing.B) {
	cases := map[string]*graph.Graph{"stack150": transformerStack(b, 150)}
	for _, f := range corpusOrNil() {
		if n := filepath.Base(f); n == "bert_base_like_small.onnx" || n == "randwire_ws_small_small.onnx" {
			cases[strings.TrimSuffix(n, ".onnx")] = loadModel(b, f)
		}
	}
	for _, name := range []string{"bert_base_like_small", "randwire_ws_small_small", "stack150"} {
		g := cases[name]
		if g == nil {
			continue
		}
		for _, set := range []string{"ort-cuda", "tensorrt", "generic"} {
			rs := mustBuiltin(b, set)
			b.Run(fmt.Sprintf("%s/%s/%dnodes", name, set, len(g.Nodes)), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := Coarsen(g, rs); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func corpusOrNil() []string {
	files, _ := filepath.Glob(filepath.Join("..", "..", "shared", "models", "*.onnx"))
	return files
}
