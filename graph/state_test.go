package graph

import (
	"strings"
	"testing"
)

// kvLayers builds a decoder step in miniature: per layer, present.i.key = Concat(past.i.key,
// k_i, axis=-2) (layer 1's through an Identity), a Shape of layer 0's past, and a pair the
// pattern misses (a cache updated by Add).
func kvLayers(t *testing.T) *Graph {
	t.Helper()
	b := NewBuilder("kv")
	b.AddInput("x")
	b.AddInput("past.0.key")
	b.AddInput("past.1.key")
	b.AddInput("acc.in")
	axis := []Attr{{Name: "axis", Kind: AttrInt, Int: -2}}
	b.AddNode("k0", "Relu", "", []string{"x"}, []string{"k0"}, nil, nil)
	b.AddNode("cat0", "Concat", "", []string{"past.0.key", "k0"}, []string{"present.0.key"}, nil, axis)
	b.AddNode("len", "Shape", "", []string{"past.0.key"}, []string{"len"}, nil, nil)
	b.AddNode("k1", "Neg", "", []string{"present.0.key"}, []string{"k1"}, nil, nil)
	b.AddNode("cat1", "Concat", "", []string{"past.1.key", "k1"}, []string{"cat1"}, nil, axis)
	b.AddNode("id1", "Identity", "", []string{"cat1"}, []string{"present.1.key"}, nil, nil)
	b.AddNode("acc", "Add", "", []string{"acc.in", "x"}, []string{"acc.out"}, nil, nil)
	for _, o := range []string{"present.0.key", "present.1.key", "acc.out", "len"} {
		b.AddOutput(o)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for i := range g.Tensors {
		g.Tensors[i].Shape = Shape{{Value: 1}, {Value: 2}, {Param: "past"}, {Value: 4}}
	}
	return g
}

func TestStatePairs(t *testing.T) {
	g := kvLayers(t)
	ps, err := g.StatePairs(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, g.Tensors[p.In].Name+"="+g.Tensors[p.Out].Name+"@"+string(rune('0'+p.Axis)))
		if p.Concat < 0 || g.Nodes[p.Concat].OpType != "Concat" {
			t.Errorf("%s: concat %d", g.Tensors[p.In].Name, p.Concat)
		}
	}
	if want := "past.0.key=present.0.key@2 past.1.key=present.1.key@2"; strings.Join(got, " ") != want {
		t.Errorf("pairs %q, want %q", strings.Join(got, " "), want)
	}
	if o := g.StateOwner(ps[1]); g.Nodes[o].Name != "id1" {
		t.Errorf("owner of layer 1's state: %s", g.Nodes[o].Name)
	}
	// By hand: the accumulator, which no Concat joins.
	ps, err = g.StatePairs(map[string]string{"acc.in": "acc.out"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 || g.Tensors[ps[2].In].Name != "acc.in" || !ps[2].Given || ps[2].Concat != -1 || ps[2].Axis != -1 {
		t.Errorf("given pair: %+v", ps)
	}
	v, _ := g.NodeByName("len")
	if !g.ShapeOnly(v) {
		t.Error("Shape reads shapes only")
	}
}

func TestStatePairsErrors(t *testing.T) {
	g := kvLayers(t)
	for given, want := range map[string]string{
		"nope=acc.out": `"nope" is not an input`,
		"k0=acc.out":   `"k0" is not an input`,
		"acc.in=x":     `"x" is not an output`,
	} {
		in, out, _ := strings.Cut(given, "=")
		_, err := g.StatePairs(map[string]string{in: out})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "state pair "+given) {
			t.Errorf("%s: error %v, want one naming %s", given, err, want)
		}
	}
	// A pair by hand takes its output from the pattern: past.0.key then pairs with nothing.
	ps, err := g.StatePairs(map[string]string{"acc.in": "present.0.key"})
	if err != nil || len(ps) != 2 || g.Tensors[ps[0].In].Name != "past.1.key" || g.Tensors[ps[1].In].Name != "acc.in" {
		t.Errorf("a given pair over a found one: %+v, %v", ps, err)
	}
	if _, err := g.StatePairs(map[string]string{"acc.in": "acc.out", "past.0.key": "acc.out"}); err == nil || !strings.Contains(err.Error(), "already the state") {
		t.Errorf("two inputs, one output: %v", err)
	}
}
