package ingest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// Binding input sizes: Options.Dims (the command's --dim NAME=SIZE) binds a named (dim_param)
// dimension wherever the model's inputs carry it; Options.InputShapes (--input-shape
// NAME=1x3x224x224) binds every dimension of one input, unnamed ones included (the
// trtexec/Polygraphy convention). Dimensions that only outputs or
// value_info carry follow from the inputs through inference and are never asked for.

// bindDims checks the --dim and --input-shape bindings against the model's inputs and
// records them: every dim_param an input shape names gets its size (consistently with --dim
// and the other input shapes). A binding for a dimension no input carries is a usage error.
func (m *Model) bindDims(dims map[string]int64, shapes map[string][]int64) error {
	g := m.proto.Graph
	inits := map[string]bool{}
	for _, t := range g.Initializer {
		inits[t.GetName()] = true
	}
	for _, t := range g.SparseInitializer {
		inits[t.GetValues().GetName()] = true
	}
	onInputs, elsewhere := map[string]bool{}, map[string]bool{}
	inputs := map[string]*onnxpb.ValueInfoProto{}
	var inputNames []string
	for _, vi := range g.Input {
		if inits[vi.GetName()] {
			continue // IR < 4: a weight listed as an input
		}
		inputs[vi.GetName()] = vi
		inputNames = append(inputNames, vi.GetName())
		for _, d := range tensorDims(vi.GetType()) {
			if p, ok := d.Value.(*onnxpb.TensorShapeProto_Dimension_DimParam); ok && p.DimParam != "" {
				onInputs[p.DimParam] = true
			}
		}
	}
	for _, l := range [][]*onnxpb.ValueInfoProto{g.Output, g.ValueInfo} {
		for _, vi := range l {
			for _, d := range tensorDims(vi.GetType()) {
				if p, ok := d.Value.(*onnxpb.TensorShapeProto_Dimension_DimParam); ok && p.DimParam != "" {
					elsewhere[p.DimParam] = true
				}
			}
		}
	}
	m.inputParams = onInputs
	have := slices.Sorted(maps.Keys(onInputs))
	for _, n := range slices.Sorted(maps.Keys(dims)) {
		switch {
		case dims[n] < 0:
			return usagef("%s: a dimension cannot be negative", m.sayDim(n, dims[n])).About(diag.Option, m.names.Name("Dims"))
		case onInputs[n]:
		case elsewhere[n]:
			// Checked against what inference derives (checkDerivedDims): a manifest or a
			// user may restate such a size, but never change it.
			if m.derivedDims == nil {
				m.derivedDims = map[string]int64{}
			}
			m.derivedDims[n] = dims[n]
		case len(have) == 0:
			return usagef("%s: the model has no symbolic dimensions (unnamed input dimensions are bound with %s)", m.sayDim(n, dims[n]), m.names.SayKey("InputShapes", "NAME", "SHAPE")).About(diag.Option, m.names.Name("Dims"))
		default:
			return usagef("%s: the model has no symbolic dimension %q (it has: %s)", m.sayDim(n, dims[n]), n, strings.Join(have, ", ")).About(diag.Option, m.names.Name("Dims"))
		}
	}
	merged := map[string]int64{}
	from := map[string]string{} // where a size for a dim_param came from, for conflicts
	for k, v := range dims {
		if _, derived := m.derivedDims[k]; !derived {
			merged[k], from[k] = v, m.names.SayKey("Dims", k, "")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(shapes)) {
		s := shapes[name]
		vi, ok := inputs[name]
		if !ok {
			return usagef("%s: the model has no input %q (its inputs: %s)", m.names.SayKey("InputShapes", name, ""), name, strings.Join(inputNames, ", ")).About(diag.Option, m.names.Name("InputShapes"))
		}
		tt := vi.GetType().GetTensorType()
		if tt == nil || tt.Shape == nil {
			continue // rank not declared: the given shape is the shape
		}
		ds := tt.Shape.Dim
		if len(ds) != len(s) {
			return usagef("%s: input %q has rank %d (%s), not %d", m.names.SayKey("InputShapes", name, joinDims(s)), name, len(ds), declaredShape(ds), len(s)).About(diag.Option, m.names.Name("InputShapes"))
		}
		for i, d := range ds {
			switch v := d.Value.(type) {
			case *onnxpb.TensorShapeProto_Dimension_DimValue:
				if v.DimValue >= 0 && v.DimValue != s[i] {
					return usagef("%s: dimension %d of input %q is fixed at %d (%s)", m.names.SayKey("InputShapes", name, joinDims(s)), i, name, v.DimValue, declaredShape(ds)).About(diag.Option, m.names.Name("InputShapes"))
				}
			case *onnxpb.TensorShapeProto_Dimension_DimParam:
				p := v.DimParam
				if p == "" {
					continue
				}
				if old, ok := merged[p]; ok && old != s[i] {
					return usagef("%s: dimension %d of input %q is %q, which %s sets to %d", m.names.SayKey("InputShapes", name, joinDims(s)), i, name, p, from[p], old).About(diag.Option, m.names.Name("InputShapes"))
				}
				merged[p] = s[i]
				if _, ok := from[p]; !ok {
					from[p] = m.names.SayKey("InputShapes", name, "")
				}
			}
		}
	}
	if len(merged) > 0 {
		m.dims = merged
	}
	m.inputShapes = shapes
	return nil
}

// InputShapes returns the --input-shape bindings the model was loaded with (a copy), for
// whoever must load it again the same way (a manifest, verify).
func (m *Model) InputShapes() map[string][]int64 {
	if m.inputShapes == nil {
		return nil
	}
	out := make(map[string][]int64, len(m.inputShapes))
	for k, v := range m.inputShapes {
		out[k] = append([]int64{}, v...)
	}
	return out
}

// boundInputShape applies an --input-shape binding to the declared shape of input name.
func (m *Model) boundInputShape(name string, declared graph.Shape) graph.Shape {
	s, ok := m.inputShapes[name]
	if !ok {
		return declared
	}
	return graph.ShapeOf(s...)
}

func joinDims(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.FormatInt(d, 10)
	}
	return strings.Join(parts, "x")
}

