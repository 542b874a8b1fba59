package emit

import (
	"testing"

	"github.com/onnxpart/onnxpart/internal/testmodel"
)

// EqualFLOPsAt cuts only at the positions given: each cut is the free position nearest its
// share of the FLOPs, cuts are distinct and increasing, as many stages as positions + 1 use
// every position, and more is an error.
func TestEqualFLOPsAt(t *testing.T) {
	g := testmodel.Load(t, testmodel.Corpus(t, "resnet50_small.onnx")).Graph
	order := g.TopoOrder()
	var at []int
	for b := 7; b < len(order); b += 23 {
		at = append(at, b)
	}
	prefix := make([]float64, len(order)+1)
	for i, v := range order {
		prefix[i+1] = prefix[i] + float64(max(g.Nodes[v].FLOPs, 0))
	}
	total := prefix[len(order)]
	// bounds recovers the cut positions from a stage assignment.
	bounds := func(stage []int) []int {
		var b []int
		for i := 1; i < len(order); i++ {
			if stage[order[i]] != stage[order[i-1]] {
				b = append(b, i)
			}
		}
		return b
	}
	isAt := map[int]bool{}
	for _, b := range at {
		isAt[b] = true
	}
	for _, n := range []int{1, 2, 3, 5, len(at) + 1} {
		stage, err := EqualFLOPsAt(g, n, order, at)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if err := g.CheckStageOrder(stage); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		b := bounds(stage)
		if len(b) != n-1 {
			t.Fatalf("n=%d: %d cuts %v", n, len(b), b)
		}
		for i, x := range b {
			if !isAt[x] {
				t.Errorf("n=%d: cut at %d, not a given position", n, x)
			}
			if stage[order[x]] != i+1 {
				t.Errorf("n=%d: stage %d starts at %d, labelled %d", n, i+1, x, stage[order[x]])
			}
		}
		if n == 2 {
			best := at[0]
			for _, x := range at {
				if abs(prefix[x]-total/2) < abs(prefix[best]-total/2) {
					best = x
				}
			}
			if b[0] != best {
				t.Errorf("n=2: cut at %d (%.0f FLOPs before), the position nearest half (%.0f) is %d (%.0f)", b[0], prefix[b[0]], total/2, best, prefix[best])
			}
		}
		if n == len(at)+1 {
			for i := range at {
				if b[i] != at[i] {
					t.Errorf("n=%d: cuts %v, want every position %v", n, b, at)
					break
				}
			}
		}
	}
	if _, err := EqualFLOPsAt(g, len(at)+2, order, at); err == nil {
		t.Errorf("%d stages at %d positions: no error", len(at)+2, len(at))
	}
	if _, err := EqualFLOPsAt(g, 2, order, []int{5, 5}); err == nil {
		t.Error("repeated positions: no error")
	}
	if _, err := EqualFLOPsAt(g, 0, order, at); err == nil {
		t.Error("0 stages: no error")
	}
}
