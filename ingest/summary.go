package ingest

import (
	"encoding/json"
	"sort"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops"
)

// Summary is what `onnxpart inspect` reports about a model; its JSON form is a contract
// (field names are stable across onnxpart's --json outputs).
type Summary struct {
	// Path is the model file as given, SHA256 its hash (hex).
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// IRVersion is the model's ir_version; Producer its producer_name and producer_version,
	// space-separated.
	IRVersion int64  `json:"ir_version"`
	Producer  string `json:"producer,omitempty"`
	// Opsets maps each domain to its opset version ("ai.onnx" for the default domain).
	Opsets map[string]int64 `json:"opsets"`
	// Nodes and Edges count the graph's nodes and node-to-node dependencies; Ops counts
	// nodes per op type (domain-qualified outside ONNX, e.g. "com.microsoft:FusedConv").
	Nodes int            `json:"nodes"`
	Edges int            `json:"edges"`
	Ops   map[string]int `json:"ops"`
	// Params counts the elements of the weights some node reads (initializers and
	// Constant-node values, each once, and the weights inside control-flow subgraphs), ParamsBytes their bytes. FLOPs sums the nodes' FLOPs
	// (nodes with tensors of unknown shape count 0) and ActivationBytes the sizes of the
	// other node outputs whose size is known.
	Params int64 `json:"params"`
	// QuantParams counts the quantisation metadata among the weights (scales and zero
	// points of quantised weights), which Params leaves out; a packed weight counts in Params
	// by its logical values (MatMulNBits' int4 B: N·K), not its bytes.
	QuantParams     int64 `json:"quant_params,omitempty"`
	ParamsBytes     int64 `json:"params_bytes"`
	FLOPs           int64 `json:"flops"`
	ActivationBytes int64 `json:"activation_bytes"`
	// Inputs and Outputs are the graph's, in model order.
	Inputs  []TensorInfo `json:"inputs"`
	Outputs []TensorInfo `json:"outputs"`
	// UnsupportedOps are the op types shape inference does not know.
	UnsupportedOps []string `json:"unsupported_ops"`
	// UnknownShapeTensors counts the tensors whose shape is not known, in rank or in a dim
	// that no symbol names; UnknownShapeNames names them, sorted. SymbolicShapeTensors
	// counts those known up to the symbolic dims (batch, seq, …): binding the dims sizes
	// them.
	UnknownShapeTensors  int      `json:"unknown_shape_tensors"`
	UnknownShapeNames    []string `json:"unknown_shape_names,omitempty"`
	SymbolicShapeTensors int      `json:"symbolic_shape_tensors"`
	// FLOPsAt are the dim sizes FLOPs were counted at: the dims bound when the model was
	// loaded (given, derived or defaults); empty when none was. FLOPsUncounted counts the
	// nodes whose FLOPs could not be counted because a tensor they read or write has no
	// known size (an unbound dim): FLOPs leaves them out.
	FLOPsAt        map[string]int64 `json:"flops_at,omitempty"`
	FLOPsUncounted int              `json:"flops_uncounted_nodes"`
	// SymbolicDims are the dim_param names left unbound (see Options.Dims).
	SymbolicDims []string `json:"symbolic_dims"`
	// ExternalData is true when some weight lives in an external data file.
	ExternalData bool     `json:"external_data"`
	Warnings     []string `json:"warnings,omitempty"`
	// Tensors lists every tensor, with producer and consumers (Summarize(true) only).
	Tensors []TensorInfo `json:"tensors,omitempty"`
}

// TensorInfo describes one tensor in JSON outputs: {name, dtype, shape, bytes} as in every
// onnxpart output, plus its kind and, in a tensor list, the nodes at its ends.
type TensorInfo struct {
	Name string `json:"name"`
	// DType is the element type's name (float32, …), or the type of a non-tensor value
	// such as seq(tensor(float32)).
	DType string    `json:"dtype"`
	Shape ShapeJSON `json:"shape"`
	// Bytes is the size, -1 when the shape or element size is unknown.
	Bytes int64 `json:"bytes"`
	// Kind is input, initializer or activation.
	Kind string `json:"kind,omitempty"`
	// Producer and Consumers are node labels (graph.Node.Label), filled by Info withEdges.
	Producer  string   `json:"producer,omitempty"`
	Consumers []string `json:"consumers,omitempty"`
}

// ShapeJSON marshals a shape as a JSON array of sizes, with symbolic dimensions as their
// names ("?" when anonymous), or null when the rank is unknown.
type ShapeJSON graph.Shape

