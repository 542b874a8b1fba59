// Package testmodel holds what the tests of emit, verify, report and deploy share: the
// shared model corpus (each model loaded once per test binary), small synthetic ONNX models
// built in code, and the stage assignments of the split matrix. It is for tests only, and
// imports neither emit (whose own tests use it) nor ONNX Runtime.
//
// What goes in: a testing.TB, corpus file names, graphs. What comes out: loaded models,
// model files in the test's temporary directory, and per-node stage labels.
package testmodel

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// CorpusDir is the shared model corpus (real architectures, small weights).
var CorpusDir = corpusDir()

// Config is a corpus model loaded one way: with or without --dim bindings.
type Config struct {
	Name string // file name, plus the bindings
	Path string
	Dims map[string]int64
	// verifyDims binds what the stages leave symbolic when verifying.
	VerifyDims map[string]int64
}

// Configs lists every corpus model; the dynamic-batch model appears twice, with
// --dim batch=2 and with batch left symbolic (verified at batch 3).
func Configs(t testing.TB) []Config {
	t.Helper()
	var files []string
	filepath.WalkDir(CorpusDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".onnx" {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Skip("model corpus not found at " + CorpusDir)
	}
	sort.Strings(files)
	var out []Config
	for _, p := range files {
		base := filepath.Base(p)
		if strings.Contains(base, "dynbatch") {
			out = append(out, Config{Name: base + "+batch=2", Path: p, Dims: map[string]int64{"batch": 2}})
			out = append(out, Config{Name: base, Path: p, VerifyDims: map[string]int64{"batch": 3}})
			continue
		}
		out = append(out, Config{Name: base, Path: p})
	}
	return out
}

var modelCache = map[string]*ingest.Model{}

// Load loads c once per test binary (later calls share the model).
func Load(t testing.TB, c Config) *ingest.Model {
	t.Helper()
	key := c.Name + "|" + c.Path
	if m := modelCache[key]; m != nil {
		return m
	}
	m, err := ingest.Load(c.Path, ingest.Options{Dims: c.Dims})
	if err != nil {
		t.Fatal(err)
	}
	modelCache[key] = m
	return m
}

// Split is one assignment to test.
type Split struct {
	Kind  string
	Stage []int
}

// randomCuts cuts a random topological order at k-1 random places.
func randomCuts(g *graph.Graph, k int, rng *rand.Rand) []int {
	prio := make([]float64, len(g.Nodes))
	for i := range prio {
		prio[i] = rng.Float64()
	}
	order := g.KahnOrder(prio)
	cuts := rng.Perm(len(order) - 1)[:k-1]
	for i := range cuts {
		cuts[i]++
	}
	sort.Ints(cuts)
	return StagesFromBounds(g, order, cuts)
}

// cutsAt cuts g.TopoOrder() right after the nodes at the chosen positions (best first),
// keeping k-1 distinct positions at least gap apart, topped up by equal-FLOP cuts.
func cutsAt(g *graph.Graph, k int, ranked []int, gap int, equalFLOPs func(*graph.Graph, int) ([]int, error)) []int {
	order := g.TopoOrder()
	var bounds []int
	far := func(b int) bool {
		for _, x := range bounds {
			if x-b < gap && b-x < gap {
				return false
			}
		}
		return true
	}
	for _, p := range ranked {
		if len(bounds) == k-1 {
			break
		}
		b := p + 1
		if b < len(order) && far(b) {
			bounds = append(bounds, b)
		}
	}
	if len(bounds) < k-1 {
		eq, _ := equalFLOPs(g, k)
		for i := 1; i < len(order) && len(bounds) < k-1; i++ {
			if eq[order[i]] != eq[order[i-1]] && far(i) {
				bounds = append(bounds, i)
			}
		}
	}
	sort.Ints(bounds)
	return StagesFromBounds(g, order, bounds)
}

// fanoutCuts: right after the nodes with the most consumers.
func fanoutCuts(g *graph.Graph, k int, equalFLOPs func(*graph.Graph, int) ([]int, error)) []int {
	order := g.TopoOrder()
	pos := make([]int, len(order))
	for i := range order {
		pos[i] = i
	}
	sort.SliceStable(pos, func(a, b int) bool {
		return len(g.Succs(order[pos[a]])) > len(g.Succs(order[pos[b]]))
	})
	return cutsAt(g, k, pos, 1, equalFLOPs)
}

// widthCuts: where the most tensors cross a cut of the topological order (inside residual
// and attention blocks, where skip connections and masks are live).
func widthCuts(g *graph.Graph, k int, equalFLOPs func(*graph.Graph, int) ([]int, error)) []int {
	order := g.TopoOrder()
	pos := make([]int, len(g.Nodes))
	for i, v := range order {
		pos[v] = i
	}
	width := make([]int, len(order))
	for t := range g.Tensors {
		tt := &g.Tensors[t]
		if tt.Producer < 0 || g.Nodes[tt.Producer].Static {
			continue
		}
		last := pos[tt.Producer]
		for _, c := range tt.Consumers {
			last = max(last, pos[c])
		}
		for i := pos[tt.Producer]; i < last; i++ {
			width[i]++ // crosses a cut right after position i
		}
	}
	ranked := make([]int, len(order)-1)
	for i := range ranked {
		ranked[i] = i
	}
	sort.SliceStable(ranked, func(a, b int) bool { return width[ranked[a]] > width[ranked[b]] })
	return cutsAt(g, k, ranked, max(1, len(order)/(3*k)), equalFLOPs)
}

// weightCuts: right after a weight-only node whose consumer computes on activations; then
// every weight-only node is given the stage opposite its own, so that the assignment only
// stays acyclic because weight-only nodes go with their consumers.
func weightCuts(g *graph.Graph, k int, equalFLOPs func(*graph.Graph, int) ([]int, error)) []int {
	order := g.TopoOrder()
	var ranked []int
	for i, v := range order {
		if !g.Nodes[v].Static {
			continue
		}
		for _, c := range g.Succs(v) {
			if !g.Nodes[c].Static {
				ranked = append(ranked, i)
				break
			}
		}
	}
	stage := cutsAt(g, k, ranked, 1, equalFLOPs)
	for v := range g.Nodes {
		if g.Nodes[v].Static {
			stage[v] = k - 1 - stage[v]
		}
	}
	return stage
}

// SplitsFor gives the assignments of the matrix for one model and k.
func SplitsFor(g *graph.Graph, k int, seed int64, equalFLOPs func(*graph.Graph, int) ([]int, error)) ([]Split, error) {
	eq, err := equalFLOPs(g, k)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewSource(seed))
	return []Split{
		{"stages", eq},
		{"random1", randomCuts(g, k, rng)},
		{"random2", randomCuts(g, k, rng)},
		{"fanout", fanoutCuts(g, k, equalFLOPs)},
		{"weights", weightCuts(g, k, equalFLOPs)},
		{"width", widthCuts(g, k, equalFLOPs)},
	}, nil
}

