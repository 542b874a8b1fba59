package blocks_test

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/graph/blocks"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/llamagen"
)

// spec records a graph so that it can be built with its nodes in any order.
type spec struct {
	inputs, inits, outputs []string
	shapes                 map[string]graph.Shape
	nodes                  []nodeSpec
}

type nodeSpec struct {
	name, op string
	in, out  []string
	flops    int64
}

func newSpec() *spec { return &spec{shapes: map[string]graph.Shape{}} }

func dims(d ...int64) graph.Shape {
	s := make(graph.Shape, len(d))
	for i, x := range d {
		s[i] = graph.Static(x)
	}
	return s
}

func (s *spec) input(name string, shape graph.Shape) string {
	s.inputs = append(s.inputs, name)
	s.shapes[name] = shape
	return name
}

func (s *spec) init(name string, shape graph.Shape) string {
	s.inits = append(s.inits, name)
	s.shapes[name] = shape
	return name
}

// node adds a node with one output named after it and returns the output.
func (s *spec) node(name, op string, in ...string) string {
	s.nodes = append(s.nodes, nodeSpec{name: name, op: op, in: in, out: []string{name + ":0"}})
	return name + ":0"
}

func (s *spec) shape(t string, shape graph.Shape) string {
	s.shapes[t] = shape
	return t
}

func (s *spec) flops(f int64) { s.nodes[len(s.nodes)-1].flops = f }

