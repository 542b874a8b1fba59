package schedule

import (
	"sort"
	"testing"
)

func TestCutNodes(t *testing.T) {
	in, err := prepare(t4())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range in.cutNodes() {
		names = append(names, in.problem.Nodes[c].Name)
	}
	want := []string{"A", "D", "A2", "D2"}
	if len(names) != len(want) {
		t.Fatalf("cut nodes %v, want %v", names, want)
	}
	for x := range want {
		if names[x] != want[x] {
			t.Fatalf("cut nodes %v, want %v", names, want)
		}
	}
	// An edge jumping over a node makes it no cut: add A→D2.
	p := t4()
	p.Edges = append(p.Edges, Edge{From: 0, To: 7, Time: uniformComm(2, 1)})
	in, _ = prepare(p)
	for _, c := range in.cutNodes() {
		if n := in.problem.Nodes[c].Name; n == "D" || n == "A2" {
			t.Errorf("%s is a cut node although A→D2 jumps over it", n)
		}
	}
}

// undirected builds a symmetric weight matrix from edges.
func undirected(n int, edges [][2]int) [][]int {
	w := make([][]int, n)
	for x := range w {
		w[x] = make([]int, n)
	}
	for _, e := range edges {
		w[e[0]][e[1]]++
		w[e[1]][e[0]]++
	}
	return w
}

func TestKEdgeComponents(t *testing.T) {
	// Two K4s (0–3, 4–7) joined by the edge 3–4, and a pendant 8 on 7.
	var edges [][2]int
	for _, base := range []int{0, 4} {
		for a := range 4 {
			for b := a + 1; b < 4; b++ {
				edges = append(edges, [2]int{base + a, base + b})
			}
		}
	}
	edges = append(edges, [2]int{3, 4}, [2]int{7, 8})
	w := undirected(9, edges)
	groups := func(k int) [][]int {
		comp := kEdgeComponents(w, k)
		byLabel := map[int][]int{}
		for x, c := range comp {
			byLabel[c] = append(byLabel[c], x)
		}
		var out [][]int
		for _, g := range byLabel {
			sort.Ints(g)
			out = append(out, g)
		}
		sort.Slice(out, func(a, b int) bool { return out[a][0] < out[b][0] })
		return out
	}
	same := func(got, want [][]int) bool {
		if len(got) != len(want) {
			return false
		}
		for x := range got {
			if !equalInts(got[x], want[x]) {
				return false
			}
		}
		return true
	}
	if got, want := groups(1), [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8}}; !same(got, want) {
		t.Errorf("k=1: %v, want %v", got, want)
	}
	if got, want := groups(2), [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}, {8}}; !same(got, want) {
		t.Errorf("k=2: %v, want %v", got, want)
	}
	if got, want := groups(3), [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}, {8}}; !same(got, want) {
		t.Errorf("k=3: %v, want %v", got, want)
	}
	if got := groups(4); len(got) != 9 {
		t.Errorf("k=4: %v, want singletons (K4 is only 3-edge-connected)", got)
	}
}

func TestStoerWagner(t *testing.T) {
	// A 6-cycle with one chord doubled: min cut 2.
	w := undirected(6, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 0}, {0, 3}, {0, 3}})
	cut, side := stoerWagner(w, []int{0, 1, 2, 3, 4, 5})
	if cut != 2 {
		t.Fatalf("min cut %d, want 2", cut)
	}
	crossing := 0
	for a := range 6 {
		for b := a + 1; b < 6; b++ {
			if side[a] != side[b] {
				crossing += w[a][b]
			}
		}
	}
	if crossing != cut {
		t.Errorf("the returned sides cut %d edges, not %d", crossing, cut)
	}
}

// channelStack builds a latency problem of m modules of a diamond-with-c-lanes each, joined
// by c edges, with a source and a sink.
func channelStack(m, c int) *Problem {
	p := &Problem{Devices: devs("G1", "G2")}
	add := func(name string) int {
		p.Nodes = append(p.Nodes, Node{Name: name, Time: []float64{1, 1.5}})
		return len(p.Nodes) - 1
	}
	edge := func(a, b int) { p.Edges = append(p.Edges, Edge{From: a, To: b, Time: uniformComm(2, 0.5)}) }
	src := add("src")
	prev := []int{src}
	for x := range m {
		in := make([]int, c)
		for l := range c {
			in[l] = add("in")
			edge(prev[min(l, len(prev)-1)], in[l])
		}
		mid := add("mid")
		for l := range c {
			edge(in[l], mid)
		}
		out := make([]int, c)
		for l := range c {
			out[l] = add("out")
			edge(mid, out[l])
			edge(in[l], out[l])
		}
		_ = x
		prev = out
	}
	snk := add("sink")
	for _, o := range prev {
		edge(o, snk)
	}
	return p
}

func TestSweepCutsChannels(t *testing.T) {
	for c := 2; c <= 3; c++ {
		p := channelStack(6, c)
		in, err := prepare(p)
		if err != nil {
			t.Fatal(err)
		}
		ms := in.detectModules(2*c+1, c)
		if len(ms.modules) < 4 {
			t.Fatalf("c=%d: %d modules, want at least 4", c, len(ms.modules))
		}
		seen := make([]bool, in.numNodes)
		for m, mod := range ms.modules {
			for _, i := range mod {
				if seen[i] {
					t.Fatalf("node %d in two modules", i)
				}
				seen[i] = true
				if ms.of[i] != m {
					t.Fatalf("of[%d] = %d, want %d", i, ms.of[i], m)
				}
			}
		}
		for i, s := range seen {
			if !s {
				t.Fatalf("node %d in no module", i)
			}
		}
		// Every boundary: at most c distinct producers with a consumer in a later module,
		// and no edge goes backwards.
		for m := range len(ms.modules) - 1 {
			prod := map[int]bool{}
			for _, ed := range p.Edges {
				a, b := ms.of[ed.From], ms.of[ed.To]
				if b < a {
					t.Fatalf("edge %d→%d goes from module %d back to %d", ed.From, ed.To, a, b)
				}
				if a <= m && b > m {
					prod[ed.From] = true
				}
			}
			if len(prod) > c {
				t.Errorf("c=%d: boundary after module %d has %d channels", c, m, len(prod))
			}
		}
	}
}
