// Package ops is onnxpart's operator registry: one entry per operator (domain, name, opset
// range) with everything the tool knows about it, namely the shape rule ingest infers its
// outputs with, its FLOPs, the logical parameter count of its weights, its cost class and
// its fusion role. ingest, profile and fusion read their facts from here, so adding an
// operator is one entry in table.go (and one row in the table test).
package ops

import (
	"sort"

	"github.com/onnxpart/onnxpart/graph"
)

// Domains.
const (
	ONNX      = ""              // the default domain (also spelt "ai.onnx")
	Microsoft = "com.microsoft" // ONNX Runtime's contrib ops
	ML        = "ai.onnx.ml"    // ONNX's classical machine-learning ops
)

// ShapeRule names the shape function ingest runs for an op (ingest binds each name to its
// implementation; a test there checks that every rule named here exists). Empty: no shape
// inference.
type ShapeRule string

// Class is an op's cost class: ops in one class behave alike under the roofline (one
// efficiency and one per-node overhead per class and device). The values are
// profile.OpClass's.
type Class string

// Cost classes (profile.OpClass documents each).
const (
	ClassMatMul      Class = "matmul"
	ClassConv        Class = "conv"
	ClassPool        Class = "pool"
	ClassNorm        Class = "norm"
	ClassElementwise Class = "elementwise"
	ClassData        Class = "data"
	ClassView        Class = "view"
	ClassControl     Class = "control"
	ClassOther       Class = "other" // also: no class recorded

	// Kernel classes: how a backend runs a contrib or quantised op (Entry.Kernels), priced
	// apart from the generic classes because their kernels differ in what bounds them.
	ClassAttention  Class = "attention"         // a fused attention kernel: Q·Kᵀ, softmax and ·V in one launch, reading the KV cache once
	ClassNBits      Class = "matmul-nbits"      // a GEMV/GEMM streaming block-quantised (int4) weights, dequantised on the fly, float arithmetic
	ClassNBitsInt8  Class = "matmul-nbits-int8" // as ClassNBits with the activations quantised to int8 and integer dot products
	ClassConvInt8   Class = "conv-int8"         // an int8 convolution (QLinearConv, or a QDQ-wrapped Conv the backend fuses into one)
	ClassMatMulInt8 Class = "matmul-int8"       // an int8 matrix product (QLinearMatMul, MatMulInteger, QGemm, …)
)

// Backend names the family of runtimes whose kernels run an op alike. The cost model picks
// the backend of a device by its kind: ONNX Runtime's CPU provider on a CPU, its CUDA provider
// (and TensorRT, which hands contrib ops back to it) on a GPU.
type Backend string

// Backends.
const (
	CPU Backend = "cpu" // ONNX Runtime's CPU execution provider (MLAS kernels)
	GPU Backend = "gpu" // ONNX Runtime's CUDA execution provider; TensorRT for the ops it builds
)

// Backends lists the backends in a fixed order.
func Backends() []Backend { return []Backend{CPU, GPU} }

// Kernel says how a backend runs an op where that differs from the entry's Class: the cost
// class of the kernel and whether its arithmetic is integer. A kernel applies on Backend
// ("": every backend) when the node's attribute Attr (read with default AttrDefault) is one
// of Values (Attr "": always). Entry.Kernels are tried in order; the first that applies wins.
type Kernel struct {
	Backend     Backend
	Attr        string
	AttrDefault int64
	Values      []int64
	Class       Class
	Int8        bool
}

func (k *Kernel) applies(n *graph.Node, b Backend) bool {
	if k.Backend != "" && k.Backend != b {
		return false
	}
	if k.Attr == "" {
		return true
	}
	v := n.AttrInt(k.Attr, k.AttrDefault)
	for _, x := range k.Values {
		if x == v {
			return true
		}
	}
	return false
}

// Role is an op's part in kernel fusion, the same for every backend; which fusions a backend
// performs are its rule set's (package fusion).
type Role uint8

// Fusion roles.
const (
	RoleNone     Role = iota // fuses only through explicit patterns
	RoleAnchor               // a GEMM-like kernel (matrix product, convolution) epilogues fuse into
	RoleEpilogue             // elementwise: can run in the producing kernel's epilogue
	RoleView                 // metadata-only: its output aliases its input, or is a constant
	RoleFused                // already a fused kernel (contrib transformer ops)
)

func (r Role) String() string {
	return [...]string{"none", "anchor", "epilogue", "view", "fused"}[r]
}

// FLOPsFunc counts a node's floating-point (or integer) operations, one multiply-accumulate
// as 2; 0 when shapes are unknown.
type FLOPsFunc func(g *graph.Graph, n *graph.Node) int64

// ParamsFunc splits the elems stored elements of input i of node n, a stored weight, into
// the logical number of model parameters it holds (packed formats, two int4 values per byte,
// hold more than they store) and quantisation metadata (scales and zero points, counted
// apart so that a quantised model's parameter count compares with its float twin's).
type ParamsFunc func(g *graph.Graph, n *graph.Node, i int, elems int64) (params, quant int64)

