package feeds

import (
	"errors"
	"maps"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/verify/npy"
)

// decoderManifest is a manifest whose stages kept batch, seq and past symbolic (the plan
// bound seq=8 and past=16) and fixed hidden=4: ids [batch, seq] int64, mask
// [batch, total] int64, x [batch, ?] float (an unnamed dimension).
func decoderManifest() *emit.Manifest {
	sym := func(p string) graph.Dim { return graph.Dim{Value: -1, Param: p} }
	m := &emit.Manifest{}
	m.Model.SymbolicDims = []string{"batch", "seq", "past", "total"}
	m.Model.Dims = map[string]int64{"seq": 8, "past": 16, "hidden": 4}
	m.Model.Inputs = []emit.TensorRef{
		{Name: "ids", DType: "int64", Shape: emit.Shape{sym("batch"), sym("seq")}},
		{Name: "mask", DType: "int64", Shape: emit.Shape{sym("batch"), sym("total")}},
		{Name: "x", DType: "float32", Shape: emit.Shape{sym("batch"), {Value: -1}, {Value: 4}}},
	}
	return m
}

func writeNpy(t *testing.T, a *npy.Array) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.npy")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := npy.Write(f, a); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBind: the sizes of a run, in their order of precedence (input files, input shapes,
// dims, the plan's sizes, DefaultDim), which of them are loose defaults, and the files'
// shapes binding inputs with unnamed dimensions.
func TestBind(t *testing.T) {
	man := decoderManifest()
	ids := writeNpy(t, &npy.Array{DType: graph.Int64, Shape: []int64{3, 5}, Data: make([]byte, 8*15)})
	x := writeNpy(t, &npy.Array{DType: graph.Float, Shape: []int64{3, 7, 4}, Data: make([]byte, 4*84)})
	for _, tc := range []struct {
		name        string
		opt         Options
		dims        map[string]int64
		set         []string
		inputShapes map[string][]int64
	}{
		{"nothing given", Options{},
			map[string]int64{"hidden": 4, "batch": DefaultDim, "seq": 8, "past": 16, "total": DefaultDim}, nil, nil},
		{"dims", Options{Dims: map[string]int64{"past": 0, "batch": 2}},
			map[string]int64{"hidden": 4, "batch": 2, "seq": 8, "past": 0, "total": DefaultDim}, []string{"batch", "past"}, nil},
		{"a file sizes batch and seq", Options{Inputs: map[string]string{"ids": ids}},
			map[string]int64{"hidden": 4, "batch": 3, "seq": 5, "past": 16, "total": DefaultDim}, []string{"batch", "seq"}, nil},
		{"a file with an unnamed dim binds its input's shape", Options{Inputs: map[string]string{"x": x}},
			map[string]int64{"hidden": 4, "batch": 3, "seq": 8, "past": 16, "total": DefaultDim}, []string{"batch"}, map[string][]int64{"x": {3, 7, 4}}},
		{"input shapes", Options{InputShapes: map[string][]int64{"mask": {2, 9}}},
			map[string]int64{"hidden": 4, "batch": 2, "seq": 8, "past": 16, "total": 9}, []string{"batch", "total"}, map[string][]int64{"mask": {2, 9}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Bind(man, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(s.Dims, tc.dims) {
				t.Errorf("dims %v, want %v", s.Dims, tc.dims)
			}
			set := map[string]bool{}
			for _, d := range tc.set {
				set[d] = true
			}
			if !maps.Equal(s.Set, set) {
				t.Errorf("set %v, want %v", s.Set, set)
			}
			explicit, defaults := s.Split()
			for _, d := range man.Model.SymbolicDims {
				if s.Loose[d] == set[d] {
					t.Errorf("dim %s: loose %v, set %v", d, s.Loose[d], set[d])
				}
				if _, ok := defaults[d]; ok != !set[d] {
					t.Errorf("dim %s: in defaults %v", d, ok)
				}
			}
			if explicit["hidden"] != 4 || len(explicit)+len(defaults) != len(s.Dims) {
				t.Errorf("split %v %v of %v", explicit, defaults, s.Dims)
			}
			if len(tc.inputShapes) != len(s.InputShapes) {
				t.Errorf("input shapes %v, want %v", s.InputShapes, tc.inputShapes)
			}
			for k, v := range tc.inputShapes {
				if !equal(s.InputShapes[k], v) {
					t.Errorf("input shapes %v, want %v", s.InputShapes, tc.inputShapes)
				}
			}
			for name := range tc.opt.Inputs {
				if s.Given[name] == nil {
					t.Errorf("input file of %s not kept", name)
				}
			}
		})
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBindErrors: every refusal is a usage *diag.Error naming the option as the caller
// does: the Go field without Names, the flag with the command's.
func TestBindErrors(t *testing.T) {
	man := decoderManifest()
	ids := writeNpy(t, &npy.Array{DType: graph.Int64, Shape: []int64{3, 5}, Data: make([]byte, 8*15)})
	floats := writeNpy(t, &npy.Array{DType: graph.Float, Shape: []int64{3, 5}, Data: make([]byte, 4*15)})
	rank3 := writeNpy(t, &npy.Array{DType: graph.Int64, Shape: []int64{3, 5, 1}, Data: make([]byte, 8*15)})
	x := writeNpy(t, &npy.Array{DType: graph.Float, Shape: []int64{3, 7, 5}, Data: make([]byte, 4*105)})
	mask := writeNpy(t, &npy.Array{DType: graph.Int64, Shape: []int64{2, 9}, Data: make([]byte, 8*18)})
	notNpy := filepath.Join(t.TempDir(), "x.txt")
	os.WriteFile(notNpy, []byte("text"), 0o644)
	flags := diag.Names{"Inputs": "--input", "InputShapes": "--input-shape", "Dims": "--dim"}
	for _, tc := range []struct {
		name      string
		opt       Options
		goSays    string // without Names
		flagSays  string // with the command's names
		aboutFlag string
	}{
		{"no such input", Options{Inputs: map[string]string{"nope": ids}},
			`Options.Inputs["nope"]: the model has no input "nope"`, `--input nope: the model has no input "nope"`, "--input"},
		{"not an npy file", Options{Inputs: map[string]string{"ids": notNpy}},
			`Options.Inputs["ids"]: `, `--input ids: `, "--input"},
		{"another type", Options{Inputs: map[string]string{"ids": floats}},
			"the file holds float32, the model wants int64", "--input ids: the file holds float32", "--input"},
		{"another rank", Options{Inputs: map[string]string{"ids": rank3}},
			"has rank 3", "--input ids: the file's shape [3 5 1] has rank 3", "--input"},
		{"a fixed dim differs", Options{Inputs: map[string]string{"x": x}},
			"does not fit the model's", "--input x: the file's shape [3 7 5] does not fit", "--input"},
		{"two files disagree", Options{Inputs: map[string]string{"ids": ids, "mask": mask}},
			"dimension batch is 2 here but 3 elsewhere", "--input mask: dimension batch is 2 here but 3 elsewhere", "--input"},
		{"input shape of no input", Options{InputShapes: map[string][]int64{"nope": {1}}},
			`Options.InputShapes["nope"]: the model has no input`, "--input-shape nope: the model has no input", "--input-shape"},
		{"input shape of another rank", Options{InputShapes: map[string][]int64{"ids": {1}}},
			"rank 1, the model's input is", "--input-shape ids: rank 1", "--input-shape"},
		{"input shape against a file", Options{Inputs: map[string]string{"ids": ids}, InputShapes: map[string][]int64{"mask": {2, 9}}},
			"dimension batch is 2 here but 3 elsewhere", "--input-shape mask: dimension batch is 2 here but 3 elsewhere", "--input-shape"},
		{"dim against a file", Options{Inputs: map[string]string{"ids": ids}, Dims: map[string]int64{"seq": 6}},
			`Options.Dims["seq"] = 6 contradicts the input files (5)`, "--dim seq=6 contradicts the input files (5)", ""},
		{"dim the stages fixed", Options{Dims: map[string]int64{"hidden": 4}},
			`Options.Dims["hidden"]: not a symbolic dimension left in the stages`, "--dim hidden: not a symbolic dimension left", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, names := range []diag.Names{nil, flags} {
				opt := tc.opt
				opt.Names = names
				_, err := Bind(man, opt)
				var de *diag.Error
				if !errors.As(err, &de) || de.Kind != diag.KindUsage {
					t.Fatalf("names %v: %v, want a usage *diag.Error", names, err)
				}
				want := tc.goSays
				if names != nil {
					want = tc.flagSays
				}
				if !strings.Contains(err.Error(), want) {
					t.Errorf("names %v: %q, want %q in it", names, err, want)
				}
				if names == nil && strings.Contains(err.Error(), "--") {
					t.Errorf("a Go caller is told a flag: %q", err)
				}
				if tc.aboutFlag != "" && names != nil && de.Subject != (diag.Subject{Kind: diag.Option, Name: tc.aboutFlag}) {
					t.Errorf("subject %+v, want option %s", de.Subject, tc.aboutFlag)
				}
				if tc.aboutFlag == "" && de.Subject.Kind != diag.Dim {
					t.Errorf("subject %+v, want the dim", de.Subject)
				}
			}
		})
	}
}

// graphOf is a graph with the given inputs (all of known shape), where ids index a
// 10-row table through a Cast and a Reshape.
func graphOf(t *testing.T) *graph.Graph {
	t.Helper()
	g := &graph.Graph{}
	add := func(name string, dt graph.DType, dims ...int64) int {
		g.Tensors = append(g.Tensors, graph.Tensor{Name: name, DType: dt, Shape: graph.ShapeOf(dims...)})
		return len(g.Tensors) - 1
	}
	ids := add("ids", graph.Int64, 2, 3)
	mask := add("attention_mask", graph.Int64, 2, 3)
	x := add("x", graph.Float, 4, 5)
	h := add("h", graph.Float16, 7)
	b := add("flag", graph.Bool, 6)
	small := add("count", graph.Int32, 5)
	table := add("table", graph.Float, 10, 8)
	cast := add("ids32", graph.Int32, 2, 3)
	shaped := add("ids_flat", graph.Int32, 6)
	shape := add("shape", graph.Int64, 1)
	out := add("emb", graph.Float, 6, 8)
	g.Inputs = []int{ids, mask, x, h, b, small}
	node := func(op string, ins []int, outs ...int) {
		g.Nodes = append(g.Nodes, graph.Node{Name: op, OpType: op, Inputs: ins, Outputs: outs})
		for _, i := range ins {
			g.Tensors[i].Consumers = append(g.Tensors[i].Consumers, len(g.Nodes)-1)
		}
	}
	node("Cast", []int{ids}, cast)
	node("Reshape", []int{cast, shape}, shaped)
	node("Gather", []int{table, shaped}, out)
	return g
}

// TestRandom: values are reproducible by seed, one stream per input, in the ranges Ranges
// chooses (an index into a 10-row table below 10, a mask all ones, floats in [-1, 1)), and
// an input over the size limit is refused before anything is made.
func TestRandom(t *testing.T) {
	g := graphOf(t)
	r := Ranges(g)
	if r["ids"] != (Range{Lo: 0, Hi: 10, Why: "indexes table"}) || r["attention_mask"].Lo != 1 || r["count"].Hi != DefaultIntHigh || r["x"].Lo != -1 || r["flag"].Hi != 2 {
		t.Fatalf("ranges %+v", r)
	}
	a, err := Random(g, 7, 1<<20, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Random(g, 7, 1<<20, map[string]bool{"x": true}, nil)
	c, _ := Random(g, 8, 1<<20, nil, nil)
	if b["x"] != nil || string(b["ids"].Data) != string(a["ids"].Data) {
		t.Errorf("skipping x changed the other inputs, or x was made")
	}
	if string(c["x"].Data) == string(a["x"].Data) {
		t.Errorf("seeds 7 and 8 give the same x")
	}
	for _, v := range []int64{0, 1, 2, 3, 4, 5} {
		got := int64(a["ids"].Data[8*v])
		if got < 0 || got >= 10 || a["attention_mask"].Data[8*v] != 1 {
			t.Errorf("ids %d, mask %d", got, a["attention_mask"].Data[8*v])
		}
	}
	for i := 0; i < 20; i++ {
		f := math.Float32frombits(uint32(a["x"].Data[4*i]) | uint32(a["x"].Data[4*i+1])<<8 | uint32(a["x"].Data[4*i+2])<<16 | uint32(a["x"].Data[4*i+3])<<24)
		if f < -1 || f >= 1 {
			t.Errorf("x[%d] = %g", i, f)
		}
	}
	if len(a["h"].Data) != 14 || len(a["flag"].Data) != 6 || len(a["count"].Data) != 20 {
		t.Errorf("sizes %d %d %d", len(a["h"].Data), len(a["flag"].Data), len(a["count"].Data))
	}
	_, err = Random(g, 7, 40, nil, nil)
	var de *diag.Error
	if !errors.As(err, &de) || de.Kind != diag.KindInput || de.Subject != (diag.Subject{Kind: diag.Tensor, Name: "ids"}) {
		t.Errorf("over the limit: %v", err)
	}
	// Tensor: the same values for the same stream; integers 0 or 1.
	x1, _ := Tensor(rand.New(rand.NewSource(3)), &g.Tensors[g.Inputs[0]])
	x2, _ := Tensor(rand.New(rand.NewSource(3)), &g.Tensors[g.Inputs[0]])
	if string(x1.Data) != string(x2.Data) {
		t.Errorf("Tensor is not reproducible")
	}
	for i := 0; i < len(x1.Data); i += 8 {
		if x1.Data[i] > 1 {
			t.Errorf("Tensor integer %d", x1.Data[i])
		}
	}
	if _, err := Tensor(rand.New(rand.NewSource(3)), &graph.Tensor{Name: "s", DType: graph.Float, Shape: graph.Shape{{Value: -1, Param: "n"}}}); err == nil {
		t.Errorf("Tensor of an unbound shape made a value")
	}
}

// TestBatch: the batch is the items stacked along the leading axis, input by input, and the
// same seed gives the same values.
func TestBatch(t *testing.T) {
	ins := []ort.IOInfo{{Name: "x", DType: graph.Float, Shape: []int64{1, 3, 2}}, {Name: "ids", DType: graph.Int64, Shape: []int64{1, 4}}}
	items, batch, err := Batch(5, ins, 3)
	if err != nil {
		t.Fatal(err)
	}
	again, _, _ := Batch(5, ins, 3)
	for _, in := range ins {
		b := batch[in.Name]
		if b.Shape[0] != 3 || len(b.Shape) != len(in.Shape) || b.DType != in.DType {
			t.Fatalf("%s: batch shape %v", in.Name, b.Shape)
		}
		var stacked []byte
		for k, it := range items {
			if !equal(it[in.Name].Shape, in.Shape) || string(it[in.Name].Data) != string(again[k][in.Name].Data) {
				t.Errorf("%s item %d: shape %v, or not reproducible", in.Name, k, it[in.Name].Shape)
			}
			stacked = append(stacked, it[in.Name].Data...)
		}
		if string(stacked) != string(b.Data) {
			t.Errorf("%s: the batch is not its items stacked", in.Name)
		}
	}
	if string(items[0]["x"].Data) == string(items[1]["x"].Data) {
		t.Errorf("two items are equal")
	}
	if _, _, err := Batch(5, []ort.IOInfo{{Name: "s", DType: graph.Float}}, 2); err == nil {
		t.Errorf("a scalar input was batched")
	}
}
