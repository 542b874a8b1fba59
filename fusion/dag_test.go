package fusion

import (
	"math/rand"
	"testing"
)

// reachesAvoiding reports whether v is reachable from u without using the edge u→v
// (brute force over the alive vertices).
func reachesAvoiding(d *contractDAG, u, v int) bool {
	seen := map[int]bool{u: true}
	stack := []int{}
	for x := range d.out[u] {
		if x != v {
			stack = append(stack, x)
			seen[x] = true
		}
	}
	for len(stack) > 0 {
		w := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if w == v {
			return true
		}
		for x := range d.out[w] {
			if !seen[x] {
				seen[x] = true
				stack = append(stack, x)
			}
		}
	}
	return false
}

// TestDAGContract contracts random edges of random DAGs and checks each decision against
// brute force, and the topological labelling after each contraction.
func TestDAGContract(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	refused, done := 0, 0
	for trial := 0; trial < 300; trial++ {
		n := 5 + r.Intn(60)
		d := &contractDAG{}
		for i := 0; i < n; i++ {
			d.addVertex(i * 3) // gaps, as after merges
		}
		for v := 1; v < n; v++ {
			for k := r.Intn(4); k > 0; k-- {
				d.addEdge(r.Intn(v), v)
			}
		}
		for step := 0; step < n; step++ {
			var edges [][2]int
			for u := range d.alive {
				if d.alive[u] {
					for _, v := range d.succs(u) {
						edges = append(edges, [2]int{u, v})
					}
				}
			}
			if len(edges) == 0 {
				break
			}
			e := edges[r.Intn(len(edges))]
			cyclic := reachesAvoiding(d, e[0], e[1])
			m := d.contract(e[0], e[1])
			if cyclic != (m < 0) {
				t.Fatalf("trial %d: contract %v returned %d, brute force says side path %v", trial, e, m, cyclic)
			}
			if m < 0 {
				refused++
				if !d.alive[e[0]] || !d.hasEdge(e[0], e[1]) {
					t.Fatal("a refused contraction changed the graph")
				}
				continue
			}
			done++
			for u := range d.alive {
				if !d.alive[u] {
					if len(d.out[u])+len(d.in[u]) > 0 {
						t.Fatalf("dead vertex %d keeps edges", u)
					}
					continue
				}
				for v := range d.out[u] {
					if !d.alive[v] || d.ord[u] >= d.ord[v] {
						t.Fatalf("trial %d: after contracting %v, edge %d->%d has labels %d, %d", trial, e, u, v, d.ord[u], d.ord[v])
					}
					if _, ok := d.in[v][u]; !ok {
						t.Fatalf("edge %d->%d missing in the in-list", u, v)
					}
				}
			}
		}
	}
	if refused == 0 || done == 0 {
		t.Fatalf("%d contractions, %d refusals: the test does not exercise both outcomes", done, refused)
	}
}
