package familygen

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/feeds"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/internal/testmodel"
	"github.com/onnxpart/onnxpart/schedule/instances"
)

func needORT(t *testing.T) {
	t.Helper()
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip("ONNX Runtime not available:", err)
	}
}

func write(t *testing.T, name string, seed uint64) (string, *ingest.Model) {
	t.Helper()
	p, err := Write(t.TempDir(), name, Presets[name], seed)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ingest.Load(p, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RequireKnownShapes(); err != nil {
		t.Fatal(err)
	}
	return p, m
}

func floats(x *ort.Tensor) []float32 {
	v := make([]float32, len(x.Data)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(x.Data[4*i:]))
	}
	return v
}

func i64(v []int64, shape ...int64) *ort.Tensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return &ort.Tensor{DType: graph.Int64, Shape: shape, Data: b}
}

// runAll runs the model in ONNX Runtime with every activation a graph output and returns
// ORT's tensors by name.
func runAll(t *testing.T, m *ingest.Model, in map[string]*ort.Tensor) map[string]*ort.Tensor {
	t.Helper()
	res, _ := testmodel.RunActivations(t, m, in, t.TempDir())
	return res
}

// fullWidth are the presets at torchvision's or GPT-2's own widths, checked on request.
var fullWidth = map[string]bool{"densenet121": true, "inception_v3": true, "gpt2_w256_op17": true}

