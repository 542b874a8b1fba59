package ops

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
)

// TestTable walks every entry: keys unique per opset range, ranges well formed, classes
// known, roles consistent with classes, and lookups returning the entry.
func TestTable(t *testing.T) {
	classes := map[Class]bool{"": true, ClassMatMul: true, ClassConv: true, ClassPool: true, ClassNorm: true,
		ClassElementwise: true, ClassData: true, ClassView: true, ClassControl: true, ClassOther: true}
	type rng struct{ lo, hi int64 }
	seen := map[key][]rng{}
	for _, e := range All() {
		id := e.Domain + ":" + e.Name
		if e.Name == "" {
			t.Errorf("entry with no name in domain %q", e.Domain)
		}
		if e.Domain != ONNX && e.Domain != ML && e.Domain != Microsoft {
			t.Errorf("%s: domain %q is neither ONNX's (ai.onnx, ai.onnx.ml) nor ONNX Runtime's", id, e.Domain)
		}
		if e.Since < 1 || e.Until != 0 && e.Until < e.Since {
			t.Errorf("%s: opset range [%d, %d]", id, e.Since, e.Until)
		}
		for _, r := range seen[key{e.Domain, e.Name}] {
			if (r.hi == 0 || e.Since <= r.hi) && (e.Until == 0 || r.lo <= e.Until) {
				t.Errorf("%s: opset ranges overlap", id)
			}
		}
		seen[key{e.Domain, e.Name}] = append(seen[key{e.Domain, e.Name}], rng{e.Since, e.Until})
		if !classes[e.Class] {
			t.Errorf("%s: unknown class %q", id, e.Class)
		}
		switch e.Role {
		case RoleAnchor:
			if e.Class != ClassMatMul && e.Class != ClassConv {
				t.Errorf("%s: an anchor of class %q", id, e.Class)
			}
		case RoleEpilogue:
			if e.Class != ClassElementwise {
				t.Errorf("%s: an epilogue of class %q", id, e.Class)
			}
		case RoleView:
			if e.Class != ClassView {
				t.Errorf("%s: a view of class %q", id, e.Class)
			}
		}
		if got := Lookup(e.Domain, e.Name, e.Since); got == nil || got.Name != e.Name || got.Since != e.Since {
			t.Errorf("%s: Lookup at opset %d finds %+v", id, e.Since, got)
		}
		if e.Domain == ONNX && Lookup("ai.onnx", e.Name, 0) == nil {
			t.Errorf("%s: not found under ai.onnx", id)
		}
		// Every FLOPs formula copes with a node whose shapes are unknown.
		if e.FLOPs != nil {
			g := &graph.Graph{Tensors: []graph.Tensor{{}, {}}}
			n := &graph.Node{OpType: e.Name, Domain: e.Domain, Inputs: []int{0}, Outputs: []int{1}}
			if f := e.FLOPs(g, n); f != 0 {
				t.Errorf("%s: %d FLOPs with unknown shapes", id, f)
			}
		}
	}
}

// TestOfFallsBackByName: an op of a domain the registry does not list is costed as the
// registered op of the same name (a custom domain's Gelu is a Gelu).
func TestOfFallsBackByName(t *testing.T) {
	n := &graph.Node{Domain: "org.example", OpType: "MatMul"}
	if got := ClassOf(n); got != ClassMatMul {
		t.Errorf("class %q", got)
	}
	if got := ClassOf(&graph.Node{OpType: "NoSuchOp"}); got != ClassOther {
		t.Errorf("unknown op: class %q", got)
	}
}

// TestOptypeNamesEveryOp: package optype has one constant, spelt as the op, per op name in
// the table and no other.
func TestOptypeNamesEveryOp(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "optype/optype.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]bool{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, sp := range gd.Specs {
			vs := sp.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); !ok || lit.Value != strconv.Quote(n.Name) {
					t.Errorf("optype.%s is not %q", n.Name, n.Name)
				}
				consts[n.Name] = true
			}
		}
	}
	names := map[string]bool{}
	for _, e := range All() {
		names[e.Name] = true
		if !consts[e.Name] {
			t.Errorf("optype has no constant for %s", e.Name)
		}
	}
	for c := range consts {
		if !names[c] {
			t.Errorf("optype.%s names no registered op", c)
		}
	}
}

// TestContribOpsPriced: every ONNX Runtime contrib op and every quantised op has, on every
// backend, a cost class other than the generic one and a FLOPs formula (a contrib op priced
// as "other, 0 FLOPs" is the fault issue 39 reported: the model then sees a fraction of its
// work). The fused kernels of the list are priced by their own kernel class on
// every backend, and MatMulNBits by accuracy_level on a CPU.
func TestContribOpsPriced(t *testing.T) {
	for _, e := range All() {
		if e.Domain != Microsoft && !e.Int8 {
			continue
		}
		id := e.Domain + ":" + e.Name
		if e.FLOPs == nil {
			t.Errorf("%s: no FLOPs formula", id)
		}
		for _, b := range Backends() {
			n := &graph.Node{Domain: e.Domain, OpType: e.Name}
			if k := KernelOn(n, b); k.Class == ClassOther || k.Class == "" {
				t.Errorf("%s on %s: generic class %q", id, b, k.Class)
			}
		}
	}
	want := map[string]Class{
		"GroupQueryAttention": ClassAttention, "MultiHeadAttention": ClassAttention, "Attention": ClassAttention,
		"SkipLayerNormalization": ClassNorm, "SkipSimplifiedLayerNormalization": ClassNorm,
		"SimplifiedLayerNormalization": ClassNorm, "EmbedLayerNormalization": ClassNorm,
		"FastGelu": ClassElementwise, "BiasGelu": ClassElementwise, "RotaryEmbedding": ClassElementwise,
		"MatMulNBits": ClassNBits, "GatherBlockQuantized": ClassData,
	}
	for name, c := range want {
		n := &graph.Node{Domain: Microsoft, OpType: name}
		for _, b := range Backends() {
			if k := KernelOn(n, b); k.Class != c {
				t.Errorf("%s on %s: class %q, want %q", name, b, k.Class, c)
			}
		}
	}
	// accuracy_level: 4 is int8 arithmetic on a CPU only; 0 (unset) and 1 are float32.
	for _, c := range []struct {
		level int64
		b     Backend
		class Class
		int8  bool
	}{{-1, CPU, ClassNBits, false}, {0, CPU, ClassNBits, false}, {1, CPU, ClassNBits, false}, {4, CPU, ClassNBitsInt8, true},
		{4, GPU, ClassNBits, false}, {0, GPU, ClassNBits, false}} {
		n := &graph.Node{Domain: Microsoft, OpType: "MatMulNBits"}
		if c.level >= 0 {
			n.Attrs = append(n.Attrs, graph.Attr{Name: "accuracy_level", Kind: graph.AttrInt, Int: c.level})
		}
		if k := KernelOn(n, c.b); k.Class != c.class || k.Int8 != c.int8 {
			t.Errorf("MatMulNBits accuracy_level %d on %s: %+v, want class %q int8 %v", c.level, c.b, k, c.class, c.int8)
		}
	}
}
