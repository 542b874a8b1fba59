package dag

import (
	"math/rand"
	"reflect"
	"testing"
)

func ints(o []int32) []int {
	out := make([]int, len(o))
	for i, v := range o {
		out[i] = int(v)
	}
	return out
}

func TestKahn(t *testing.T) {
	// 0 → 2, 1 → 2, 2 → 3, 1 → 4
	diamond := FromEdges(5, [][2]int{{0, 2}, {1, 2}, {2, 3}, {1, 4}})
	for _, tc := range []struct {
		name string
		g    CSR
		prio []float64
		ord  Order
		want []int
	}{
		{"by id", diamond, nil, ByID, []int{0, 1, 2, 3, 4}},
		{"min first", diamond, []float64{5, 1, 0, 0, 9}, MinFirst, []int{1, 0, 2, 3, 4}},
		{"max first", diamond, []float64{5, 1, 0, 0, 9}, MaxFirst, []int{0, 1, 4, 2, 3}},
		{"ties by id", diamond, []float64{1, 1, 1, 1, 1}, MaxFirst, []int{0, 1, 2, 3, 4}},
		{"no edges", FromEdges(3, nil), []float64{3, 1, 2}, MinFirst, []int{1, 2, 0}},
		{"empty", FromEdges(0, nil), nil, ByID, []int{}},
		{"cycle stops", FromEdges(3, [][2]int{{0, 1}, {1, 2}, {2, 1}}), nil, ByID, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k Kahn
			got := ints(k.Sort(tc.g, tc.g.Reverse(), tc.prio, tc.ord, nil))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}

func TestKahnSortFunc(t *testing.T) {
	// 0 → 2, 1 → 2, 2 → 3, 1 → 4
	diamond := FromEdges(5, [][2]int{{0, 2}, {1, 2}, {2, 3}, {1, 4}})
	key := []float64{5, 1, 0, 0, 9}
	rank := []int{4, 3, 2, 1, 0} // a tie-break other than the id
	byKeyThenRank := func(a, b int32) bool {
		if key[a] != key[b] {
			return key[a] < key[b]
		}
		return rank[a] < rank[b]
	}
	byRank := func(a, b int32) bool { return rank[a] < rank[b] }
	for _, tc := range []struct {
		name string
		g    CSR
		less func(a, b int32) bool
		want []int
	}{
		{"key then rank", diamond, byKeyThenRank, []int{1, 0, 2, 3, 4}},
		{"rank only", diamond, byRank, []int{1, 4, 0, 2, 3}},
		{"no edges, ties by rank", FromEdges(5, nil), func(a, b int32) bool { return key[a] < key[b] || key[a] == key[b] && rank[a] < rank[b] }, []int{3, 2, 1, 0, 4}},
		{"empty", FromEdges(0, nil), byRank, []int{}},
		{"cycle stops", FromEdges(3, [][2]int{{0, 1}, {1, 2}, {2, 1}}), byRank, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k Kahn
			got := ints(k.SortFunc(tc.g, tc.g.Reverse(), tc.less, nil))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
			// The same Kahn value then sorts by priority again (SortFunc leaves no comparison behind).
			if got := ints(k.Sort(diamond, diamond.Reverse(), key, MinFirst, nil)); !reflect.DeepEqual(got, []int{1, 0, 2, 3, 4}) {
				t.Errorf("Sort after SortFunc: %v", got)
			}
		})
	}
}

func TestFindCycle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		edges [][2]int
		cycle bool
	}{
		{"acyclic", 4, [][2]int{{0, 1}, {1, 2}, {0, 3}, {3, 2}}, false},
		{"self-loop", 2, [][2]int{{0, 1}, {1, 1}}, true},
		{"two", 3, [][2]int{{0, 1}, {1, 2}, {2, 1}}, true},
		{"long", 6, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 1}, {4, 5}}, true},
		{"behind a DAG", 5, [][2]int{{0, 1}, {0, 2}, {3, 4}, {4, 3}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := FromEdges(tc.n, tc.edges)
			cyc := FindCycle(g)
			if (cyc != nil) != tc.cycle {
				t.Fatalf("cycle %v, want one: %v", cyc, tc.cycle)
			}
			has := func(u, v int) bool {
				for _, w := range g.Of(u) {
					if int(w) == v {
						return true
					}
				}
				return false
			}
			for i, v := range cyc {
				if w := cyc[(i+1)%len(cyc)]; !has(v, w) {
					t.Errorf("cycle %v: no edge %d → %d", cyc, v, w)
				}
			}
			order, c2 := Topological(g)
			if tc.cycle != (order == nil) || tc.cycle != (c2 != nil) {
				t.Errorf("Topological: order %v, cycle %v", order, c2)
			}
			if !tc.cycle && !IsTopological(g, order) {
				t.Errorf("Topological gave %v, not topological", order)
			}
		})
	}
	err := NewCycleError("", []int{2, 1}, func(v int) string { return string(rune('a' + v)) })
	if got, want := err.Error(), "the graph has a cycle: c -> b -> c"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// randomDAG has edges from lower to higher ids only.
