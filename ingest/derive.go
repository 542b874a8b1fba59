package ingest

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// Derived dimensions. An input dim can be tied to others: a decoder exported by transformers
// takes attention_mask [batch, total] beside past_key_values.{i}.key [batch, heads, past, d]
// and the new tokens [batch, seq], and makes present.{i}.key = Concat(past, new keys) on the
// sequence axis, so its scores [batch, heads, seq, past + seq] are added to a mask of length
// total: total = past + seq. Shape inference with the input dims left symbolic names such
// dims by polynomials (symexpr.go); a tie is a dim_param of an input that the model sets
// equal to a polynomial of other input dims, either where a broadcasting node lines the two
// up (the mask Add) or where a graph output or value_info declares the dim_param for a dim
// inference computes (present.{i}.key declared [batch, heads, total, d]).
//
// Load uses the ties twice. A tied dim that is not bound while the others are is bound to
// its value (Model.DerivedDims says so); any one dim of a tie can be derived that way, as
// long as it appears in it linearly (past = total - seq when total and seq are bound). And
// when bound sizes break a node, a tie they contradict is reported as the cause, naming the
// dim and both sizes.

// dimRelation is a tie: dim = expr, expr a polynomial of other input dims.
type dimRelation struct {
	dim  string
	expr symPoly
	// at says where the model ties them, for messages.
	at string
}

// broadcastOps are the ops whose inputs broadcast against each other (multidirectionally).
var broadcastOps = map[string]bool{
	optype.Add: true, optype.Sub: true, optype.Mul: true, optype.Div: true, optype.Pow: true, optype.Mod: true, optype.PRelu: true,
	optype.Where: true, optype.Equal: true, optype.Less: true, optype.Greater: true, optype.LessOrEqual: true, optype.GreaterOrEqual: true,
	optype.And: true, optype.Or: true, optype.Xor: true, optype.BitShift: true, optype.BitwiseAnd: true, optype.BitwiseOr: true,
	optype.BitwiseXor: true, optype.Max: true, optype.Min: true, optype.Sum: true, optype.Mean: true,
}

