package planner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/emit/schema"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/onnxpb"
	"github.com/onnxpart/onnxpart/profile"
)

// TestPeakActivations walks small chains and checks the peak of live tensors.
func TestPeakActivations(t *testing.T) {
	// x → a (100 B) → b (200 B) → c (50 B) → y, with a also read by the last node: a stays
	// live until then. Sizes are set by hand; 4-byte floats.
	build := func(skip bool) (*graph.Graph, []int) {
		b := graph.NewBuilder("chain")
		b.AddInput("x")
		b.AddNode("n0", "Relu", "", []string{"x"}, []string{"a"}, nil, nil)
		b.AddNode("n1", "Relu", "", []string{"a"}, []string{"b"}, nil, nil)
		b.AddNode("n2", "Relu", "", []string{"b"}, []string{"c"}, nil, nil)
		if skip {
			b.AddNode("n3", "Add", "", []string{"c", "a"}, []string{"y"}, nil, nil)
		} else {
			b.AddNode("n3", "Relu", "", []string{"c"}, []string{"y"}, nil, nil)
		}
		b.AddOutput("y")
		for name, size := range map[string]int64{"x": 1000, "a": 100, "b": 200, "c": 50, "y": 7000} {
			b.TensorRef(b.Tensor(name)).Bytes = size
		}
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return g, g.TopoOrder()
	}
	for _, tc := range []struct {
		name  string
		skip  bool
		stage []int
		want  []int64 // per stage
	}{
		// One stage: a+b at n1 (300), then b+c at n2 (250); y is state, x state.
		{"chain", false, []int{0, 0, 0, 0}, []int64{300}},
		// The skip keeps a live through n2: a+b+c = 350 at n2.
		{"skip", true, []int{0, 0, 0, 0}, []int64{350}},
		// Split after n1: b leaves stage 0 (a buffer), a is read by stage 1 too (a buffer);
		// stage 0 has no internal tensor; stage 1 holds c only.
		{"split", true, []int{0, 0, 1, 1}, []int64{0, 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, order := build(tc.skip)
			for s, want := range tc.want {
				var nodes []int
				for _, v := range order {
					if tc.stage[v] == s {
						nodes = append(nodes, v)
					}
				}
				if got := PeakActivations(g, nodes, tc.stage); got != want {
					t.Errorf("stage %d: peak %d, want %d", s, got, want)
				}
			}
		})
	}
	// The whole account of the split: buffers a and b leave stage 0 and enter stage 1; the
	// state is x (stage 0) and y (stage 1).
	g, _ := build(true)
	mem := StageMemories(g, &emit.Assignment{Stage: []int{0, 0, 1, 1}}, nil)
	want := []StageMemory{{Buffers: 300, State: 1000}, {Activations: 50, Buffers: 300, State: 7000}}
	for s := range want {
		if mem[s] != want[s] {
			t.Errorf("stage %d: %+v, want %+v", s, mem[s], want[s])
		}
	}
}

