package emit

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/onnxpb"
)

// corpusDir is the shared model corpus (real architectures, small weights).
var corpusDir = filepath.Join("..", "..", "shared", "models")

// modelConfig is a corpus model loaded one way: with or without --dim bindings.
type modelConfig struct {
	name string // file name, plus the bindings
	path string
	dims map[string]int64
	// verifyDims binds what the stages leave symbolic when verifying.
	verifyDims map[string]int64
}

// corpusConfigs lists every corpus model; the dynamic-batch model appears twice, with
// --dim batch=2 and with batch left symbolic (verified at batch 3).
func corpusConfigs(t testing.TB) []modelConfig {
	t.Helper()
	var files []string
	filepath.WalkDir(corpusDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".onnx" {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Skip("model corpus not found at " + corpusDir)
	}
	sort.Strings(files)
	var out []modelConfig
	for _, p := range files {
		base := filepath.Base(p)
		if strings.Contains(base, "dynbatch") {
			out = append(out, modelConfig{name: base + "+batch=2", path: p, dims: map[string]int64{"batch": 2}})
			out = append(out, modelConfig{name: base, path: p, verifyDims: map[string]int64{"batch": 3}})
			continue
		}
		out = append(out, modelConfig{name: base, path: p})
	}
	return out
}

var modelCache = map[string]*ingest.Model{}

func loadConfig(t testing.TB, c modelConfig) *ingest.Model {
	t.Helper()
	key := c.name + "|" + c.path
	if m := modelCache[key]; m != nil {
		return m
	}
	m, err := ingest.Load(c.path, ingest.Options{Dims: c.dims})
	if err != nil {
		t.Fatal(err)
	}
	modelCache[key] = m
	return m
}

// split is one assignment to test.
type split struct {
	kind  string
	stage []int
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
	return stagesFromBounds(g, order, cuts)
}

// cutsAt cuts g.TopoOrder() right after the nodes at the chosen positions (best first),
// keeping k-1 distinct positions at least gap apart, topped up by equal-FLOP cuts.
func cutsAt(g *graph.Graph, k int, ranked []int, gap int) []int {
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
		eq, _ := EqualFLOPs(g, k)
		for i := 1; i < len(order) && len(bounds) < k-1; i++ {
			if eq[order[i]] != eq[order[i-1]] && far(i) {
				bounds = append(bounds, i)
			}
		}
	}
	sort.Ints(bounds)
	return stagesFromBounds(g, order, bounds)
}

// fanoutCuts: right after the nodes with the most consumers.
func fanoutCuts(g *graph.Graph, k int) []int {
	order := g.TopoOrder()
	pos := make([]int, len(order))
	for i := range order {
		pos[i] = i
	}
	sort.SliceStable(pos, func(a, b int) bool {
		return len(g.Succs(order[pos[a]])) > len(g.Succs(order[pos[b]]))
	})
	return cutsAt(g, k, pos, 1)
}

// widthCuts: where the most tensors cross a cut of the topological order (inside residual
// and attention blocks, where skip connections and masks are live).
func widthCuts(g *graph.Graph, k int) []int {
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
	return cutsAt(g, k, ranked, max(1, len(order)/(3*k)))
}

// weightCuts: right after a weight-only node whose consumer computes on activations; then
// every weight-only node is given the stage opposite its own, so that the assignment only
// stays acyclic because weight-only nodes go with their consumers.
func weightCuts(g *graph.Graph, k int) []int {
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
	stage := cutsAt(g, k, ranked, 1)
	for v := range g.Nodes {
		if g.Nodes[v].Static {
			stage[v] = k - 1 - stage[v]
		}
	}
	return stage
}

// splitsFor gives the assignments of the matrix for one model and k.
func splitsFor(g *graph.Graph, k int, seed int64) ([]split, error) {
	eq, err := EqualFLOPs(g, k)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewSource(seed))
	return []split{
		{"stages", eq},
		{"random1", randomCuts(g, k, rng)},
		{"random2", randomCuts(g, k, rng)},
		{"fanout", fanoutCuts(g, k)},
		{"weights", weightCuts(g, k)},
		{"width", widthCuts(g, k)},
	}, nil
}

func describe(g *graph.Graph, stage []int) string {
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

func writeSplit(t *testing.T, c modelConfig, k int) (string, *Manifest) {
	t.Helper()
	m := loadConfig(t, c)
	stage, err := EqualFLOPs(m.Graph, k)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	man, err := Write(m, &Assignment{Stage: stage, Split: SplitInfo{Method: "stages", RequestedStages: k}}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, man
}

func corpusModel(t testing.TB, name string) modelConfig {
	for _, c := range corpusConfigs(t) {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no corpus model %s", name)
	return modelConfig{}
}

// decoderModel is a decoder step in miniature: the past keys and the new tokens concatenated
// into the present (past + seq), projected, reduced and masked by an attention mask of the
// total length; the model's dims are tied (total = past + seq).
func decoderModel(t testing.TB) string {
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
		Input: []*onnxpb.ValueInfoProto{vinfo("past_key", graph.Float, "batch", "past", 8), vinfo("x", graph.Float, "batch", "seq", 8),
			vinfo("attention_mask", graph.Float, "batch", "total")},
		Output:      []*onnxpb.ValueInfoProto{vinfo("y", graph.Float, "batch", "total"), vinfo("present", graph.Float, "batch", "total", 8)},
		Initializer: []*onnxpb.TensorProto{floatTensor("w", []int64{8, 8}, w...)},
		Node: []*onnxpb.NodeProto{
			node("Concat", "concat", []string{"past_key", "x"}, []string{"present"}, one("axis", 1)),
			node("MatMul", "proj", []string{"present", "w"}, []string{"h"}),
			node("ReduceMean", "mean", []string{"h"}, []string{"s"}, ints("axes", 2), one("keepdims", 0)),
			node("Mul", "mask", []string{"s", "attention_mask"}, []string{"y"}),
		},
	}
	return writeModel(t, &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: opsets(), Graph: g})
}