// build makes the graph, adding the nodes in a random order when rng is not nil.
func (s *spec) build(t testing.TB, rng *rand.Rand) *graph.Graph {
	t.Helper()
	b := graph.NewBuilder("test")
	for _, n := range s.inputs {
		b.AddInput(n)
	}
	for _, n := range s.inits {
		b.AddInitializer(n)
	}
	order := make([]int, len(s.nodes))
	for i := range order {
		order[i] = i
	}
	if rng != nil {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	for _, i := range order {
		n := s.nodes[i]
		id := b.AddNode(n.name, n.op, "", n.in, n.out, nil, nil)
		b.NodeRef(id).FLOPs = n.flops
	}
	for _, n := range s.outputs {
		b.AddOutput(n)
	}
	for name, shape := range s.shapes {
		tr := b.TensorRef(b.Tensor(name))
		tr.DType, tr.Shape = graph.Float, shape
		if n, err := shape.NumElements(); err == nil {
			tr.Bytes = 4 * n
		}
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

const (
	seqLen, hidden, ffn, vocab = 4, 8, 16, 32
)

// decoder describes a Llama-like decoder of L layers: an embedding, a causal mask built
// once from attention_mask and the shape of input_ids, rotary cos and sin gathered once by
// position_ids, and layers of RMSNorm, attention with rotary embeddings and the mask, a
// residual Add, RMSNorm, a SwiGLU MLP and a residual Add. With kv, every layer also reads
// its past keys and values and writes the present ones (graph inputs and outputs); with
// fromHidden the mask takes its length from the shape of the embedding's output.
func decoder(L int, kv, fromHidden bool) *spec { return decoderHT(L, kv, fromHidden, false) }

// decoderHT is decoder; with headTail its first layer scales the normalized input of its
// attention once more and its last layer activates its MLP's output once more: the first and
// last layers differ from the others by a head or tail op.
func decoderHT(L int, kv, fromHidden, headTail bool) *spec {
	s := newSpec()
	act := dims(1, seqLen, hidden)
	ids := s.input("input_ids", dims(1, seqLen))
	am := s.input("attention_mask", dims(1, seqLen))
	pos := s.input("position_ids", dims(1, seqLen))
	h := s.shape(s.node("embed/Gather", "Gather", s.init("embed.weight", dims(vocab, hidden)), ids), act)
	lengthOf := ids
	if fromHidden {
		lengthOf = h
	}
	// The mask: [1,1,S,S] from attention_mask and a causal part.
	m := s.node("mask/Unsqueeze", "Unsqueeze", am, s.init("mask.axes", dims(2)))
	m = s.node("mask/Cast", "Cast", m)
	m = s.node("mask/Sub", "Sub", s.init("mask.one", dims()), m)
	m = s.node("mask/Mul", "Mul", m, s.init("mask.min", dims()))
	s.flops(10)
	n := s.node("mask/Shape", "Shape", lengthOf)
	n = s.node("mask/Gather", "Gather", n, s.init("mask.idx", dims()))
	r := s.node("mask/Range", "Range", s.init("mask.zero", dims()), n, s.init("mask.step", dims()))
	rq := s.node("mask/Unsqueeze_1", "Unsqueeze", r, s.init("mask.axes1", dims(1)))
	c := s.node("mask/Greater", "Greater", rq, r)
	c = s.node("mask/Where", "Where", c, s.init("mask.neg", dims()), s.init("mask.zerof", dims()))
	s.flops(16)
	mask := s.shape(s.node("mask/Add", "Add", m, c), dims(1, 1, seqLen, seqLen))
	s.flops(16)
	// Rotary tables.
	cos := s.node("rope/Gather", "Gather", s.init("cos_cache", dims(16, hidden)), pos)
	cos = s.shape(s.node("rope/Unsqueeze", "Unsqueeze", cos, s.init("rope.axes", dims(1))), dims(1, 1, seqLen, hidden))
	sin := s.node("rope/Gather_1", "Gather", s.init("sin_cache", dims(16, hidden)), pos)
	sin = s.shape(s.node("rope/Unsqueeze_1", "Unsqueeze", sin, "rope.axes"), dims(1, 1, seqLen, hidden))
	rms := func(p, x, w string) string {
		sq := s.node(p+"/Mul", "Mul", x, x)
		ms := s.node(p+"/ReduceMean", "ReduceMean", sq)
		ms = s.node(p+"/Add", "Add", ms, s.init(p+".eps", dims()))
		ms = s.node(p+"/Sqrt", "Sqrt", ms)
		y := s.node(p+"/Div", "Div", x, ms)
		return s.node(p+"/Mul_1", "Mul", y, s.init(w, dims(hidden)))
	}
	rot := func(p, x string) string {
		a := s.node(p+"/Mul", "Mul", x, cos)
		b := s.node(p+"/Neg", "Neg", x)
		b = s.node(p+"/Mul_1", "Mul", b, sin)
		return s.node(p+"/Add", "Add", a, b)
	}
	for i := 0; i < L; i++ {
		p := fmt.Sprintf("layers.%d", i)
		w := func(name string, d ...int64) string { return s.init(p+"."+name, dims(d...)) }
		x := rms(p+"/input_layernorm", h, p+".ln1")
		if headTail && i == 0 {
			x = s.node(p+"/scale", "Mul", x, w("scale0", hidden))
		}
		q := s.node(p+"/q_proj", "MatMul", x, w("q", hidden, hidden))
		s.flops(512)
		k := s.node(p+"/k_proj", "MatMul", x, w("k", hidden, hidden))
		v := s.node(p+"/v_proj", "MatMul", x, w("v", hidden, hidden))
		q, k = rot(p+"/rope_q", q), rot(p+"/rope_k", k)
		if kv {
			past := s.input(fmt.Sprintf("past.%d.key", i), dims(1, 2, hidden))
			k = s.node(p+"/present_k", "Concat", past, k)
			s.outputs = append(s.outputs, k)
			past = s.input(fmt.Sprintf("past.%d.value", i), dims(1, 2, hidden))
			v = s.node(p+"/present_v", "Concat", past, v)
			s.outputs = append(s.outputs, v)
		}
		kt := s.node(p+"/Transpose", "Transpose", k)
		sc := s.node(p+"/MatMul", "MatMul", q, kt)
		sc = s.node(p+"/Div", "Div", sc, w("scale"))
		sc = s.node(p+"/Add", "Add", sc, mask)
		sc = s.node(p+"/Softmax", "Softmax", sc)
		o := s.node(p+"/MatMul_1", "MatMul", sc, v)
		o = s.node(p+"/o_proj", "MatMul", o, w("o", hidden, hidden))
		h = s.shape(s.node(p+"/Add_1", "Add", h, o), act)
		x = rms(p+"/post_attention_layernorm", h, p+".ln2")
		gate := s.node(p+"/gate_proj", "MatMul", x, w("gate", hidden, ffn))
		up := s.node(p+"/up_proj", "MatMul", x, w("up", hidden, ffn))
		sg := s.node(p+"/Sigmoid", "Sigmoid", gate)
		gate = s.node(p+"/Mul", "Mul", gate, sg)
		gate = s.node(p+"/Mul_1", "Mul", gate, up)
		d := s.node(p+"/down_proj", "MatMul", gate, w("down", ffn, hidden))
		if headTail && i == L-1 {
			d = s.node(p+"/tail", "Tanh", d)
		}
		h = s.shape(s.node(p+"/Add_2", "Add", h, d), act)
	}
	x := rms("norm", h, "norm.weight")
	s.outputs = append(s.outputs, s.node("lm_head", "MatMul", x, s.init("lm_head.weight", dims(hidden, vocab))))
	return s
}

// resnet describes a ResNet-like CNN: a stem, stages of bottleneck blocks (the first of each
// with a projection on the shortcut) of the given widths and counts, and a classifier.
func resnet(widths, counts []int64) *spec {
	s := newSpec()
	x := s.input("x", dims(1, 3, 32, 32))
	x = s.node("stem/Conv", "Conv", x, s.init("stem.w", dims(widths[0], 3, 7, 7)))
	x = s.node("stem/Relu", "Relu", x)
	x = s.node("stem/MaxPool", "MaxPool", x)
	cin := widths[0]
	for st, c := range widths {
		for b := int64(0); b < counts[st]; b++ {
			p := fmt.Sprintf("layer%d.%d", st+1, b)
			w := func(name string, d ...int64) string { return s.init(p+"."+name, dims(d...)) }
			y := s.node(p+"/conv1", "Conv", x, w("w1", c, cin, 1, 1))
			y = s.node(p+"/relu", "Relu", y)
			y = s.node(p+"/conv2", "Conv", y, w("w2", c, c, 3, 3))
			y = s.node(p+"/relu_1", "Relu", y)
			y = s.node(p+"/conv3", "Conv", y, w("w3", c, c, 1, 1))
			sc := x
			if b == 0 {
				sc = s.node(p+"/downsample", "Conv", x, w("wd", c, cin, 1, 1))
			}
			y = s.node(p+"/Add", "Add", y, sc)
			x = s.shape(s.node(p+"/relu_2", "Relu", y), dims(1, c, 8, 8))
			cin = c
		}
	}
	x = s.node("avgpool", "GlobalAveragePool", x)
	x = s.node("flatten", "Flatten", x)
	s.outputs = append(s.outputs, s.node("fc", "Gemm", x, s.init("fc.w", dims(10, cin)), s.init("fc.b", dims(10))))
	return s
}

// mlp describes n layers of MatMul, Add and Relu, then a classifier of another width.
func mlp(n int) *spec {
	s := newSpec()
	x := s.input("x", dims(1, hidden))
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("fc%d", i)
		x = s.node(p+"/MatMul", "MatMul", x, s.init(p+".w", dims(hidden, hidden)))
		x = s.node(p+"/Add", "Add", x, s.init(p+".b", dims(hidden)))
		x = s.shape(s.node(p+"/Relu", "Relu", x), dims(1, hidden))
	}
	x = s.node("out/MatMul", "MatMul", x, s.init("out.w", dims(hidden, 3)))
	s.outputs = append(s.outputs, s.node("out/Add", "Add", x, s.init("out.b", dims(3))))
	return s
}

// plain describes a chain without repetition.
func plain() *spec {
	s := newSpec()
	x := s.input("x", dims(1, 3, 8, 8))
	x = s.node("Conv", "Conv", x, s.init("w", dims(4, 3, 3, 3)))
	x = s.node("Relu", "Relu", x)
	x = s.node("MaxPool", "MaxPool", x)
	x = s.node("Flatten", "Flatten", x)
	x = s.node("Gemm", "Gemm", x, s.init("fc", dims(10, 64)))
	s.outputs = append(s.outputs, s.node("Softmax", "Softmax", x))
	return s
}

// names maps ids to names.
func nodeNames(g *graph.Graph, ids []int) []string {
	out := make([]string, len(ids))
	for i, v := range ids {
		out[i] = g.Nodes[v].Name
	}
	sort.Strings(out)
	return out
}

func tensorName(g *graph.Graph, t int) string {
	if t < 0 {
		return "-"
	}
	return g.Tensors[t].Name
}

// summary is a Result in names, for comparisons across relabelled graphs.
type summary struct {
	Blocks             []blockSummary
	Prologue, Epilogue []string
	Shared             []sharedSummary
	Unit               int
	Stream             []string
}

type blockSummary struct {
	Nodes          []string
	In, Out        string
	InBytes, Bytes int64
	FLOPs          int64
	Kind           int
	Repeated       bool
}

type sharedSummary struct {
	Tensor     string
	Readers    []int
	Cone       []string
	ConeFLOPs  int64
	Bytes      int64
	InputsOnly bool
}

func summarize(g *graph.Graph, r *blocks.Result) summary {
	s := summary{Prologue: nodeNames(g, r.Prologue), Epilogue: nodeNames(g, r.Epilogue), Unit: r.Unit}
	for _, b := range r.Blocks {
		s.Blocks = append(s.Blocks, blockSummary{nodeNames(g, b.Nodes), tensorName(g, b.In), tensorName(g, b.Out),
			b.InBytes, b.Bytes, b.FLOPs, b.Kind, b.Repeated})
	}
	for _, sh := range r.Shared {
		s.Shared = append(s.Shared, sharedSummary{tensorName(g, sh.Tensor), sh.Readers, nodeNames(g, sh.Cone),
			sh.ConeFLOPs, sh.Bytes, sh.InputsOnly})
	}
	for _, t := range r.Stream {
		s.Stream = append(s.Stream, tensorName(g, t))
	}
	return s
}

// checkResult checks what must hold of every Result: the blocks, prologue and epilogue
// partition the nodes; Out of a block is In of the next; a cut at a block boundary carries
// Out and shared tensors only; Order, Boundaries and Contract agree with the blocks.
func checkResult(t *testing.T, g *graph.Graph, r *blocks.Result) {
	t.Helper()
	where := make([]int, len(g.Nodes)) // block+1; -1 prologue; -2 epilogue
	count := make([]int, len(g.Nodes))
	for i, b := range r.Blocks {
		for _, v := range b.Nodes {
			where[v] = i + 1
			count[v]++
		}
	}
	for _, v := range r.Prologue {
		where[v] = -1
		count[v]++
	}
	for _, v := range r.Epilogue {
		where[v] = -2
		count[v]++
	}
	for v, c := range count {
		if c != 1 {
			t.Fatalf("node %s is in %d parts of the result", g.Nodes[v].Name, c)
		}
	}
	shared := map[int]bool{}
	for _, sh := range r.Shared {
		shared[sh.Tensor] = true
		if !contains(sh.Cone, g.Tensors[sh.Tensor].Producer) {
			t.Errorf("shared tensor %s: its cone %v lacks its producer", tensorName(g, sh.Tensor), sh.Cone)
		}
	}
	for i, b := range r.Blocks {
		if i > 0 && r.Blocks[i-1].Out != b.In {
			t.Errorf("block %d enters with %s, block %d leaves with %s", i, tensorName(g, b.In), i-1, tensorName(g, r.Blocks[i-1].Out))
		}
		if b.Out >= 0 && where[g.Tensors[b.Out].Producer] != i+1 {
			t.Errorf("block %d: Out %s is produced outside it", i, tensorName(g, b.Out))
		}
	}
	// rank: pipeline position of a node's part.
	rank := func(v int) int {
		switch where[v] {
		case -1:
			return 0
		case -2:
			return len(r.Blocks) + 1
		}
		return where[v]
	}
	for v := range g.Nodes {
		for _, p := range g.Preds(v) {
			if rank(p) > rank(v) {
				t.Fatalf("edge %s → %s runs backwards between parts", g.Nodes[p].Name, g.Nodes[v].Name)
			}
		}
	}
	for i, b := range r.Blocks {
		// Tensors crossing the boundary after block i (weights, folded values and graph
		// inputs aside) are its Out and shared tensors.
		for tid := range g.Tensors {
			tn := &g.Tensors[tid]
			if tn.Producer < 0 || tn.Value != nil || rank(tn.Producer) > i+1 || g.Nodes[tn.Producer].Static {
				continue
			}
			for _, c := range tn.Consumers {
				if rank(c) > i+1 && tid != b.Out && !shared[tid] && !isWeightOnly(g, tn.Producer) {
					t.Errorf("tensor %s crosses the boundary after block %d besides %s", tn.Name, i, tensorName(g, b.Out))
				}
			}
		}
	}
	order := blocks.Order(g, r.Blocks)
	if !g.IsTopological(order) {
		t.Fatalf("Order is not topological")
	}
	for i := 1; i < len(order); i++ {
		if rank(order[i]) < rank(order[i-1]) {
			t.Fatalf("Order puts %s before %s", g.Nodes[order[i-1]].Name, g.Nodes[order[i]].Name)
		}
	}
	var want []int
	for i := 1; i < len(order); i++ {
		if where[order[i]] != where[order[i-1]] && (where[order[i]] > 0 || where[order[i-1]] > 0) {
			want = append(want, i)
		}
	}
	if got := blocks.Boundaries(g, r.Blocks); !reflect.DeepEqual(got, want) {
		t.Errorf("Boundaries %v, want %v", got, want)
	}
	groupOf := blocks.Contract(g, r)
	groups := map[int]int{}
	for v, gr := range groupOf {
		groups[gr]++
		if where[v] > 0 && groupOf[v] != groupOf[r.Blocks[where[v]-1].Nodes[0]] {
			t.Errorf("block %d is split across groups", where[v]-1)
		}
		for _, p := range g.Preds(v) {
			if groupOf[p] > groupOf[v] {
				t.Fatalf("contracted edge runs backwards: %s (group %d) → %s (group %d)", g.Nodes[p].Name, groupOf[p], g.Nodes[v].Name, groupOf[v])
			}
		}
	}
	if want := len(r.Prologue) + len(r.Blocks) + len(r.Epilogue); len(groups) != want {
		t.Errorf("%d groups, want %d", len(groups), want)
	}
	if bo := blocks.BlockOf(g, r.Blocks); len(bo) != len(g.Nodes) {
		t.Errorf("BlockOf has %d entries", len(bo))
	} else {
		for v := range g.Nodes {
			if bo[v] != where[v]-1 && (where[v] > 0 || bo[v] != -1) {
				t.Errorf("BlockOf(%s) = %d", g.Nodes[v].Name, bo[v])
			}
		}
	}
}

func contains(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// isWeightOnly reports whether node v reads only initializers and outputs of such nodes.
func isWeightOnly(g *graph.Graph, v int) bool {
	for _, t := range g.Nodes[v].Deps() {
		tn := &g.Tensors[t]
		if tn.Kind == graph.Initializer {
			continue
		}
		if tn.Producer < 0 || !isWeightOnly(g, tn.Producer) {
			return false
		}
	}
	return true
}

func TestDecoder(t *testing.T) {
	type variant struct {
		L              int
		kv, fromHidden bool
	}
	for _, vr := range []variant{{2, false, false}, {5, false, false}, {2, true, false}, {5, true, false}, {3, false, true}, {3, true, true}} {
		L, kv := vr.L, vr.kv
		t.Run(fmt.Sprintf("%+v", vr), func(t *testing.T) {
			g := decoder(L, kv, vr.fromHidden).build(t, nil)
			r := blocks.Find(g)
			checkResult(t, g, r)
			s := summarize(g, r)
			if len(s.Blocks) != L {
				t.Fatalf("%d blocks, want %d: %+v", len(s.Blocks), L, s.Blocks)
			}
			if r.Unit != 2 {
				t.Errorf("unit %d, want 2 (two residual additions per layer)", r.Unit)
			}
			for i, b := range s.Blocks {
				in, out := fmt.Sprintf("layers.%d/Add_2:0", i-1), fmt.Sprintf("layers.%d/Add_2:0", i)
				if i == 0 {
					in = "embed/Gather:0"
				}
				if b.In != in || b.Out != out || b.Bytes != 4*seqLen*hidden || b.Kind != 0 || !b.Repeated {
					t.Errorf("block %d: in %s out %s bytes %d kind %d repeated %v; want in %s out %s bytes %d kind 0",
						i, b.In, b.Out, b.Bytes, b.Kind, b.Repeated, in, out, 4*seqLen*hidden)
				}
				if !containsName(b.Nodes, fmt.Sprintf("layers.%d/o_proj", i)) || len(b.Nodes) != len(s.Blocks[0].Nodes) {
					t.Errorf("block %d holds %d nodes: %v", i, len(b.Nodes), b.Nodes)
				}
			}
			var wantPro []string
			for _, n := range decoder(L, kv, vr.fromHidden).nodes {
				if strings.HasPrefix(n.name, "mask/") || strings.HasPrefix(n.name, "rope/") || n.name == "embed/Gather" {
					wantPro = append(wantPro, n.name)
				}
			}
			sort.Strings(wantPro)
			if !reflect.DeepEqual(s.Prologue, wantPro) {
				t.Errorf("prologue %v, want %v", s.Prologue, wantPro)
			}
			wantEpi := []string{"lm_head", "norm/Add", "norm/Div", "norm/Mul", "norm/Mul_1", "norm/ReduceMean", "norm/Sqrt"}
			if !reflect.DeepEqual(s.Epilogue, wantEpi) {
				t.Errorf("epilogue %v, want %v", s.Epilogue, wantEpi)
			}
			all := make([]int, L)
			for i := range all {
				all[i] = i
			}
			var maskCone []string
			for _, n := range wantPro {
				if strings.HasPrefix(n, "mask/") || vr.fromHidden && n == "embed/Gather" {
					maskCone = append(maskCone, n) // the length comes from the embedding's shape
				}
			}
			want := []sharedSummary{ // by depth of the producer
				{"rope/Unsqueeze:0", all, []string{"rope/Gather", "rope/Unsqueeze"}, 0, 4 * seqLen * hidden, true},
				{"rope/Unsqueeze_1:0", all, []string{"rope/Gather_1", "rope/Unsqueeze_1"}, 0, 4 * seqLen * hidden, true},
				{"mask/Add:0", all, maskCone, 42, 4 * seqLen * seqLen, true},
			}
			if !reflect.DeepEqual(s.Shared, want) {
				t.Errorf("shared\n%+v\nwant\n%+v", s.Shared, want)
			}
		})
	}
}

// TestHeadTailLayers: a first layer with an extra head op and a last layer with an extra tail
// op differ from the others, and the middle layers' run may start in the middle of a layer
// (after the attention half) with the same count; the run is phased so that the first and
// last layers join it as blocks of their own, one layer a block.
func TestHeadTailLayers(t *testing.T) {
	for _, L := range []int{4, 5, 6} {
		t.Run(fmt.Sprint(L), func(t *testing.T) {
			g := decoderHT(L, false, false, true).build(t, nil)
			r := blocks.Find(g)
			checkResult(t, g, r)
			if len(r.Blocks) != L {
				t.Fatalf("%d blocks, want %d: %+v", len(r.Blocks), L, summarize(g, r).Blocks)
			}
			checkLayers(t, g, r, "layers.")
		})
	}
}

func containsName(s []string, x string) bool {
	i := sort.SearchStrings(s, x)
	return i < len(s) && s[i] == x
}

func TestResNet(t *testing.T) {
	g := resnet([]int64{4, 8, 16}, []int64{3, 4, 2}).build(t, nil)
	r := blocks.Find(g)
	checkResult(t, g, r)
	s := summarize(g, r)
	var got []string
	for _, b := range s.Blocks {
		got = append(got, fmt.Sprintf("%s→%s kind %d repeated %v", b.In, b.Out, b.Kind, b.Repeated))
	}
	want := []string{
		"stem/MaxPool:0→layer1.0/relu_2:0 kind 0 repeated false",
		"layer1.0/relu_2:0→layer1.1/relu_2:0 kind 1 repeated true",
		"layer1.1/relu_2:0→layer1.2/relu_2:0 kind 1 repeated true",
		"layer1.2/relu_2:0→layer2.0/relu_2:0 kind 2 repeated false",
		"layer2.0/relu_2:0→layer2.1/relu_2:0 kind 3 repeated true",
		"layer2.1/relu_2:0→layer2.2/relu_2:0 kind 3 repeated true",
		"layer2.2/relu_2:0→layer2.3/relu_2:0 kind 3 repeated true",
		"layer2.3/relu_2:0→layer3.0/relu_2:0 kind 4 repeated false",
		"layer3.0/relu_2:0→layer3.1/relu_2:0 kind 5 repeated false",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("blocks\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(s.Blocks) == len(want) {
		if n := len(s.Blocks[0].Nodes); n != 8 {
			t.Errorf("a projection block has %d nodes, want 8", n)
		}
		if n := len(s.Blocks[1].Nodes); n != 7 {
			t.Errorf("a plain block has %d nodes, want 7", n)
		}
	}
	if !reflect.DeepEqual(s.Prologue, []string{"stem/Conv", "stem/MaxPool", "stem/Relu"}) ||
		!reflect.DeepEqual(s.Epilogue, []string{"avgpool", "fc", "flatten"}) || len(s.Shared) != 0 {
		t.Errorf("prologue %v, epilogue %v, shared %v", s.Prologue, s.Epilogue, s.Shared)
	}
}

func TestMLP(t *testing.T) {
	g := mlp(6).build(t, nil)
	r := blocks.Find(g)
	checkResult(t, g, r)
	s := summarize(g, r)
	if len(s.Blocks) != 6 || r.Unit != 3 {
		t.Fatalf("%d blocks of unit %d, want 6 of 3: %+v", len(s.Blocks), r.Unit, s.Blocks)
	}
	for i, b := range s.Blocks {
		in := fmt.Sprintf("fc%d/Relu:0", i-1)
		if i == 0 {
			in = "x"
		}
		want := []string{fmt.Sprintf("fc%d/Add", i), fmt.Sprintf("fc%d/MatMul", i), fmt.Sprintf("fc%d/Relu", i)}
		if b.In != in || b.Out != fmt.Sprintf("fc%d/Relu:0", i) || !reflect.DeepEqual(b.Nodes, want) {
			t.Errorf("block %d: %+v", i, b)
		}
	}
	if len(s.Prologue) != 0 || !reflect.DeepEqual(s.Epilogue, []string{"out/Add", "out/MatMul"}) {
		t.Errorf("prologue %v, epilogue %v", s.Prologue, s.Epilogue)
	}
}

func TestNoRepetition(t *testing.T) {
	diamond := newSpec()
	x := diamond.input("x", dims(1, 4))
	a := diamond.node("a", "Relu", x)
	b := diamond.node("b", "Neg", a)
	c := diamond.node("c", "Exp", a)
	diamond.outputs = append(diamond.outputs, diamond.node("d", "Add", b, c))
	// A pair of nodes repeated once in a long chain covers too little of it to be a block.
	small := plain()
	x = small.outputs[0]
	for i := 0; i < 2; i++ {
		x = small.node(fmt.Sprintf("rep%d/Neg", i), "Neg", x)
		x = small.node(fmt.Sprintf("rep%d/Abs", i), "Abs", x)
	}
	for _, op := range []string{"Exp", "Log", "Sin", "Cos", "Tanh", "Sigmoid", "Sqrt", "Erf", "Floor", "Ceil", "Round", "Sign", "Reciprocal", "Softplus", "Selu", "Elu", "Celu", "Mish", "HardSwish", "Gelu", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Identity", "LeakyRelu", "Shrink", "HardSigmoid", "Softsign", "ThresholdedRelu"} {
		x = small.node("tail/"+op, op, x)
	}
	small.outputs = []string{x}
	for name, s := range map[string]*spec{"chain": plain(), "diamond": diamond, "empty": newSpec(), "mlp1": mlp(1), "small repeat": small} {
		t.Run(name, func(t *testing.T) {
			g := s.build(t, nil)
			r := blocks.Find(g)
			checkResult(t, g, r)
			if len(r.Blocks) != 0 || len(r.Shared) != 0 || r.Unit != 0 || len(r.Prologue) != len(g.Nodes) {
				t.Errorf("found %+v", summarize(g, r))
			}
		})
	}
}

// TestPermuted checks that the result depends on the structure alone: the same graph with its
// nodes in another order (the mask computed in the middle of the first layer, the layers
// interleaved) gives the same blocks, boundaries and shared tensors.
func TestPermuted(t *testing.T) {
	for name, s := range map[string]*spec{
		"decoder": decoder(3, false, false), "decoder-kv": decoder(3, true, true),
		"resnet": resnet([]int64{4, 8}, []int64{3, 3}), "mlp": mlp(4),
	} {
		t.Run(name, func(t *testing.T) {
			g := s.build(t, nil)
			want := summarize(g, blocks.Find(g))
			if len(want.Blocks) < 3 {
				t.Fatalf("only %d blocks", len(want.Blocks))
			}
			for seed := int64(1); seed <= 5; seed++ {
				gp := s.build(t, rand.New(rand.NewSource(seed)))
				r := blocks.Find(gp)
				checkResult(t, gp, r)
				if got := summarize(gp, r); !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d:\n%+v\nwant\n%+v", seed, got, want)
				}
			}
		})
	}
}

func TestResNet50File(t *testing.T) {
	m, err := ingest.Load(filepath.Join("..", "..", "testdata", "models", "resnet50_small.onnx"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := m.Graph
	r := blocks.Find(g)
	checkResult(t, g, r)
	s := summarize(g, r)
	if len(s.Blocks) != 16 {
		t.Fatalf("%d blocks, want ResNet-50's 16 bottlenecks", len(s.Blocks))
	}
	var kinds []int
	for i, b := range s.Blocks {
		kinds = append(kinds, b.Kind)
		if !strings.HasSuffix(b.Out, "relu_2/Relu_output_0") || len(b.Nodes) != 7 && len(b.Nodes) != 8 {
			t.Errorf("block %d: out %s, %d nodes", i, b.Out, len(b.Nodes))
		}
	}
	if want := []int{0, 1, 1, 2, 3, 3, 3, 4, 5, 5, 5, 5, 5, 6, 7, 7}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	ops := func(ids []int) string {
		var o []string
		for _, v := range ids {
			o = append(o, g.Nodes[v].OpType)
		}
		return strings.Join(o, " ")
	}
	if p, e := ops(r.Prologue), ops(r.Epilogue); p != "Conv Relu MaxPool" || e != "GlobalAveragePool Flatten Gemm" {
		t.Errorf("prologue %s, epilogue %s", p, e)
	}
}

// checkLayers checks that every node named prefix<i>/… is in block i: a layer's own mask or
// rotary computations join it, and so do its Constant nodes.
func checkLayers(t *testing.T, g *graph.Graph, r *blocks.Result, prefix string) {
	t.Helper()
	blockOf := blocks.BlockOf(g, r.Blocks)
	for v := range g.Nodes {
		name := g.Nodes[v].Name
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		var i int
		if _, err := fmt.Sscanf(name[len(prefix):], "%d/", &i); err != nil {
			t.Fatalf("node %s: %v", name, err)
		}
		if blockOf[v] != i {
			t.Errorf("node %s (%s) is in block %d", name, g.Nodes[v].OpType, blockOf[v])
		}
	}
}

// corpus returns a model of the shared corpus, or skips.
func corpus(t *testing.T, name string) string {
	p := filepath.Join("..", "..", "..", "shared", "models", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("the shared model corpus is not present: %v", err)
	}
	return p
}

func TestBERTFiles(t *testing.T) {
	for _, name := range []string{"bert_base_like_small.onnx", "bert_base_like_small_op17.onnx"} {
		t.Run(name, func(t *testing.T) {
			m, err := ingest.Load(corpus(t, name), ingest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			g := m.Graph
			r := blocks.Find(g)
			checkResult(t, g, r)
			if len(r.Blocks) != 12 {
				t.Fatalf("%d blocks, want 12 layers", len(r.Blocks))
			}
			checkLayers(t, g, r, "/enc/layers.")
			for i, b := range r.Blocks {
				if b.Kind != 0 || g.Tensors[b.Out].Shape.String() != "[1,128,64]" || b.Bytes != 128*64*4 {
					t.Errorf("block %d: kind %d, out %s %s", i, b.Kind, g.Tensors[b.Out].Name, g.Tensors[b.Out].Shape)
				}
				if want := fmt.Sprintf("/enc/layers.%d/", i); !strings.HasPrefix(g.Tensors[b.Out].Name, want) && b.Out != g.Outputs[0] {
					t.Errorf("block %d leaves with %s", i, g.Tensors[b.Out].Name)
				}
			}
		})
	}
}

// TestMobileNetFile checks MobileNetV2: the inverted residual blocks with a residual Add
// repeat within a stage; the blocks without one, between two runs, are a chain of
// single-tensor cuts that make one block each.
func TestMobileNetFile(t *testing.T) {
	m, err := ingest.Load(corpus(t, "mobilenet_v2_small.onnx"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := m.Graph
	r := blocks.Find(g)
	checkResult(t, g, r)
	var got []string
	for _, b := range r.Blocks {
		modules := map[string]bool{}
		for _, v := range b.Nodes {
			if parts := strings.Split(g.Nodes[v].Name, "/"); len(parts) > 2 {
				modules[parts[2]] = true
			}
		}
		var names []string
		for k := range modules {
			names = append(names, k)
		}
		sort.Strings(names)
		got = append(got, strings.Join(names, "+"))
	}
	want := "features.5 features.6 features.7 features.8 features.9 features.10 features.11 features.12 features.13 features.14 features.15 features.16"
	if strings.Join(got, " ") != want {
		t.Errorf("blocks hold modules\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
}

// TestLlamaDecoder runs Find on internal/llamagen's decoders (KV cache, grouped-query
// attention, shape-derived reshape targets, float16 with casts): L layers give L blocks
// whose boundaries are the hidden state [batch, seq, hidden], and the causal mask is shared.
func TestLlamaDecoder(t *testing.T) {
	fp16 := llamagen.Tiny
	fp16.Name, fp16.Layers, fp16.DType = "llama-5-fp16", 5, graph.Float16
	// Every layer gathers its own rotary tables, so with many layers more nodes read
	// position_ids than input_ids alone; with symbolic dims no FLOPs say which is the stream.
	deep := llamagen.Tiny
	deep.Name, deep.Layers = "llama-24-symbolic", 24
	for _, c := range []llamagen.Config{llamagen.Tiny, fp16, deep} {
		t.Run(c.Name, func(t *testing.T) {
			path, err := llamagen.Write(t.TempDir(), c)
			if err != nil {
				t.Fatal(err)
			}
			symbolic := strings.HasSuffix(c.Name, "symbolic")
			opt := ingest.Options{Dims: map[string]int64{"batch": 1, "seq": 8, "past": 4}}
			if symbolic {
				opt = ingest.Options{}
			}
			m, err := ingest.Load(path, opt)
			if err != nil {
				t.Fatal(err)
			}
			g := m.Graph
			r := blocks.Find(g)
			checkResult(t, g, r)
			if len(r.Blocks) != c.Layers || r.Unit != 2 {
				t.Fatalf("%d blocks of unit %d, want %d of 2", len(r.Blocks), r.Unit, c.Layers)
			}
			checkLayers(t, g, r, "/model/layers.")
			bytes := int64(8 * c.Hidden * c.DType.Bits() / 8)
			for i, b := range r.Blocks {
				out := &g.Tensors[b.Out]
				if symbolic {
					bytes = -1
					if out.Shape.String() != fmt.Sprintf("[batch,seq,%d]", c.Hidden) {
						t.Errorf("block %d: out %s %s", i, out.Name, out.Shape)
					}
				} else if out.Shape.String() != fmt.Sprintf("[1,8,%d]", c.Hidden) {
					t.Errorf("block %d: out %s %s", i, out.Name, out.Shape)
				}
				if b.Kind != 0 || b.Bytes != bytes {
					t.Errorf("block %d: kind %d, out %s %s %d bytes; want [batch=1,seq=8,%d], %d bytes", i, b.Kind, out.Name, out.Shape, b.Bytes, c.Hidden, bytes)
				}
				if want := fmt.Sprintf("/model/layers.%d/", i); !strings.HasPrefix(out.Name, want) {
					t.Errorf("block %d leaves with %s", i, out.Name)
				}
			}
			if in := g.Tensors[r.Blocks[0].In]; g.Nodes[in.Producer].OpType != "Gather" {
				t.Errorf("the first block enters with %s, not the embedding", in.Name)
			}
			var mask *blocks.SharedTensor
			for i := range r.Shared {
				if sh := &r.Shared[i]; len(sh.Readers) == c.Layers && len(g.Tensors[sh.Tensor].Shape) == 4 {
					mask = sh
				}
			}
			if mask == nil || !mask.InputsOnly || len(mask.Cone) < 3 {
				t.Errorf("no shared 4-D mask read by every layer: %+v", summarize(g, r).Shared)
			}
		})
	}
}

func BenchmarkFind(b *testing.B) {
	for name, s := range map[string]*spec{"decoder32": decoder(32, true, false), "mlp3000": mlp(3000)} {
		g := s.build(b, nil)
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				blocks.Find(g)
			}
		})
	}
}

// randomRepeated describes a random graph: a prologue over three graph inputs, k copies of a
// random unit chained through one tensor and reading prologue tensors beside it, and an
// epilogue.
func randomRepeated(rng *rand.Rand) *spec {
	s := newSpec()
	ops := []string{"Add", "Mul", "Relu", "MatMul", "Concat", "Shape", "Neg"}
	var pro []string
	for i := 0; i < 3; i++ {
		pro = append(pro, s.input(fmt.Sprintf("in%d", i), dims(1, 4)))
	}
	pick := func(from []string) string { return from[rng.Intn(len(from))] }
	node := func(name string, from []string) string {
		op := ops[rng.Intn(len(ops))]
		in := []string{pick(from)}
		if op == "Add" || op == "Mul" || op == "Concat" {
			in = append(in, pick(from))
		}
		if op == "MatMul" {
			in = append(in, s.init(name+".w", dims(4, 4)))
		}
		return s.node(name, op, in...)
	}
	for i := 0; i < 2+rng.Intn(6); i++ {
		pro = append(pro, node(fmt.Sprintf("pro%d", i), pro))
	}
	// The unit: node j reads earlier unit values, the unit's input or prologue values.
	u := 2 + rng.Intn(6)
	type slot struct{ kind, idx int } // kind 0: unit value, 1: prologue value
	template := make([][]slot, u)
	tops := make([]string, u)
	for j := range template {
		tops[j] = ops[rng.Intn(len(ops))]
		n := 1
		if tops[j] == "Add" || tops[j] == "Mul" || tops[j] == "Concat" {
			n = 2
		}
		for k := 0; k < n; k++ {
			if k == 1 && rng.Intn(3) == 0 {
				template[j] = append(template[j], slot{1, rng.Intn(len(pro))})
			} else {
				template[j] = append(template[j], slot{0, rng.Intn(j + 1)}) // 0 is the input
			}
		}
	}
	x := pro[len(pro)-1]
	for c := 0; c < 2+rng.Intn(4); c++ {
		vals := []string{x}
		for j := 0; j < u; j++ {
			name := fmt.Sprintf("u%d.%d", c, j)
			var in []string
			for _, sl := range template[j] {
				if sl.kind == 1 {
					in = append(in, pro[sl.idx])
				} else {
					in = append(in, vals[sl.idx])
				}
			}
			if tops[j] == "MatMul" {
				in = append(in, s.init(name+".w", dims(4, 4)))
			}
			vals = append(vals, s.node(name, tops[j], in...))
		}
		x = vals[len(vals)-1]
	}
	epi := []string{x}
	for i := 0; i < rng.Intn(4); i++ {
		epi = append(epi, node(fmt.Sprintf("epi%d", i), epi))
	}
	s.outputs = append(s.outputs, epi[len(epi)-1])
	return s
}

// TestRandomGraphs checks the invariants of checkResult, and independence of node order, on
// random graphs with repeated units.
func TestRandomGraphs(t *testing.T) {
	found := 0
	for seed := int64(0); seed < 300; seed++ {
		s := randomRepeated(rand.New(rand.NewSource(seed)))
		g := s.build(t, nil)
		r := blocks.Find(g)
		checkResult(t, g, r)
		if len(r.Blocks) > 0 {
			found++
		}
		want := summarize(g, r)
		gp := s.build(t, rand.New(rand.NewSource(seed+1000)))
		rp := blocks.Find(gp)
		checkResult(t, gp, rp)
		if got := summarize(gp, rp); !reflect.DeepEqual(got, want) {
			t.Errorf("seed %d: the result depends on node order:\n%+v\n%+v", seed, got, want)
		}
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
	t.Logf("blocks found in %d of 300", found)
	if found < 150 {
		t.Errorf("blocks found in %d of 300 graphs with repeated units", found)
	}
}