func randomDAG(rng *rand.Rand, n int, p float64) CSR {
	var edges [][2]int
	for u := 0; u < n; u++ {
		for v := u + 1; v < n; v++ {
			if rng.Float64() < p {
				edges = append(edges, [2]int{u, v})
			}
		}
	}
	return FromEdges(n, edges)
}

func TestReachMatchesWalk(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for trial := 0; trial < 50; trial++ {
		n := 1 + rng.Intn(70) // past one 64-bit word
		g := randomDAG(rng, n, rng.Float64()*0.2)
		order, cyc := Topological(g)
		if cyc != nil {
			t.Fatal("random DAG has a cycle")
		}
		r := Reach(g, order)
		for u := 0; u < n; u++ {
			desc := map[int]bool{u: true}
			for _, v := range Walk(g, u) {
				desc[v] = true
			}
			for v := 0; v < n; v++ {
				if r.Reaches(u, v) != desc[v] {
					t.Fatalf("n=%d: Reaches(%d, %d) = %v, Walk says %v", n, u, v, r.Reaches(u, v), desc[v])
				}
			}
		}
		// The reverse walk is the ancestors.
		rev := g.Reverse()
		for v := 0; v < n; v++ {
			for _, u := range Walk(rev, v) {
				if !r.Reaches(u, v) {
					t.Fatalf("ancestor %d of %d does not reach it", u, v)
				}
			}
		}
	}
}

func TestIsTopological(t *testing.T) {
	g := FromEdges(3, [][2]int{{0, 1}, {1, 2}})
	for _, tc := range []struct {
		order []int
		want  bool
	}{
		{[]int{0, 1, 2}, true}, {[]int{1, 0, 2}, false}, {[]int{0, 1}, false}, {[]int{0, 0, 2}, false}, {[]int{0, 1, 3}, false},
	} {
		if got := IsTopological(g, tc.order); got != tc.want {
			t.Errorf("IsTopological(%v) = %v", tc.order, got)
		}
	}
}

func BenchmarkKahn(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	n := 5000
	var edges [][2]int
	for v := 1; v < n; v++ { // a layered-like DAG: each node reads 1–3 earlier ones nearby
		for k := 1 + rng.Intn(3); k > 0; k-- {
			edges = append(edges, [2]int{max(0, v-1-rng.Intn(40)), v})
		}
	}
	g := FromEdges(n, edges)
	pred := g.Reverse()
	prio := make([]float64, n)
	for i := range prio {
		prio[i] = rng.Float64()
	}
	var k Kahn
	out := make([]int32, 0, n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out = k.Sort(g, pred, prio, MaxFirst, out)
	}
	if len(out) != n {
		b.Fatal("incomplete order")
	}
}