// Describe lists how many nodes each stage of an assignment holds ("0:12 1:30").
func Describe(g *graph.Graph, stage []int) string {
	counts := map[int]int{}
	for _, s := range stage {
		counts[s]++
	}
	keys := make([]int, 0, len(counts))
	for s := range counts {
		keys = append(keys, s)
	}
	sort.Ints(keys)
	var parts []string
	for _, s := range keys {
		parts = append(parts, fmt.Sprintf("%d:%d", s, counts[s]))
	}
	return strings.Join(parts, " ")
}

// Corpus is the configuration of the corpus model called name (Configs' Name); a name it
// lacks fails the test.
func Corpus(t testing.TB, name string) Config {
	for _, c := range Configs(t) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no corpus model %s", name)
	return Config{}
}

// DecoderModel is a decoder step in miniature: the past keys and the new tokens concatenated
// into the present (past + seq), projected, reduced and masked by an attention mask of the
// total length; the model's dims are tied (total = past + seq).
func DecoderModel(t testing.TB) string {
	w := make([]float32, 64)
	for i := range w {
		w[i] = float32(i%7) - 3
	}
	ints := func(name string, v ...int64) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
	}
	one := func(name string, v int64) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
	}
	g := &onnxpb.GraphProto{
		Name: proto.String("decoder"),
		Input: []*onnxpb.ValueInfoProto{VInfo("past_key", graph.Float, "batch", "past", 8), VInfo("x", graph.Float, "batch", "seq", 8),
			VInfo("attention_mask", graph.Float, "batch", "total")},
		Output:      []*onnxpb.ValueInfoProto{VInfo("y", graph.Float, "batch", "total"), VInfo("present", graph.Float, "batch", "total", 8)},
		Initializer: []*onnxpb.TensorProto{FloatTensor("w", []int64{8, 8}, w...)},
		Node: []*onnxpb.NodeProto{
			Node("Concat", "concat", []string{"past_key", "x"}, []string{"present"}, one("axis", 1)),
			Node("MatMul", "proj", []string{"present", "w"}, []string{"h"}),
			Node("ReduceMean", "mean", []string{"h"}, []string{"s"}, ints("axes", 2), one("keepdims", 0)),
			Node("Mul", "mask", []string{"s", "attention_mask"}, []string{"y"}),
		},
	}
	return WriteModel(t, &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: Opsets(), Graph: g})
}

