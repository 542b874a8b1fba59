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

// TestStatePairsAttention: KV caches that pass through ONNX Runtime's attention contrib
// ops (GroupQueryAttention's past 3, 4 → present 1, 2; MultiHeadAttention's 6, 7 → 1, 2)
// are state; the same op outside com.microsoft, or a present that is not a graph output,
// is not.
func TestStatePairsAttention(t *testing.T) {
	b := NewBuilder("gqa")
	for _, in := range []string{"q", "k", "v", "pk0", "pv0", "seqlens", "total", "pk1", "pv1", "pk2", "pv2", "pk3"} {
		b.AddInput(in)
	}
	b.AddNode("gqa0", "GroupQueryAttention", "com.microsoft", []string{"q", "k", "v", "pk0", "pv0", "seqlens", "total"},
		[]string{"o0", "present.0.key", "present.0.value"}, nil, nil)
	b.AddNode("mha1", "MultiHeadAttention", "com.microsoft", []string{"o0", "k", "v", "", "", "", "pk1", "pv1"},
		[]string{"o1", "pres1k", "present.1.value"}, nil, nil)
	b.AddNode("cast1", "Cast", "", []string{"pres1k"}, []string{"present.1.key"}, nil, nil)
	// not com.microsoft: no pair
	b.AddNode("gqa2", "GroupQueryAttention", "", []string{"o1", "k", "v", "pk2", "pv2", "seqlens", "total"},
		[]string{"o2", "present.2.key", "present.2.value"}, nil, nil)
	// present not an output: no pair
	b.AddNode("gqa3", "GroupQueryAttention", "com.microsoft", []string{"o2", "k", "v", "pk3", "", "seqlens", "total"},
		[]string{"o3", "hidden3", ""}, nil, nil)
	b.AddNode("use", "Add", "", []string{"o3", "hidden3"}, []string{"y"}, nil, nil)
	for _, o := range []string{"y", "present.0.key", "present.0.value", "present.1.key", "present.1.value", "present.2.key", "present.2.value"} {
		b.AddOutput(o)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ps, err := g.StatePairs(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, g.Tensors[p.In].Name+"="+g.Tensors[p.Out].Name+"@"+g.Nodes[p.Concat].Name)
		if p.Axis != 2 {
			t.Errorf("%s: axis %d", g.Tensors[p.In].Name, p.Axis)
		}
	}
	if want := "pk0=present.0.key@gqa0 pv0=present.0.value@gqa0 pk1=present.1.key@mha1 pv1=present.1.value@mha1"; strings.Join(got, " ") != want {
		t.Errorf("pairs %q, want %q", strings.Join(got, " "), want)
	}
}