// collectRelations finds the ties in g, a graph inferred with the input dims unbound; params
// are the dim_params of the graph inputs. Broadcasting nodes come first, in graph order, then
// the declared shapes; the first tie found for a dim is kept.
func collectRelations(g *graph.Graph, pg *onnxpb.GraphProto, params map[string]bool) []dimRelation {
	var out []dimRelation
	have := map[string]bool{}
	add := func(atom, expr graph.Dim, at string) {
		if atom.Known() || !params[atom.Param] || have[atom.Param] {
			return
		}
		p, ok := parsePoly(expr.Param)
		if expr.Known() {
			p, ok = symPoly{"": expr.Value}, expr.Value >= 0 // a size the op's semantics fix
		}
		if !ok {
			return // a plain name: two names for one size are not a derivation
		}
		for mono := range p {
			if mono == "" {
				continue
			}
			for _, a := range strings.Split(mono, "*") {
				if a == atom.Param || !params[a] {
					return
				}
			}
		}
		have[atom.Param] = true
		out = append(out, dimRelation{dim: atom.Param, expr: p, at: at})
	}
	for _, v := range g.TopoOrder() {
		n := &g.Nodes[v]
		if n.Domain != "" && n.Domain != "ai.onnx" || !broadcastOps[n.OpType] {
			continue
		}
		var shapes []graph.Shape
		rank := 0
		for _, t := range n.Inputs {
			if t < 0 || g.Tensors[t].Shape == nil {
				continue
			}
			shapes = append(shapes, g.Tensors[t].Shape)
			rank = max(rank, len(g.Tensors[t].Shape))
		}
		for i := 1; i <= rank; i++ {
			var col []graph.Dim
			for _, s := range shapes {
				if j := len(s) - i; j >= 0 && !s[j].Known() && s[j].Param != "" {
					col = append(col, s[j])
				}
			}
			for _, a := range col {
				for _, b := range col {
					add(a, b, fmt.Sprintf("node %s (%s)", n.Label(), n.OpType))
				}
			}
		}
	}
	for _, v := range g.TopoOrder() {
		attentionTies(g, pg, v, add)
	}
	for _, l := range [][]*onnxpb.ValueInfoProto{pg.Output, pg.ValueInfo} {
		for _, vi := range l {
			id, ok := g.TensorByName(vi.GetName())
			if !ok {
				continue
			}
			shape := g.Tensors[id].Shape
			ds := tensorDims(vi.GetType())
			if len(ds) != len(shape) {
				continue
			}
			for i, d := range ds {
				if p, ok := d.Value.(*onnxpb.TensorShapeProto_Dimension_DimParam); ok && !shape[i].Known() {
					add(graph.Symbolic(p.DimParam), shape[i], fmt.Sprintf("tensor %s", vi.GetName()))
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].dim < out[j].dim })
	return out
}

// exprString writes a relation's expression.
func (r dimRelation) exprString() string { return exprText(r.expr) }

// exprText writes p for people: polyString's order, but a term that is added comes before
// one that is subtracted (total - seq, not -seq + total).
func exprText(p symPoly) string {
	s := polyString(p)
	if !strings.HasPrefix(s, "-") {
		return s
	}
	pos, neg := symPoly{}, symPoly{}
	for mono, c := range p {
		if c > 0 {
			pos[mono] = c
		} else {
			neg[mono] = -c
		}
	}
	if len(pos) == 0 {
		return s
	}
	return polyString(pos) + " - " + strings.ReplaceAll(polyString(neg), " + ", " - ")
}

// atoms returns the dims of the relation: its dim first, then the expression's, sorted.
func (r dimRelation) atoms() []string {
	seen := map[string]bool{r.dim: true}
	out := []string{r.dim}
	var rest []string
	for mono := range r.expr {
		if mono == "" {
			continue
		}
		for _, a := range strings.Split(mono, "*") {
			if !seen[a] {
				seen[a] = true
				rest = append(rest, a)
			}
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// evalPoly evaluates p at known sizes; ok is false when an atom is unknown or the value
// does not fit int64.
func evalPoly(p symPoly, known map[string]int64) (int64, bool) {
	sum := new(big.Int)
	for mono, c := range p {
		term := big.NewInt(c)
		if mono != "" {
			for _, a := range strings.Split(mono, "*") {
				v, ok := known[a]
				if !ok {
					return 0, false
				}
				term.Mul(term, big.NewInt(v))
			}
		}
		sum.Add(sum, term)
	}
	if !sum.IsInt64() {
		return 0, false
	}
	return sum.Int64(), true
}

// solve derives the one unknown dim u of r from the known sizes: r.dim − r.expr is linear
// in u (u appears alone in one monomial), so u = rest / coefficient when that divides and is
// not negative. It returns u, its size and the expression u equals.
func (r dimRelation) solve(known map[string]int64) (u string, size int64, expr symPoly, ok bool) {
	for _, a := range r.atoms() {
		if _, k := known[a]; !k {
			if u != "" {
				return "", 0, nil, false
			}
			u = a
		}
	}
	if u == "" {
		return "", 0, nil, false
	}
	// zero = dim − expr; u must appear only as the monomial "u".
	zero := polyAdd(symPoly{r.dim: 1}, r.expr, -1)
	coef := zero[u]
	if coef == 0 {
		return "", 0, nil, false
	}
	for mono := range zero {
		if mono != u && mono != "" {
			for _, a := range strings.Split(mono, "*") {
				if a == u {
					return "", 0, nil, false
				}
			}
		}
	}
	// u = −(zero − coef·u) / coef.
	rest := polyAdd(zero, symPoly{u: coef}, -1)
	if expr, ok = polyDivExact(polyAdd(symPoly{}, rest, -1), coef); !ok {
		return "", 0, nil, false
	}
	if size, ok = evalPoly(expr, known); !ok || size < 0 {
		return "", 0, nil, false
	}
	return u, size, expr, true
}

// deriveDims completes known (sizes bound by Options.Dims and --input-shape) with the sizes
// the ties settle, then defaults (Options.DefaultDims) for the dims that are still unbound
// and no tie settles, deriving again after each. It returns what it derived (dim →
// expression), in known.
func deriveDims(rels []dimRelation, known, defaults map[string]int64) map[string]string {
	derived := map[string]string{}
	fix := func() {
		for progress := true; progress; {
			progress = false
			for _, r := range rels {
				if u, size, expr, ok := r.solve(known); ok {
					known[u] = size
					derived[u] = exprText(expr)
					progress = true
				}
			}
		}
	}
	fix()
	dependent := map[string]bool{}
	for _, r := range rels {
		dependent[r.dim] = true
	}
	// Defaults for the dims no tie sets first: a dependent dim is derived from them rather
	// than given its default; then the defaults of what is left.
	for _, pass := range []bool{false, true} {
		for _, d := range slices.Sorted(maps.Keys(defaults)) {
			if _, ok := known[d]; !ok && (pass || !dependent[d]) {
				known[d] = defaults[d]
				fix()
			}
		}
	}
	return derived
}

// conflict returns the first tie the sizes contradict, as a usage *diag.Error naming the dim,
// the size it was given and the size the tie makes it.
func conflict(rels []dimRelation, known map[string]int64, derived map[string]string) error {
	for _, r := range rels {
		v, ok := known[r.dim]
		want, ok2 := evalPoly(r.expr, known)
		if !ok || !ok2 || v == want {
			continue
		}
		var at []string
		for _, a := range r.atoms()[1:] {
			at = append(at, fmt.Sprintf("%s=%d", a, known[a]))
		}
		how := "is bound to"
		if e, ok := derived[r.dim]; ok {
			how = fmt.Sprintf("is derived as %s =", e)
		}
		if len(at) == 0 { // a size the op fixes, not a sum of other dims
			return usagef("dimension %s %s %d, but the model makes it %d (%s); bind %s=%d, or leave %s out and it is derived",
				r.dim, how, v, want, r.at, r.dim, want, r.dim)
		}
		return usagef("dimension %s %s %d, but the model makes it %s = %d at %s (%s ties them); bind %s=%d, or leave %s out and it is derived",
			r.dim, how, v, r.exprString(), want, strings.Join(at, ", "), r.at, r.dim, want, r.dim)
	}
	return nil
}

// relCache keeps the ties of recently loaded models by file hash: verify loads one model at
// several sizes, and the ties do not depend on them.
var relCache struct {
	sync.Mutex
	m map[string][]dimRelation
}

// relations returns the ties of the model, inferring its shapes once more with every input
// dim unbound (and remembering the result by the file's hash).
func (m *Model) relations() ([]dimRelation, error) {
	relCache.Lock()
	rels, ok := relCache.m[m.SHA256]
	relCache.Unlock()
	if ok {
		return rels, nil
	}
	u := &Model{Path: m.Path, Dir: m.Dir, SHA256: m.SHA256, FileSize: m.FileSize, proto: m.proto, shapesOnly: true}
	if err := u.build(); err != nil {
		return nil, err
	}
	rels = collectRelations(u.Graph, m.proto.Graph, m.inputParams)
	relCache.Lock()
	if relCache.m == nil || len(relCache.m) >= 16 {
		relCache.m = map[string][]dimRelation{}
	}
	relCache.m[m.SHA256] = rels
	relCache.Unlock()
	return rels, nil
}

// DerivedNotes describes the derived dims, one line each, e.g. "total = past + seq = 1040
// (derived)", sorted.
func (m *Model) DerivedNotes() []string {
	var out []string
	for _, d := range slices.Sorted(maps.Keys(m.DerivedDims)) {
		if e := m.DerivedDims[d]; e == fmt.Sprint(m.dims[d]) {
			out = append(out, fmt.Sprintf("%s = %d, the head size of the model's attention (derived)", d, m.dims[d]))
			continue
		}
		out = append(out, fmt.Sprintf("%s = %s = %d (derived)", d, m.DerivedDims[d], m.dims[d]))
	}
	return out
}

// dependentDims maps each unbound input dim that follows from other unbound ones once they
// are bound to the expression it follows as (for RequireInputSizes); only known when the
// load found the model's ties.
func (m *Model) dependentDims() map[string]string {
	unbound := map[string]bool{}
	for _, d := range m.SymbolicDims {
		unbound[d] = true
	}
	out := map[string]string{}
	for _, r := range m.rels {
		if unbound[r.dim] && out[r.dim] == "" {
			all := true
			for _, a := range r.atoms()[1:] {
				_, bound := m.dims[a]
				all = all && (unbound[a] || bound) && out[a] == ""
			}
			if all {
				out[r.dim] = r.exprString()
			}
		}
	}
	return out
}

// deriveDims binds, before inference, the unbound input dims that ties to bound dims settle,
// then the defaults (see Options.DefaultDims). Nothing happens when every input dim is bound
// or none is (the ties are then read off the load's own symbolic inference, by checkTies).
func (m *Model) deriveDims(defaults map[string]int64) {
	unbound := 0
	for p := range m.inputParams {
		if _, ok := m.dims[p]; !ok {
			unbound++
		}
	}
	if unbound == 0 || (len(m.dims) == 0 && len(defaults) == 0) {
		return
	}
	rels, err := m.relations()
	if err != nil {
		return // the load itself fails the same way, and says why
	}
	m.rels = rels
	known := map[string]int64{}
	for k, v := range m.dims {
		known[k] = v
	}
	def := map[string]int64{}
	for k, v := range defaults {
		if _, bound := known[k]; m.inputParams[k] && !bound && v >= 0 {
			def[k] = v
		}
	}
	if d := deriveDims(rels, known, def); len(d) > 0 {
		m.DerivedDims = d
	}
	if len(known) > 0 {
		m.dims = known
	}
}

// checkTies runs after inference. With no input dim bound, the ties are read off this
// load's graph (for RequireInputSizes). With bound sizes that break a node, a tie they
// contradict is the error, naming the dim and both sizes.
func (m *Model) checkTies() error {
	if len(m.dims) == 0 && len(m.inputShapes) == 0 {
		m.rels = collectRelations(m.Graph, m.proto.Graph, m.inputParams)
		return nil
	}
	if len(m.ShapeErrors) == 0 || len(m.dims) == 0 {
		return nil
	}
	if m.rels == nil {
		rels, err := m.relations()
		if err != nil {
			return nil
		}
		m.rels = rels
	}
	return conflict(m.rels, m.dims, m.DerivedDims)
}

// attentionTies adds the ties of an attention contrib op with a KV cache: ONNX Runtime's
// GroupQueryAttention and MultiHeadAttention append this call's keys (sequence axis 1 of
// key, or of query when the projections come packed) to past_key (axis 2) and return
// present_key, so present's sequence axis is past + sequence; GroupQueryAttention's
// total_sequence_length input, which the model builder computes as attention_mask's axis
// 1 (Shape, Gather, Cast), is the same length. Neither shape inference nor broadcasting
// shows these ties while the op's output shapes are only declared, so they are read from
// the op's semantics: the present's declared dim and attention_mask's dim are past + seq.
func attentionTies(g *graph.Graph, pg *onnxpb.GraphProto, v int, add func(atom, expr graph.Dim, at string)) {
	n := &g.Nodes[v]
	if n.Domain != "com.microsoft" {
		return
	}
	pastAt, keyAt := -1, 1
	switch n.OpType {
	case optype.GroupQueryAttention:
		pastAt = 3
	case optype.MultiHeadAttention:
		pastAt = 6
	default:
		return
	}
	in := func(i int) graph.Shape {
		if i < len(n.Inputs) && n.Inputs[i] >= 0 {
			return g.Tensors[n.Inputs[i]].Shape
		}
		return nil
	}
	past := in(pastAt)
	key := in(keyAt)
	packed := len(key) != 3
	if packed {
		key = in(0) // packed QKV in query
	}
	headSizeTie(g, pg, n, past, packed, add)
	if len(past) != 4 || len(key) != 3 || past[2].Known() || key[1].Known() || past[2].Param == "" || key[1].Param == "" {
		return
	}
	sum := graph.Symbolic(past[2].Param + " + " + key[1].Param)
	at := fmt.Sprintf("node %s (%s appends the new keys to past_key)", n.Label(), n.OpType)
	// the present's declared dim
	if len(n.Outputs) > 1 && n.Outputs[1] >= 0 {
		name := g.Tensors[n.Outputs[1]].Name
		for _, l := range [][]*onnxpb.ValueInfoProto{pg.Output, pg.ValueInfo} {
			for _, vi := range l {
				if vi.GetName() != name {
					continue
				}
				if ds := tensorDims(vi.GetType()); len(ds) == 4 {
					if p, ok := ds[2].Value.(*onnxpb.TensorShapeProto_Dimension_DimParam); ok {
						add(graph.Symbolic(p.DimParam), sum, at)
					}
				}
			}
		}
	}
	// total_sequence_length (input 6) traced to the axis of a graph input it measures
	if n.OpType == optype.GroupQueryAttention && len(n.Inputs) > 6 && n.Inputs[6] >= 0 {
		if d, ok := measuredDim(g, n.Inputs[6]); ok {
			add(d, sum, at)
		}
	}
}

// headSizeTie adds the tie of a KV cache's last axis: a float cache holds one head of keys
// (values) per row, so its last axis is the head size, query's width over num_heads (over
// num_heads + 2·kv_num_heads when query packs the projections). The model builder writes
// that axis as the dim_param kv_cache_dim on past_key/past_value and present_key/
// present_value, so that one export serves a quantized cache too; a quantized cache (the
// op's k_quant_type set) is left alone.
func headSizeTie(g *graph.Graph, pg *onnxpb.GraphProto, n *graph.Node, past graph.Shape, packed bool, add func(atom, expr graph.Dim, at string)) {
	if len(past) != 4 || past[3].Known() || past[3].Param == "" || len(n.Inputs) == 0 || n.Inputs[0] < 0 {
		return
	}
	if a := n.Attr("k_quant_type"); a != nil && a.Str != "" && a.Str != "NONE" {
		return
	}
	q := g.Tensors[n.Inputs[0]].Shape
	heads := n.AttrInt("num_heads", 0)
	if packed {
		kv := n.AttrInt("kv_num_heads", 0)
		if n.OpType != optype.GroupQueryAttention || kv <= 0 {
			return
		}
		heads += 2 * kv
	}
	if len(q) != 3 || !q[2].Known() || heads <= 0 || q[2].Value%heads != 0 {
		return
	}
	head := graph.Static(q[2].Value / heads)
	at := fmt.Sprintf("node %s (%s: a float KV cache's last axis is the head size, %d)", n.Label(), n.OpType, head.Value)
	add(past[3], head, at)
	if len(n.Outputs) > 1 && n.Outputs[1] >= 0 {
		name := g.Tensors[n.Outputs[1]].Name
		for _, l := range [][]*onnxpb.ValueInfoProto{pg.Output, pg.ValueInfo} {
			for _, vi := range l {
				if ds := tensorDims(vi.GetType()); vi.GetName() == name && len(ds) == 4 {
					if p, ok := ds[3].Value.(*onnxpb.TensorShapeProto_Dimension_DimParam); ok {
						add(graph.Symbolic(p.DimParam), head, at)
					}
				}
			}
		}
	}
}

// measuredDim follows t back through Cast, Squeeze, Unsqueeze and Reshape to
// Gather(Shape(x), constant i) (or Shape with start/end selecting one axis) and returns x's
// axis i.
func measuredDim(g *graph.Graph, t int) (graph.Dim, bool) {
	for steps := 0; steps < 8 && t >= 0; steps++ {
		p := g.Tensors[t].Producer
		if p < 0 {
			return graph.Dim{}, false
		}
		n := &g.Nodes[p]
		if n.Domain != "" && n.Domain != "ai.onnx" {
			return graph.Dim{}, false
		}
		switch n.OpType {
		case optype.Cast, optype.Squeeze, optype.Unsqueeze, optype.Reshape, optype.Identity:
			t = n.Inputs[0]
		case optype.Gather:
			if len(n.Inputs) < 2 || n.Inputs[1] < 0 || n.AttrInt("axis", 0) != 0 {
				return graph.Dim{}, false
			}
			idx := g.Tensors[n.Inputs[1]]
			sp := g.Tensors[n.Inputs[0]].Producer
			if len(idx.Value) != 1 || sp < 0 || g.Nodes[sp].OpType != optype.Shape || g.Nodes[sp].Domain != "" {
				return graph.Dim{}, false
			}
			shape := g.Tensors[g.Nodes[sp].Inputs[0]].Shape
			i := int(idx.Value[0]) + int(g.Nodes[sp].AttrInt("start", 0))
			if i < 0 {
				i += len(shape)
			}
			if i < 0 || i >= len(shape) {
				return graph.Dim{}, false
			}
			return shape[i], true
		default:
			return graph.Dim{}, false
		}
	}
	return graph.Dim{}, false
}