// VInfo is a value info of element type dt; dims are sizes (int) or symbolic names (string).
func VInfo(name string, dt graph.DType, dims ...any) *onnxpb.ValueInfoProto {
	sh := &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{}}
	for _, d := range dims {
		dim := &onnxpb.TensorShapeProto_Dimension{}
		switch v := d.(type) {
		case int:
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(v)}
		case string:
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: v}
		}
		sh.Dim = append(sh.Dim, dim)
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(dt)), Shape: sh}}}}
}

// Node is a node of the default domain.
func Node(op, name string, ins, outs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(name), Input: ins, Output: outs, Attribute: attrs}
}

// FloatTensor is a float32 initializer.
func FloatTensor(name string, dims []int64, vals ...float32) *onnxpb.TensorProto {
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return &onnxpb.TensorProto{Name: proto.String(name), Dims: dims, DataType: proto.Int32(int32(graph.Float)), RawData: raw}
}

// GraphAttr is a graph attribute (an If branch, a Loop or Scan body).
func GraphAttr(name string, g *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: g}
}

// WriteModel writes mp into the test's temporary directory and returns its path.
func WriteModel(t testing.TB, mp *onnxpb.ModelProto) string {
	t.Helper()
	b, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Opsets is opset 17 of the default domain, plus extra.
func Opsets(extra ...*onnxpb.OperatorSetIdProto) []*onnxpb.OperatorSetIdProto {
	return append([]*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}}, extra...)
}