// decoderModel writes a two-layer decoder-like model: each layer projects h with a weight and
// appends it to its KV cache (past.i → present.i, [1, past+1, 64] floats); both layers also
// read one shared input, enc (cross-attention memory, [1, past, 64]).
func decoderModel(t *testing.T) string {
	const d = 64
	vi := func(name string, dims ...any) *onnxpb.ValueInfoProto {
		sh := &onnxpb.TensorShapeProto{}
		for _, x := range dims {
			dim := &onnxpb.TensorShapeProto_Dimension{}
			switch v := x.(type) {
			case int:
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(v)}
			case string:
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: v}
			}
			sh.Dim = append(sh.Dim, dim)
		}
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(graph.Float)), Shape: sh}}}}
	}
	weight := func(name string) *onnxpb.TensorProto {
		return &onnxpb.TensorProto{Name: proto.String(name), Dims: []int64{d, d}, DataType: proto.Int32(int32(graph.Float)), RawData: make([]byte, 4*d*d)}
	}
	node := func(op, name string, ins, outs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(name), Input: ins, Output: outs, Attribute: attrs}
	}
	axis1 := &onnxpb.AttributeProto{Name: proto.String("axis"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(1)}
	g := &onnxpb.GraphProto{Name: proto.String("decoder"),
		Input:       []*onnxpb.ValueInfoProto{vi("x", 1, 1, d), vi("enc", 1, "past", d), vi("past.0", 1, "past", d), vi("past.1", 1, "past", d)},
		Output:      []*onnxpb.ValueInfoProto{vi("y", 1, 1, d), vi("present.0", 1, "total", d), vi("present.1", 1, "total", d)},
		Initializer: []*onnxpb.TensorProto{weight("w0"), weight("w1"), weight("w2")},
		Node: []*onnxpb.NodeProto{
			node("MatMul", "mm0", []string{"x", "w0"}, []string{"h0"}),
			node("Concat", "cat0", []string{"past.0", "h0"}, []string{"present.0"}, axis1),
			node("Concat", "mix0", []string{"enc", "h0"}, []string{"m0"}, axis1),
			node("ReduceMax", "red0", []string{"m0"}, []string{"r0"}, axis1Attr("axes"), keep()),
			node("MatMul", "mm1", []string{"r0", "w1"}, []string{"h1"}),
			node("Concat", "cat1", []string{"past.1", "h1"}, []string{"present.1"}, axis1),
			node("Concat", "mix1", []string{"enc", "h1"}, []string{"m1"}, axis1),
			node("ReduceMax", "red1", []string{"m1"}, []string{"r1"}, axis1Attr("axes"), keep()),
			node("MatMul", "mm2", []string{"r1", "w2"}, []string{"y"}),
		},
	}
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), ProducerName: proto.String("test"), Graph: g,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(13)}}}
	b, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "decoder.onnx")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func axis1Attr(name string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: []int64{1}}
}

func keep() *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String("keepdims"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(1)}
}

