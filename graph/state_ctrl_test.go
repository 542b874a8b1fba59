package graph_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/genaigen"
)

// TestStateThroughIf: a hybrid stack's linear-attention layers make their conv and
// recurrent states with If nodes (zeros on the first call, the past updated after), whose
// branches read the past input as a capture. Every state pair is found without --state: 48
// in the 24-layer preset (18 linear layers × 2, 6 attention layers × 2 KV), each past input
// with its own layer's present, with value_info and without, dims bound or symbolic.
func TestStateThroughIf(t *testing.T) {
	novi := genaigen.Hybrid
	novi.Name, novi.ValueInfo, novi.Int4, novi.Rotary = "hybrid-novi", false, false, genaigen.RotarySeparate
	for _, c := range []genaigen.Config{genaigen.Hybrid, novi} {
		p, err := genaigen.Write(t.TempDir(), c)
		if err != nil {
			t.Fatal(err)
		}
		for _, dims := range []map[string]int64{nil, {genaigen.Batch: 1, genaigen.Seq: 1, genaigen.Past: 7}} {
			t.Run(fmt.Sprintf("%s/%v", c.Name, dims), func(t *testing.T) {
				m, err := ingest.Load(p, ingest.Options{Dims: dims})
				if err != nil {
					t.Fatal(err)
				}
				g := m.Graph
				pairs, err := g.StatePairs(nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(pairs) != 2*c.Layers {
					t.Errorf("%d state pairs, want %d", len(pairs), 2*c.Layers)
				}
				ifs := 0
				for _, sp := range pairs {
					in, out := g.Tensors[sp.In].Name, g.Tensors[sp.Out].Name
					want := strings.NewReplacer("past_key_values.", "present.", "past_", "present_").Replace(in)
					if out != want {
						t.Errorf("%s paired with %s, want %s", in, out, want)
					}
					if sp.Concat < 0 {
						t.Errorf("%s: no owner", in)
					} else if g.Nodes[sp.Concat].OpType == "If" {
						ifs++
						if sp.Axis != -1 {
							t.Errorf("%s: axis %d for a fixed-size state", in, sp.Axis)
						}
					}
				}
				if want := 2 * (c.Layers - c.Layers/c.FullEvery); ifs != want {
					t.Errorf("%d pairs through If, want %d", ifs, want)
				}
			})
		}
	}
}

// TestStateThroughLoopAndScan: a graph input that a Loop carries (v_initial → v_final) or a
// Scan keeps as state, whose final value is a graph output, is a state pair; a scan input
// is not.
func TestStateThroughLoopAndScan(t *testing.T) {
	b := graph.NewBuilder("cf")
	for _, in := range []string{"M", "cond", "h.in", "xs", "s.in", "ys"} {
		b.AddInput(in)
	}
	b.AddNode("loop", "Loop", "", []string{"M", "cond", "h.in"}, []string{"h.out"}, nil, nil)
	b.AddNode("scan", "Scan", "", []string{"s.in", "xs"}, []string{"s.mid", "scanned"}, nil,
		[]graph.Attr{{Name: "num_scan_inputs", Kind: graph.AttrInt, Int: 1}})
	b.AddNode("id", "Identity", "", []string{"s.mid"}, []string{"s.out"}, nil, nil)
	for _, o := range []string{"h.out", "s.out", "scanned"} {
		b.AddOutput(o)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := g.StatePairs(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pairs {
		got = append(got, g.Tensors[p.In].Name+"="+g.Tensors[p.Out].Name)
	}
	if want := "h.in=h.out s.in=s.out"; strings.Join(got, " ") != want {
		t.Errorf("pairs %q, want %q", strings.Join(got, " "), want)
	}
}