// TestPresetsMatchORT: every preset runs in ONNX Runtime; each of its tensors has the dtype
// and shape onnxpart's inference gives it, and its outputs are finite and not constant.
func TestPresetsMatchORT(t *testing.T) {
	needORT(t)
	for _, name := range PresetNames() {
		t.Run(name, func(t *testing.T) {
			if fullWidth[name] && os.Getenv("ONNXPART_FAMILYGEN_FULL") != "1" {
				t.Skip("a full-width model (30–95 MB): set ONNXPART_FAMILYGEN_FULL=1")
			}
			_, m := write(t, name, 1)
			in, err := feeds.Random(m.Graph, 1, 1<<30, nil, diag.Names{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := in["attention_mask"]; ok {
				mask := make([]int64, in["attention_mask"].Elements())
				for i := range mask {
					mask[i] = 1
				}
				in["attention_mask"] = i64(mask, in["attention_mask"].Shape...)
			}
			res := runAll(t, m, in)
			bad, n := 0, 0
			for _, tn := range m.Graph.Tensors {
				if tn.Kind != graph.Activation || tn.Producer < 0 {
					continue
				}
				n++
				got := res[tn.Name]
				if got == nil || got.DType != tn.DType || !graph.ShapeOf(got.Shape...).Equal(tn.Shape) {
					if bad++; bad <= 5 {
						t.Errorf("%s: ORT gives %v, inference %s %v", tn.Name, got, tn.DType, tn.Shape)
					}
				}
			}
			for _, id := range m.Graph.Outputs {
				v := floats(res[m.Graph.Tensors[id].Name])
				lo, hi := math.Inf(1), math.Inf(-1)
				for _, x := range v {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						t.Fatalf("output %s has %v", m.Graph.Tensors[id].Name, x)
					}
					lo, hi = min(lo, float64(x)), max(hi, float64(x))
				}
				if hi-lo < 1e-6*max(1, math.Abs(hi)) {
					t.Errorf("output %s is constant (%g)", m.Graph.Tensors[id].Name, lo)
				}
			}
			t.Logf("%d nodes, %d tensors match ONNX Runtime", len(m.Graph.Nodes), n-bad)
		})
	}
}

// TestDeterministic: the same preset and seed give the same bytes; another seed other weights.
func TestDeterministic(t *testing.T) {
	for _, name := range []string{"densenet_tiny", "randwire_tiny", "gpt2_tiny", "inception_tiny"} {
		a, err := Build(name, Presets[name], 3)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Build(name, Presets[name], 3)
		c, _ := Build(name, Presets[name], 4)
		if !bytes.Equal(a, b) || bytes.Equal(a, c) || len(a) != len(c) {
			t.Errorf("%s: seed 3 twice equal %v, seed 3 vs 4 equal %v (lengths %d, %d)", name, bytes.Equal(a, b), bytes.Equal(a, c), len(a), len(c))
		}
	}
}

func opCount(m *ingest.Model) map[string]int {
	ops := map[string]int{}
	for _, n := range m.Graph.Nodes {
		ops[n.OpType]++
	}
	return ops
}

// TestDenseNetConcatsAllEarlierFeatures: layer j of a dense block reads one Concat of the
// block input and the j−1 earlier layers' outputs (the first a Concat of one input) (DenseNet-121: 6+12+24+16 layers, 121
// weighted layers in all).
func TestDenseNetConcatsAllEarlierFeatures(t *testing.T) {
	_, m := write(t, "densenet121_small", 1)
	d := Presets["densenet121_small"].(DenseNet)
	want := map[int]int{} // Concat arity → count
	for _, n := range d.Blocks {
		for j := 1; j <= n+1; j++ { // layers 1..n, then the block's output
			want[j]++
		}
	}
	got := map[int]int{}
	for _, n := range m.Graph.Nodes {
		if n.OpType == "Concat" {
			got[len(n.Inputs)]++
		}
	}
	for k, c := range want {
		if got[k] != c {
			t.Errorf("Concats of %d inputs: %d, want %d", k, got[k], c)
		}
	}
	ops := opCount(m)
	// conv0, 2 per dense layer, 3 transitions, and the classifier.
	if ops["Conv"] != 1+2*58+3 || ops["Gemm"] != 1 || ops["BatchNormalization"] != 58+3+1 {
		t.Errorf("ops %v", ops)
	}
}

// TestInceptionFactorised: Inception-v3's C blocks and D block have 1×7 and 7×1 convolutions
// (4 C blocks × 3 + 1 D block = 13 of each), the E blocks 1×3 and 3×1 (2 × 2 each).
func TestInceptionFactorised(t *testing.T) {
	_, m := write(t, "inception_v3_small", 1)
	kernels := map[string]int{}
	for _, n := range m.Graph.Nodes {
		if n.OpType == "Conv" {
			w := m.Graph.Tensors[n.Inputs[1]].Shape
			kernels[w[2].String()+"x"+w[3].String()]++
		}
	}
	if kernels["1x7"] != 13 || kernels["7x1"] != 13 || kernels["1x3"] != 4 || kernels["3x1"] != 4 || kernels["5x5"] != 3 {
		t.Errorf("kernels %v", kernels)
	}
	if n := opCount(m)["Concat"]; n != 11+4 {
		t.Errorf("%d Concats, want 15 (11 blocks, 2 splits in each E block)", n)
	}
}

// TestRandWireFollowsGraph: each stage has one SepConv per random-graph node, and one
// weighted-sum aggregation (Sigmoid) per node with several inputs, as the generator's graph.
func TestRandWireFollowsGraph(t *testing.T) {
	for _, name := range []string{"randwire_er_small", "randwire_ws_small", "randwire_tiny"} {
		r := Presets[name].(RandWire)
		_, m := write(t, name, 1)
		agg, sums := 0, 0
		for st := range r.Stages {
			edges, err := instances.RandomDAG(r.Model, r.N, r.P, r.K, r.M, randFor(r, st))
			if err != nil {
				t.Fatal(err)
			}
			indeg := make([]int, r.N)
			for _, e := range edges {
				indeg[e[1]]++
			}
			for _, d := range indeg {
				if d > 1 {
					agg++
					sums += d
				}
			}
		}
		ops := opCount(m)
		if ops["Sigmoid"] != agg || ops["Mul"] != sums || ops["Conv"] != 2*r.N*r.Stages+4 {
			t.Errorf("%s: ops %v, want %d Sigmoid, %d Mul, %d Conv", name, ops, agg, sums, 2*r.N*r.Stages+4)
		}
		if !strings.Contains(name, "tiny") && agg < r.N/2 {
			t.Errorf("%s: only %d of %d nodes aggregate", name, agg, r.N)
		}
	}
}

// TestGPT2Causal: the logits at position i depend on the tokens up to i only, and a padded
// (masked) last token changes no earlier position's logits but changes its own.
func TestGPT2Causal(t *testing.T) {
	needORT(t)
	p, _ := write(t, "gpt2_tiny", 1)
	c := Presets["gpt2_tiny"].(GPT2)
	s, err := ort.NewSession(p, []string{"input_ids", "attention_mask"}, []string{"logits"}, ort.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := func(ids, mask []int64) []float32 {
		o, err := s.Run(map[string]*ort.Tensor{"input_ids": i64(ids, 1, c.Seq), "attention_mask": i64(mask, 1, c.Seq)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return floats(o["logits"])
	}
	ids, ones := make([]int64, c.Seq), make([]int64, c.Seq)
	for i := range ids {
		ids[i], ones[i] = int64(7*i+3)%c.Vocab, 1
	}
	base := run(ids, ones)
	row := func(v []float32, i int64) []float32 { return v[i*c.Vocab : (i+1)*c.Vocab] }
	same := func(a, b []float32) bool {
		for i := range a {
			if math.Abs(float64(a[i]-b[i])) > 1e-5 {
				return false
			}
		}
		return true
	}
	j := c.Seq / 2
	ids2 := append([]int64(nil), ids...)
	ids2[j] = (ids2[j] + 1) % c.Vocab
	changed := run(ids2, ones)
	for i := range c.Seq {
		if eq := same(row(base, i), row(changed, i)); eq != (i < j) {
			t.Errorf("token %d changed: logits at %d equal %v, want %v", j, i, eq, i < j)
		}
	}
	mask := append([]int64(nil), ones...)
	mask[c.Seq-1] = 0
	masked := run(ids, mask)
	if !same(base[:(c.Seq-1)*c.Vocab], masked[:(c.Seq-1)*c.Vocab]) || same(row(base, c.Seq-1), row(masked, c.Seq-1)) {
		t.Error("masking the last token should change its logits only")
	}
}