// declaredShape renders a declared shape as [batch,3,?].
func declaredShape(ds []*onnxpb.TensorShapeProto_Dimension) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		switch v := d.Value.(type) {
		case *onnxpb.TensorShapeProto_Dimension_DimValue:
			parts[i] = strconv.FormatInt(v.DimValue, 10)
		case *onnxpb.TensorShapeProto_Dimension_DimParam:
			parts[i] = v.DimParam
		default:
			parts[i] = "?"
		}
		if parts[i] == "" {
			parts[i] = "?"
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// UnboundInputs describes the graph inputs whose shape still has an unknown dimension after
// the bindings, e.g. `input [?,?]` or `state [2,batch,128]`; empty when every input size is
// known.
func (m *Model) UnboundInputs() []string {
	var out []string
	g := m.Graph
	for _, id := range g.Inputs {
		t := &g.Tensors[id]
		if t.NonTensor != "" || t.Shape.Known() {
			continue
		}
		if t.Shape == nil {
			out = append(out, t.Name+" (rank unknown)")
			continue
		}
		parts := make([]string, len(t.Shape))
		for i, d := range t.Shape {
			parts[i] = d.String()
			if parts[i] == "" || (!d.Known() && d.Param == "") {
				parts[i] = "?"
			}
		}
		out = append(out, t.Name+" ["+strings.Join(parts, ",")+"]")
	}
	return out
}

// inputShapeExample binds the first input with unknown dims, as --input-shape NAME=Nx3x224x224
// or Options.InputShapes["NAME"] = Nx3x224x224.
func (m *Model) inputShapeExample() string {
	g := m.Graph
	for _, id := range g.Inputs {
		t := &g.Tensors[id]
		if t.NonTensor != "" || t.Shape.Known() {
			continue
		}
		if t.Shape == nil {
			return m.names.SayKey("InputShapes", t.Name, "SHAPE")
		}
		parts := make([]string, len(t.Shape))
		for i, d := range t.Shape {
			parts[i] = "N"
			if d.Known() {
				parts[i] = strconv.FormatInt(d.Value, 10)
			}
		}
		return m.names.SayKey("InputShapes", t.Name, strings.Join(parts, "x"))
	}
	return m.names.SayKey("InputShapes", "NAME", "SHAPE")
}

// sayDim names a binding of Dims: --dim batch=4, or Options.Dims["batch"] = 4.
func (m *Model) sayDim(name string, v int64) string {
	return m.names.SayKey("Dims", name, strconv.FormatInt(v, 10))
}

// sayDims asks for bindings of Dims: --dim a=SIZE,b=SIZE, or Options.Dims["a"] = SIZE, ….
func (m *Model) sayDims(names []string, v string) string {
	if flag, ok := m.names["Dims"]; ok {
		return flag + " " + strings.Join(names, "="+v+",") + "=" + v
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = m.names.SayKey("Dims", n, v)
	}
	return strings.Join(parts, ", ")
}

// RequireInputSizes returns a usage *diag.Error naming what to bind when some input size is
// still unknown (every cost and plan depends on them), and the first shape inference error (an
// input size that breaks a node, such as a window larger than its input or shapes that do
// not broadcast) as an input *diag.Error about the model file naming the node.
func (m *Model) RequireInputSizes() error {
	if un := m.UnboundInputs(); len(un) > 0 {
		example := m.inputShapeExample()
		var msg string
		if len(m.SymbolicDims) > 0 {
			// Dims tied to the others (total = past + seq) follow from them.
			dep := m.dependentDims()
			var ask, follow []string
			for _, d := range m.SymbolicDims {
				if e, ok := dep[d]; ok {
					follow = append(follow, d+" = "+e)
				} else {
					ask = append(ask, d)
				}
			}
			bind := m.sayDims(ask, "SIZE")
			if len(follow) > 0 {
				bind += " (" + strings.Join(follow, ", ") + " follows)"
				if len(follow) > 1 {
					bind = strings.TrimSuffix(bind, "follows)") + "follow)"
				}
			}
			msg = fmt.Sprintf("the model has symbolic dimensions %s; bind them with %s (or whole inputs with %s)",
				strings.Join(m.SymbolicDims, ", "), bind, example)
			if anonymous := strings.Contains(strings.Join(un, " "), "?"); anonymous {
				msg += "; inputs with unnamed dimensions need " + m.names.Name("InputShapes")
			}
		} else {
			msg = "the model's inputs have dimensions of unknown size; bind them with " + example
		}
		return usagef("%s (unbound: %s)", msg, strings.Join(un, ", "))
	}
	if len(m.ShapeErrors) > 0 {
		msg := m.ShapeErrors[0]
		if n := len(m.ShapeErrors) - 1; n > 0 {
			msg += fmt.Sprintf(" (and %d more)", n)
		}
		return fileErr(m.Path, nil, "at these input sizes %s", msg)
	}
	return nil
}

// RequireKnownShapes returns a usage *diag.Error when, with every input size known, inference
// still leaves the output shapes of more than half of the computing nodes unknown (ops it does
// not know, data-dependent sizes, subgraphs it cannot analyse): their FLOPs and activation
// bytes count 0, so a plan would rest on guesses. The error names the first such node, the ops
// inference does not know and, where Options.Names has an "AllowUnknownShapes" entry (the
// command's flag), how to go on anyway. Constant nodes and nodes computed from weights alone
// do not count.
func (m *Model) RequireKnownShapes() error {
	g := m.Graph
	total, unknown, first := 0, 0, -1
	for _, v := range g.TopoOrder() {
		n := &g.Nodes[v]
		if n.Static {
			continue
		}
		total++
		if n.Subgraphs > 0 && n.FLOPs > 0 {
			continue // control flow costed from its subgraphs, whatever its outputs' shapes
		}
		for _, t := range n.Outputs {
			if t >= 0 && g.Tensors[t].NonTensor == "" && !g.Tensors[t].Shape.Known() {
				unknown++
				if first < 0 {
					first = v
				}
				break
			}
		}
	}
	if total == 0 || 2*unknown <= total {
		return nil
	}
	n := &g.Nodes[first]
	msg := fmt.Sprintf("shape inference leaves the outputs of %d of %d nodes unknown (the first: node %s (%s)), so their FLOPs and activation bytes are unknown and a plan would be guesswork",
		unknown, total, n.Label(), n.OpType)
	if len(m.Unsupported) > 0 {
		msg += "; ops shape inference does not know: " + strings.Join(m.Unsupported, ", ")
	}
	if un := m.UnboundInputs(); len(un) > 0 {
		msg += "; bind the inputs with " + m.inputShapeExample() + " (unbound: " + strings.Join(un, ", ") + ")"
	}
	if flag, ok := m.names["AllowUnknownShapes"]; ok { // the command's way past this check
		return usagef("%s; %s plans anyway, counting them as 0", msg, flag)
	}
	return usagef("%s", msg)
}

// checkDerivedDims checks the sizes given for dims that only outputs or value_info carry
// (inference derives them from the input sizes) against what inference derived: the same size
// is accepted (a manifest restating the plan's sizes), another size or one inference cannot
// derive is a usage error.
func (m *Model) checkDerivedDims() error {
	if len(m.derivedDims) == 0 {
		return nil
	}
	derived := map[string]int64{}
	pg := m.proto.Graph
	for _, l := range [][]*onnxpb.ValueInfoProto{pg.Output, pg.ValueInfo} {
		for _, vi := range l {
			id, ok := m.Graph.TensorByName(vi.GetName())
			if !ok {
				continue
			}
			shape := m.Graph.Tensors[id].Shape
			for i, d := range tensorDims(vi.GetType()) {
				if p, ok := d.Value.(*onnxpb.TensorShapeProto_Dimension_DimParam); ok && i < len(shape) && shape[i].Known() {
					if _, have := derived[p.DimParam]; !have {
						derived[p.DimParam] = shape[i].Value
					}
				}
			}
		}
	}
	inputs := m.SymbolicDims
	for _, n := range slices.Sorted(maps.Keys(m.derivedDims)) {
		v := m.derivedDims[n]
		got, ok := derived[n]
		switch {
		case ok && got == v:
		case ok:
			return usagef("%s: no input has dimension %q; inference derives it from the input sizes as %d", m.sayDim(n, v), n, got).About(diag.Option, m.names.Name("Dims"))
		case len(inputs) > 0:
			return usagef("%s: no input has dimension %q (only outputs or value_info carry it; its size follows from the inputs' dimensions: %s)", m.sayDim(n, v), n, strings.Join(inputs, ", ")).About(diag.Option, m.names.Name("Dims"))
		default:
			return usagef("%s: no input has dimension %q (only outputs or value_info carry it; its size follows from the inputs' sizes, which %s binds)", m.sayDim(n, v), n, m.names.Name("InputShapes")).About(diag.Option, m.names.Name("Dims"))
		}
	}
	return nil
}
