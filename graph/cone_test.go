package graph

import (
	"math/rand"
	"sort"
	"testing"
)

// The mask of kvLayers' shape: k0 reads x only, so it and the cone above it are input-derived
// unless x is skipped; cat0 reads past.0.key, a state input when skipped.
func TestInputCone(t *testing.T) {
	g := kvLayers(t)
	id := func(name string) int { v, _ := g.NodeByName(name); return v }
	derived := g.InputDerived(nil)
	for _, n := range []string{"k0", "cat0", "len", "k1", "cat1", "id1", "acc"} {
		if !derived[id(n)] {
			t.Errorf("%s: not input-derived with nothing skipped", n)
		}
	}
	past, _ := g.TensorByName("past.0.key")
	skip := map[int]bool{past: true}
	derived = g.InputDerived(skip)
	if derived[id("cat0")] || derived[id("k1")] || !derived[id("k0")] {
		t.Errorf("with past.0.key skipped: cat0 %v, k1 %v, k0 %v", derived[id("cat0")], derived[id("k1")], derived[id("k0")])
	}
	cone, ok := g.InputCone(id("k1"), nil)
	sort.Ints(cone)
	if !ok || len(cone) != 3 || cone[0] != id("k0") || cone[1] != id("cat0") || cone[2] != id("k1") {
		t.Errorf("cone of k1: %v %v", cone, ok)
	}
	if _, ok := g.InputCone(id("k1"), skip); ok {
		t.Error("k1's cone reads the skipped past.0.key")
	}
}

// InputCone's ok and InputDerived agree on every node of random graphs with random skips.
func TestInputConeAgreesWithDerived(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for trial := 0; trial < 200; trial++ {
		b := NewBuilder("r")
		var names []string
		for i := 0; i < 3; i++ {
			n := string(rune('a' + i))
			b.AddInput(n)
			names = append(names, n)
		}
		w := b.AddInitializer("w")
		_ = w
		names = append(names, "w")
		for v := 0; v < 12; v++ {
			in := []string{names[r.Intn(len(names))], names[r.Intn(len(names))]}
			out := "t" + string(rune('A'+v))
			b.AddNode("n"+out, "Add", "", in, []string{out}, nil, nil)
			names = append(names, out)
		}
		b.AddOutput(names[len(names)-1])
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		skip := map[int]bool{}
		for _, in := range g.Inputs {
			if r.Intn(3) == 0 {
				skip[in] = true
			}
		}
		derived := g.InputDerived(skip)
		for v := range g.Nodes {
			if g.Nodes[v].Static {
				continue
			}
			if _, ok := g.InputCone(v, skip); ok != derived[v] {
				t.Fatalf("trial %d node %s: InputCone ok %v, InputDerived %v", trial, g.Nodes[v].Label(), ok, derived[v])
			}
		}
	}
}
