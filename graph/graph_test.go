package graph

import (
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph/dag"
)

// chain builds x → a → b → c → y plus a side branch a → d → c, with a weight w read by b.
func diamond(t *testing.T) *Graph {
	t.Helper()
	b := NewBuilder("diamond")
	b.AddInput("x")
	b.AddInitializer("w")
	b.AddNode("a", "Relu", "", []string{"x"}, []string{"ta"}, nil, nil)
	b.AddNode("b", "Add", "", []string{"ta", "w"}, []string{"tb"}, nil, nil)
	b.AddNode("d", "Neg", "", []string{"ta"}, []string{"td"}, nil, nil)
	b.AddNode("c", "Add", "", []string{"tb", "td"}, []string{"y"}, nil, nil)
	b.AddOutput("y")
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestBuild(t *testing.T) {
	g := diamond(t)
	if got := g.TopoOrder(); !reflect.DeepEqual(got, []int{0, 1, 2, 3}) {
		t.Errorf("topological order %v keeps model order", got)
	}
	ta, _ := g.TensorByName("ta")
	if c := g.Tensors[ta].Consumers; !reflect.DeepEqual(c, []int{1, 2}) {
		t.Errorf("consumers of ta: %v", c)
	}
	if p := g.Preds(3); !reflect.DeepEqual(p, []int{1, 2}) {
		t.Errorf("preds of c: %v", p)
	}
	if s := g.Succs(0); !reflect.DeepEqual(s, []int{1, 2}) {
		t.Errorf("succs of a: %v", s)
	}
	w, _ := g.TensorByName("w")
	if g.Tensors[w].Kind != Initializer || g.Tensors[w].Producer != -1 {
		t.Errorf("weight: %+v", g.Tensors[w])
	}
	if g.NumEdges() != 4 {
		t.Errorf("edges: %d", g.NumEdges())
	}
	if a := g.Ancestors(3); !reflect.DeepEqual(a, []int{0, 1, 2}) {
		t.Errorf("ancestors of c: %v", a)
	}
	if d := g.Descendants(1); !reflect.DeepEqual(d, []int{3}) {
		t.Errorf("descendants of b: %v", d)
	}
}

func TestBuildErrors(t *testing.T) {
	cases := []struct {
		name  string
		build func(b *Builder)
		want  []string
	}{
		{"produced twice", func(b *Builder) {
			b.AddInput("x")
			b.AddNode("p1", "Relu", "", []string{"x"}, []string{"t"}, nil, nil)
			b.AddNode("p2", "Relu", "", []string{"x"}, []string{"t"}, nil, nil)
		}, []string{`"t"`, "produced twice", "p1", "p2"}},
		{"input produced", func(b *Builder) {
			b.AddInput("x")
			b.AddNode("p", "Relu", "", []string{"x"}, []string{"x"}, nil, nil)
		}, []string{`"x"`, "graph input"}},
		{"dangling", func(b *Builder) {
			b.AddNode("p", "Relu", "", []string{"ghost"}, []string{"t"}, nil, nil)
		}, []string{"p", `"ghost"`, "no node produces"}},
		{"unproduced output", func(b *Builder) {
			b.AddInput("x")
			b.AddNode("p", "Relu", "", []string{"x"}, []string{"t"}, nil, nil)
			b.AddOutput("z")
		}, []string{`"z"`, "not produced"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder("g")
			tc.build(b)
			_, err := b.Build()
			var de *diag.Error
			if !errors.As(err, &de) || de.Kind != diag.KindInput {
				t.Fatalf("want an input *diag.Error, got %T %v", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

func TestCycleNamesItsNodes(t *testing.T) {
	b := NewBuilder("g")
	b.AddInput("x")
	b.AddNode("head", "Relu", "", []string{"x"}, []string{"h"}, nil, nil)
	b.AddNode("n1", "Add", "", []string{"h", "t3"}, []string{"t1"}, nil, nil)
	b.AddNode("n2", "Relu", "", []string{"t1"}, []string{"t2"}, nil, nil)
	b.AddNode("n3", "Relu", "", []string{"t2"}, []string{"t3"}, nil, nil)
	_, err := b.Build()
	var ce *CycleError
	var de *diag.Error
	if !errors.As(err, &ce) || !errors.As(err, &de) || de.Kind != diag.KindInput || de.Subject != (diag.Subject{Kind: diag.Node, Name: "n1"}) {
		t.Fatalf("want an input *diag.Error about n1 wrapping a *CycleError, got %v", err)
	}
	if diag.ExitCode(ce) != 1 {
		t.Errorf("a bare CycleError exits with %d, want 1", diag.ExitCode(ce))
	}
	if !reflect.DeepEqual(ce.Nodes, []string{"n1", "n2", "n3"}) {
		t.Errorf("cycle %v", ce.Nodes)
	}
	if !strings.Contains(err.Error(), "n1 -> n2 -> n3 -> n1") {
		t.Errorf("message %q", err)
	}
}

func TestCapturesAreDependencies(t *testing.T) {
	b := NewBuilder("g")
	b.AddInput("x")
	b.AddNode("p", "Relu", "", []string{"x"}, []string{"outer"}, nil, nil)
	b.AddNode("if", "If", "", []string{"x"}, []string{"y"}, []string{"outer", "outer"}, nil)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if p := g.Preds(1); !reflect.DeepEqual(p, []int{0}) {
		t.Errorf("the captured tensor's producer is a predecessor: %v", p)
	}
	if len(g.Nodes[1].Captures) != 1 {
		t.Errorf("captures deduplicated: %v", g.Nodes[1].Captures)
	}
}

// randomDAG builds a DAG of n nodes with edges from lower to higher index, listed in a
// shuffled model order so that TopoOrder has work to do.
func randomDAG(t testing.TB, rng *rand.Rand, n int, p float64) *Graph {
	t.Helper()
	perm := rng.Perm(n) // model position → logical index
	b := NewBuilder("random")
	b.AddInput("in")
	for _, v := range perm {
		ins := []string{"in"}
		for u := 0; u < v; u++ {
			if rng.Float64() < p {
				ins = append(ins, name(u))
			}
		}
		b.AddNode(name(v), "Op", "", ins, []string{name(v)}, nil, nil)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func name(v int) string {
	return "t" + string(rune('A'+v%26)) + string(rune('a'+v/26%26)) + string(rune('0'+v/676))
}

func TestOrdersOnRandomDAGs(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.Intn(60)
		g := randomDAG(t, rng, n, 0.15)
		topo := g.TopoOrder()
		if !g.IsTopological(topo) {
			t.Fatalf("trial %d: TopoOrder is not topological", trial)
		}
		prio := make([]float64, n)
		for i := range prio {
			prio[i] = rng.Float64()
		}
		k := g.KahnOrder(prio)
		if !g.IsTopological(k) {
			t.Fatalf("trial %d: KahnOrder is not topological", trial)
		}
		// Kahn with priorities: each chosen node has the smallest priority among the nodes
		// ready at that point.
		placed := make([]bool, n)
		for _, v := range k {
			for u := 0; u < n; u++ {
				if placed[u] || u == v {
					continue
				}
				ready := true
				for _, p := range g.Preds(u) {
					if !placed[p] {
						ready = false
					}
				}
				if ready && prio[u] < prio[v] {
					t.Fatalf("trial %d: %d chosen while %d (priority %g < %g) was ready", trial, v, u, prio[u], prio[v])
				}
			}
			placed[v] = true
		}
		// Reachability agrees with a BFS.
		r := g.Reachability()
		for u := 0; u < n; u++ {
			desc := map[int]bool{u: true}
			for _, d := range g.Descendants(u) {
				desc[d] = true
			}
			for v := 0; v < n; v++ {
				if r.Reaches(u, v) != desc[v] {
					t.Fatalf("trial %d: Reaches(%d,%d)=%v, BFS %v", trial, u, v, r.Reaches(u, v), desc[v])
				}
			}
			if r.Descendants(u) != len(desc) {
				t.Fatalf("trial %d: Descendants(%d) = %d, want %d", trial, u, r.Descendants(u), len(desc))
			}
		}
		if g.IsTopological(append(append([]int{}, topo[1:]...), topo[0])) && n > 1 && len(g.Succs(topo[0])) > 0 {
			t.Fatalf("trial %d: a rotated order with an edge out of the first node passed", trial)
		}
	}
}

func TestStageAssignments(t *testing.T) {
	g := diamond(t) // a=0, b=1, d=2, c=3
	if err := g.CheckStageOrder([]int{0, 0, 1, 1}); err != nil {
		t.Errorf("valid pipeline refused: %v", err)
	}
	err := g.CheckStageOrder([]int{1, 0, 1, 1})
	var de *diag.Error
	if !errors.As(err, &de) || de.Kind != diag.KindInput || de.Subject != (diag.Subject{Kind: diag.Tensor, Name: "ta"}) ||
		!strings.Contains(err.Error(), "from stage 1 (node a") || !strings.Contains(err.Error(), "to stage 0") {
		t.Errorf("backward flow: %v", err)
	}
	// Labels out of pipeline order are renumbered by OrderStages.
	order, err := g.OrderStages([]int{5, 2, 2, 7})
	if err != nil {
		t.Fatal(err)
	}
	pos := map[int]int{}
	for i, s := range order {
		pos[s] = i
	}
	if !(pos[5] < pos[2] && pos[2] < pos[7]) {
		t.Errorf("stage order %v", order)
	}
	// b and d in one stage, a and c in another: a cycle of stages, closed by ta and tb/td.
	_, err = g.OrderStages([]int{0, 1, 1, 0})
	var ce *dag.CycleError
	if !errors.As(err, &ce) || diag.KindOf(err) != diag.KindInput || !errors.As(err, &de) || de.Subject.Kind != diag.Stage {
		t.Fatalf("cycle not found: %v", err)
	}
	if len(ce.Nodes) != 2 {
		t.Fatalf("cycle %+v", ce)
	}
	if msg := err.Error(); !strings.Contains(msg, `"ta"`) || !(strings.Contains(msg, `"tb"`) || strings.Contains(msg, `"td"`)) {
		t.Errorf("tensors closing the cycle: %v", msg)
	}
}

func TestShapesAndSizes(t *testing.T) {
	cases := []struct {
		dt    DType
		shape Shape
		bytes int64
	}{
		{Float, ShapeOf(2, 3), 24},
		{Float16, ShapeOf(5), 10},
		{Int4, ShapeOf(3), 2}, // packed, rounded up
		{Uint2, ShapeOf(5), 2},
		{Bool, Shape{}, 1},
		{String, ShapeOf(4), -1},
		{Float, Shape{Symbolic("batch"), Static(3)}, -1},
		{Float, nil, -1},
		{Double, ShapeOf(0, 7), 0},
	}
	for _, c := range cases {
		got, err := ByteSize(c.dt, c.shape)
		if err != nil || got != c.bytes {
			t.Errorf("ByteSize(%v, %v) = %d, %v; want %d", c.dt, c.shape, got, err, c.bytes)
		}
	}
	if _, err := ByteSize(Float, ShapeOf(1<<40, 1<<40)); !errors.Is(err, ErrOverflow) {
		t.Errorf("overflow not reported: %v", err)
	}
	if _, err := ByteSize(Double, ShapeOf(1<<60, 4)); !errors.Is(err, ErrOverflow) {
		t.Errorf("byte overflow not reported: %v", err)
	}
	if s := (Shape{Static(1), Symbolic("batch"), Symbolic("")}).String(); s != "[1,batch,?]" {
		t.Errorf("String: %s", s)
	}
	if Shape(nil).String() != "unknown" || Shape(nil).Known() || !(Shape{}).Known() {
		t.Error("unknown rank vs scalar")
	}
	for d := Undefined; d <= Int2; d++ {
		if p, ok := ParseDType(d.String()); !ok || p != d {
			t.Errorf("ParseDType(%s) = %v %v", d, p, ok)
		}
	}
}

func BenchmarkKahnOrder2k(b *testing.B) {
	rng := rand.New(rand.NewSource(2))
	g := randomDAG(b, rng, 2000, 0.002)
	prio := make([]float64, len(g.Nodes))
	for i := range prio {
		prio[i] = rng.Float64()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.KahnOrder(prio)
	}
}