// Entry is one operator's facts.
type Entry struct {
	Domain string // ONNX or Microsoft
	Name   string
	// Since and Until bound the opsets (of Domain) the entry describes; Until 0: open.
	Since, Until int64
	Shape        ShapeRule
	FLOPs        FLOPsFunc  // nil: 0
	Params       ParamsFunc // nil: stored elements
	Class        Class
	Role         Role
	// Int8 marks ops whose arithmetic is integer (quantised kernels).
	Int8 bool
	// Kernels refine Class and Int8 per backend (and per attribute value): a contrib op that
	// a backend runs as one fused kernel of its own kind (attention, int4 weight streaming,
	// int8 arithmetic). See Kernel.
	Kernels []Kernel
}

type key struct{ domain, name string }

var (
	byKey  = map[key][]*Entry{}
	byName = map[string][]*Entry{}
)

func init() {
	for i := range table {
		e := &table[i]
		k := key{e.Domain, e.Name}
		byKey[k] = append(byKey[k], e)
		byName[e.Name] = append(byName[e.Name], e)
	}
}

// All returns every entry, sorted by domain, name and opset.
func All() []Entry {
	out := append([]Entry(nil), table...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Domain != b.Domain {
			return a.Domain < b.Domain
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Since < b.Since
	})
	return out
}

func normDomain(d string) string {
	if d == "ai.onnx" {
		return ONNX
	}
	return d
}

// Lookup returns the entry of op name in domain at opset (0: any), or nil.
func Lookup(domain, name string, opset int64) *Entry {
	es := byKey[key{normDomain(domain), name}]
	for _, e := range es {
		if opset <= 0 || opset >= e.Since && (e.Until == 0 || opset <= e.Until) {
			return e
		}
	}
	if len(es) > 0 {
		return es[len(es)-1]
	}
	return nil
}

// Of returns the entry whose cost facts apply to node n: its own domain's, else (an op of a
// domain the registry does not list, e.g. a custom domain's Gelu) the first entry of that
// name. Nil when no entry has the name.
func Of(n *graph.Node) *Entry {
	if e := Lookup(n.Domain, n.OpType, 0); e != nil {
		return e
	}
	if es := byName[n.OpType]; len(es) > 0 {
		return es[0]
	}
	return nil
}

// FLOPs counts node n's operations by its entry (0 for ops without a formula).
func FLOPs(g *graph.Graph, n *graph.Node) int64 {
	if e := Of(n); e != nil && e.FLOPs != nil {
		return e.FLOPs(g, n)
	}
	return 0
}

// ClassOf is node n's cost class by its entry (ClassOther when none).
func ClassOf(n *graph.Node) Class {
	if e := Of(n); e != nil && e.Class != "" {
		return e.Class
	}
	return ClassOther
}

// KernelOn is how backend b runs node n: its entry's first Kernel that applies, else the
// entry's Class and Int8 (ClassOther when the op has no entry).
func KernelOn(n *graph.Node, b Backend) Kernel {
	if k, ok := KernelFor(n, b); ok {
		return k
	}
	e := Of(n)
	if e == nil {
		return Kernel{Backend: b, Class: ClassOther}
	}
	c := e.Class
	if c == "" {
		c = ClassOther
	}
	return Kernel{Backend: b, Class: c, Int8: e.Int8}
}

// KernelFor is the first of node n's entry's Kernels that applies on backend b; false when
// none does (the entry's Class and Int8 then describe the kernel).
func KernelFor(n *graph.Node, b Backend) (Kernel, bool) {
	e := Of(n)
	if e == nil {
		return Kernel{}, false
	}
	for i := range e.Kernels {
		if k := &e.Kernels[i]; k.applies(n, b) {
			return Kernel{Backend: b, Class: k.Class, Int8: k.Int8}, true
		}
	}
	return Kernel{}, false
}

// WeightParams splits input i of node n, a stored weight of elems elements, into logical
// parameters and quantisation metadata (see ParamsFunc); by default all are parameters.
func WeightParams(g *graph.Graph, n *graph.Node, i int, elems int64) (params, quant int64) {
	if e := Of(n); e != nil && e.Params != nil {
		return e.Params(g, n, i, elems)
	}
	return elems, 0
}

// Key is the name fusion rules use for an op: the bare name in the ONNX domain,
// "domain:name" in another.
func (e *Entry) Key() string {
	if e.Domain == ONNX {
		return e.Name
	}
	return e.Domain + ":" + e.Name
}

// RoleByName maps the role names fusion rule files may use as classes ("@epilogue") to
// roles.
var RoleByName = map[string]Role{"anchor": RoleAnchor, "epilogue": RoleEpilogue, "view": RoleView, "fused": RoleFused}

// WithRole lists the keys (Entry.Key) of the ops with role r, sorted.
func WithRole(r Role) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range All() {
		if k := e.Key(); e.Role == r && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