func twoDevices(t *testing.T, cap string) *profile.Cluster {
	spec := filepath.Join(t.TempDir(), "devices.yaml")
	y := "devices:\n  - {name: gpu, type: t4, count: 2, memory_cap: " + cap + ", workspace_reserve: 4KiB}\n"
	if err := os.WriteFile(spec, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := hw.Resolve(context.Background(), spec, hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDecoderStateDoesNotFit plans the decoder on two devices whose memory holds its weights
// (48 KiB) several times over, but not the stages' weights with their KV cache, the shared
// input and their activations: the run fails naming the stage, the device and every part.
func TestDecoderStateDoesNotFit(t *testing.T) {
	const past = 1024
	m, err := ingest.Load(decoderModel(t), ingest.Options{Dims: map[string]int64{"past": past, "total": past + 1}})
	if err != nil {
		t.Fatal(err)
	}
	// Per layer: past.i 256 KiB + present.i 260 KiB + w 16 KiB; enc 256 KiB read by both;
	// m0 and m1 (enc with one row more) 260 KiB each.
	opt := Options{MaxStages: 2, Objective: Throughput, Fusion: "none", Seed: 1, Reproducible: true, TimeLimit: time.Minute}

	// Room for all of it: the plan fits, and each stage's account is in the result and the
	// manifest, and the manifest validates.
	r, err := Plan(context.Background(), m, twoDevices(t, "2MiB"), opt)
	if err != nil {
		t.Fatal(err)
	}
	var state int64
	for _, s := range r.Stages {
		if s.Memory.Total() == 0 || s.Memory.Reserve != 4<<10 {
			t.Errorf("stage %d: memory %+v, want a total and a 4 KiB reserve", s.Stage, s.Memory)
		}
		state += s.Memory.State
	}
	if min := int64(2*past*64*4 + 2*(past+1)*64*4 + past*64*4); state < min {
		t.Errorf("stages hold %d B of state, want at least past.*, present.* and enc: %d", state, min)
	}
	l, err := Prepare(m, r, emit.Options{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := l.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man emit.Manifest
	if err := json.Unmarshal(doc, &man); err != nil {
		t.Fatal(err)
	}
	if err := schema.ValidateStrict("manifest.v1", doc); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	for _, st := range man.Stages {
		if st.Memory == nil || st.Memory.TotalBytes != r.Memory[st.Label].Total() {
			t.Errorf("manifest stage %d memory %+v, want the plan's %+v", st.Index, st.Memory, r.Memory[st.Label])
		}
	}
	// A field the schema does not know fails it: the memory object is checked.
	bad := strings.Replace(string(doc), `"state_bytes"`, `"state_byte"`, 1)
	if err := schema.ValidateStrict("manifest.v1", []byte(bad)); err == nil {
		t.Errorf("a manifest with memory.state_byte validates")
	}

	// 800 KiB each: 1600 KiB in all holds the weights, the state and the reserves once
	// (1344 KiB), the solvers' additive part (weights and state, enc at its first reader)
	// fits a stage of some plan, but the stage that concatenates enc also holds m0 or m1
	// (260 KiB of activations), and a plan that splits mix0 from mix1 holds enc twice: the
	// plan found does not fit, and nothing proves that none does.
	_, err = Plan(context.Background(), m, twoDevices(t, "800KiB"), opt)
	if diag.KindOf(err) != diag.KindNoPlan {
		t.Fatalf("got %v, want a no-plan error", err)
	}
	t.Log(err)
	for _, want := range []string{"the plan found does not fit", "no plan found within the limits", "stage ", " on gpu", ": weights ", " + activations ", " + buffers ", " + inputs/outputs ", " + reserve 4.0 KiB = ", " > capacity 800.0 KiB (", " short)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}

	// 300 KiB each: the weights fit, weights and state cannot: proved (exit 3).
	_, err = Plan(context.Background(), m, twoDevices(t, "300KiB"), opt)
	if diag.KindOf(err) != diag.KindInfeasible || !strings.Contains(err.Error(), "weights 48.0 KiB + model inputs/outputs") {
		t.Fatalf("got %v, want an infeasible error with the parts", err)
	}
}

// TestNodeMemory: the solvers see each node's weights and the state it owns; a graph input
// read by several nodes counts at its first reader only (x is mm0's, y mm2's). Planned with room for each stage's
// whole memory, every stage fits its device.
func TestNodeMemory(t *testing.T) {
	const past = 512
	m, err := ingest.Load(decoderModel(t), ingest.Options{Dims: map[string]int64{"past": past, "total": past + 1}})
	if err != nil {
		t.Fatal(err)
	}
	g := m.Graph
	mem := nodeMemory(g, g)
	pastB, presentB, w := float64(past*64*4), float64((past+1)*64*4), float64(64*64*4)
	for name, want := range map[string]float64{"mm0": w + 64*4, "cat0": pastB + presentB, "mix0": pastB, "mix1": 0, "cat1": pastB + presentB, "mm2": w + 64*4} {
		v, ok := g.NodeByName(name)
		if !ok {
			t.Fatalf("no node %s", name)
		}
		if mem[v] != want {
			t.Errorf("%s: %g B, want %g", name, mem[v], want)
		}
	}
	// 700 KiB each: one stage cannot hold it all (weights and state ≈ 0.69 MiB, with m0, m1);
	// the plan splits it so that each stage fits.
	c := twoDevices(t, "700KiB")
	r, err := Plan(context.Background(), m, c, Options{MaxStages: 2, Objective: Throughput, Fusion: "none", Seed: 1, Reproducible: true, TimeLimit: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Stages {
		if cp := c.Devices[c.Index(s.Device)].Capacity(); float64(s.Memory.Total()) > cp || s.Memory.Total() == 0 {
			t.Errorf("stage %d: %s, capacity %g", s.Stage, s.Memory.Parts(), cp)
		}
	}
}