// ControlFlowModel: x → Relu → a; If(cond) { a + w } else { a − w } → y (captures a and
// the weight w); local.Square(y) → z (a model-local function); Sigmoid(w2) → s, a
// weight-only node read by two later nodes; outputs z, z2 = z·s + a, the input x itself
// and the weight w.
func ControlFlowModel(t testing.TB) string {
	w := FloatTensor("w", []int64{2, 3}, 1, 2, 3, 4, 5, 6)
	w2 := FloatTensor("w2", []int64{2, 3}, -1, 0.5, 2, -3, 0.25, 1)
	thenG := &onnxpb.GraphProto{Name: proto.String("then"),
		Node:   []*onnxpb.NodeProto{Node("Add", "then_add", []string{"a", "w"}, []string{"t_out"})},
		Output: []*onnxpb.ValueInfoProto{VInfo("t_out", graph.Float, 2, 3)}}
	elseG := &onnxpb.GraphProto{Name: proto.String("else"),
		Node:   []*onnxpb.NodeProto{Node("Sub", "else_sub", []string{"a", "w"}, []string{"e_out"})},
		Output: []*onnxpb.ValueInfoProto{VInfo("e_out", graph.Float, 2, 3)}}
	square := &onnxpb.FunctionProto{Name: proto.String("Square"), Domain: proto.String("local"),
		Input: []string{"X"}, Output: []string{"Y"},
		Node:        []*onnxpb.NodeProto{Node("Mul", "sq", []string{"X", "X"}, []string{"Y"})},
		OpsetImport: Opsets()}
	unused := &onnxpb.FunctionProto{Name: proto.String("Unused"), Domain: proto.String("local"),
		Input: []string{"X"}, Output: []string{"Y"},
		Node:        []*onnxpb.NodeProto{Node("Neg", "n", []string{"X"}, []string{"Y"})},
		OpsetImport: Opsets()}
	g := &onnxpb.GraphProto{Name: proto.String("cf"),
		Input: []*onnxpb.ValueInfoProto{VInfo("x", graph.Float, 2, 3), VInfo("cond", graph.Bool)},
		Output: []*onnxpb.ValueInfoProto{VInfo("z", graph.Float, 2, 3), VInfo("z2", graph.Float, 2, 3),
			VInfo("x", graph.Float, 2, 3), VInfo("w", graph.Float, 2, 3)},
		Initializer: []*onnxpb.TensorProto{w, w2},
		Node: []*onnxpb.NodeProto{
			Node("Relu", "relu", []string{"x"}, []string{"a"}),
			Node("Sigmoid", "sig_w2", []string{"w2"}, []string{"s"}),
			Node("If", "if", []string{"cond"}, []string{"y"}, GraphAttr("then_branch", thenG), GraphAttr("else_branch", elseG)),
			{OpType: proto.String("Square"), Domain: proto.String("local"), Name: proto.String("square"), Input: []string{"y"}, Output: []string{"z"}},
			Node("Mul", "mul_s", []string{"z", "s"}, []string{"zs"}),
			Node("Add", "add_a", []string{"zs", "a"}, []string{"z2_pre"}),
			Node("Mul", "mul_s2", []string{"z2_pre", "s"}, []string{"z2"}),
		},
	}
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: Opsets(&onnxpb.OperatorSetIdProto{Domain: proto.String("local"), Version: proto.Int64(1)}),
		ProducerName: proto.String("test"), Graph: g, Functions: []*onnxpb.FunctionProto{square, unused},
		MetadataProps: []*onnxpb.StringStringEntryProto{{Key: proto.String("author"), Value: proto.String("tests")}}}
	return WriteModel(t, mp)
}

// LoadPath loads the model at p.
func LoadPath(t testing.TB, p string) *ingest.Model {
	t.Helper()
	m, err := ingest.Load(p, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Metadata is mp's metadata_props as a map.
func Metadata(mp *onnxpb.ModelProto) map[string]string {
	out := map[string]string{}
	for _, kv := range mp.MetadataProps {
		out[kv.GetKey()] = kv.GetValue()
	}
	return out
}

// Labels gives every node of g the stage byName gives its name; a node it does not name
// fails the test.
func Labels(t *testing.T, g *graph.Graph, byName map[string]int) []int {
	t.Helper()
	stage := make([]int, len(g.Nodes))
	for v := range g.Nodes {
		s, ok := byName[g.Nodes[v].Name]
		if !ok {
			t.Fatalf("no stage for %s", g.Nodes[v].Name)
		}
		stage[v] = s
	}
	return stage
}

// ListTree lists every path under root (relative, sorted), links included, not followed.
func ListTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Errorf("walking %s: %v", p, err)
			return nil
		}
		if p != root {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// StagesFromBounds gives order[bounds[i-1]:bounds[i]] stage i.
func StagesFromBounds(g *graph.Graph, order, bounds []int) []int {
	stage := make([]int, len(g.Nodes))
	s := 0
	for i, v := range order {
		for s < len(bounds) && i >= bounds[s] {
			s++
		}
		stage[v] = s
	}
	return stage
}

// CorpusDir is ../shared/models beside the repository, found from this file's path.
func corpusDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return filepath.Join("..", "..", "shared", "models")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "models")
}