// MarshalJSON implements json.Marshaler.
func (s ShapeJSON) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	out := make([]any, len(s))
	for i, d := range s {
		if d.Known() {
			out[i] = d.Value
		} else {
			out[i] = d.String()
		}
	}
	return json.Marshal(out)
}

// Info describes tensor id of g for JSON outputs.
func Info(g *graph.Graph, id int, withEdges bool) TensorInfo {
	t := &g.Tensors[id]
	ti := TensorInfo{Name: t.Name, DType: t.DType.String(), Shape: ShapeJSON(t.Shape), Bytes: t.Bytes, Kind: t.Kind.String()}
	if t.NonTensor != "" {
		ti.DType = t.NonTensor
	}
	if withEdges {
		if t.Producer >= 0 {
			ti.Producer = g.Nodes[t.Producer].Label()
		}
		for _, c := range t.Consumers {
			ti.Consumers = append(ti.Consumers, g.Nodes[c].Label())
		}
	}
	return ti
}

// Summarize computes the model summary; withTensors adds every tensor.
func (m *Model) Summarize(withTensors bool) *Summary {
	g := m.Graph
	s := &Summary{
		Path: m.Path, SHA256: m.SHA256, IRVersion: m.proto.GetIrVersion(),
		Producer: m.proto.GetProducerName(), Opsets: map[string]int64{},
		Nodes: len(g.Nodes), Edges: g.NumEdges(), Ops: map[string]int{},
		FLOPs: g.TotalFLOPs(), ParamsBytes: m.ParamBytes(),
		UnsupportedOps: append([]string{}, m.Unsupported...),
		SymbolicDims:   append([]string{}, m.SymbolicDims...),
		ExternalData:   m.ExternalData, Warnings: m.Warnings,
	}
	if m.proto.GetProducerVersion() != "" {
		s.Producer += " " + m.proto.GetProducerVersion()
	}
	for d, v := range g.Opsets {
		if d == "" {
			d = "ai.onnx"
		}
		s.Opsets[d] = v
	}
	for i := range g.Nodes {
		s.Ops[qualifiedOp(g.Nodes[i].Domain, g.Nodes[i].OpType)]++
		if g.Nodes[i].Subgraphs > 0 && i < len(m.proto.GetGraph().GetNode()) {
			n, _ := subgraphWeights(m.proto.Graph.Node[i]) // weights inside control flow
			s.Params += n
		}
	}
	for i := range g.Tensors {
		t := &g.Tensors[i]
		if isParam(g, i) && len(t.Consumers) > 0 && t.Shape.Known() {
			n, _ := t.Shape.NumElements()
			p, q := weightParams(g, i, n)
			s.Params += p
			s.QuantParams += q
		}
		if t.Kind == graph.Activation && t.Bytes > 0 && !isParam(g, i) {
			s.ActivationBytes += t.Bytes
		}
		if (!t.Shape.Known() || t.Bytes < 0) && t.NonTensor == "" && (len(t.Consumers) > 0 || t.Producer >= 0 || t.IsOutput) {
			if symbolicShape(t.Shape) {
				s.SymbolicShapeTensors++
			} else {
				s.UnknownShapeTensors++
				s.UnknownShapeNames = append(s.UnknownShapeNames, t.Name)
			}
		}
	}
	sort.Strings(s.UnknownShapeNames)
	if d := m.Dims(); len(d) > 0 {
		s.FLOPsAt = d
	}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		for _, t := range append(append([]int{}, n.Inputs...), n.Outputs...) {
			if t >= 0 && g.Tensors[t].NonTensor == "" && !g.Tensors[t].Shape.Known() {
				s.FLOPsUncounted++
				break
			}
		}
	}
	for _, id := range g.Inputs {
		s.Inputs = append(s.Inputs, Info(g, id, false))
	}
	for _, id := range g.Outputs {
		s.Outputs = append(s.Outputs, Info(g, id, false))
	}
	if withTensors {
		for i := range g.Tensors {
			s.Tensors = append(s.Tensors, Info(g, i, true))
		}
	}
	return s
}

// weightParams splits weight t (n stored elements) into logical parameters and quantisation
// metadata by the registry entry of the first node that reads it.
func weightParams(g *graph.Graph, t int, n int64) (params, quant int64) {
	for _, c := range g.Tensors[t].Consumers {
		nd := &g.Nodes[c]
		for i, in := range nd.Inputs {
			if in == t {
				return ops.WeightParams(g, nd, i, n)
			}
		}
	}
	return n, 0
}

// symbolicShape reports whether a shape that is not fully known has a rank and names every
// dim it does not size.
func symbolicShape(sh graph.Shape) bool {
	if sh == nil {
		return false
	}
	for _, d := range sh {
		if !d.Known() && d.Param == "" {
			return false
		}
	}
	return true
}
