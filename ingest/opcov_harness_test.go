package ingest

// Harness for the operator-coverage tests (opcov_test.go): small models built in Go with
// onnxpb, run both through ingest and through ONNX Runtime, comparing the dtype, shape and
// folded integer value of every tensor a node produces.
//
// ORT's side is observed at run time, not from ORT's own shape inference: for every tensor X
// the model gets a probe Concat([-1], Shape(X)) (never empty, never a scalar, so the Go
// binding can read it whatever X is), and for tensors ingest claims to know the value of,
// Concat([0], Cast(Reshape(X, [-1]), int64)). X itself is declared as an untyped graph output
// so that the session's output metadata gives its element type.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/onnxpb"

	"github.com/x448/float16"
)

// ocModel builds one test model.
type ocModel struct {
	opset  int64
	opsets map[string]int64
	g      *onnxpb.GraphProto
	feeds  map[string]*ocFeed
	seq    *int // shared with subgraphs so that names are unique
	rng    *rand.Rand
	// anon holds tensors allowed to have anonymous unknown dims (see ocCase.anon).
	anon map[string]bool
}

// ocFeed is a graph input: its declared dims (int64 or symbolic string) and optional data.
type ocFeed struct {
	dt     graph.DType
	dims   []any
	values []float64 // nil: random
}

func newOCModel(opset int64) *ocModel {
	return &ocModel{opset: opset, opsets: map[string]int64{}, g: &onnxpb.GraphProto{Name: proto.String("opcov")},
		feeds: map[string]*ocFeed{}, seq: new(int), rng: rand.New(rand.NewSource(7)), anon: map[string]bool{}}
}

func (m *ocModel) name(prefix string) string {
	*m.seq++
	return fmt.Sprintf("%s_%d", prefix, *m.seq)
}

// in declares a graph input; dims are int (static) or string (symbolic).
func (m *ocModel) in(dt graph.DType, dims ...any) string {
	return m.inData(dt, nil, dims...)
}

// inUnranked declares a graph input of unknown rank (fed with the given dims).
func (m *ocModel) inUnranked(dt graph.DType, feedDims ...any) string {
	n := m.inData(dt, nil, feedDims...)
	m.g.Input[len(m.g.Input)-1].Type.GetTensorType().Shape = nil
	return n
}

// inData declares a graph input fed with the given values.
func (m *ocModel) inData(dt graph.DType, values []float64, dims ...any) string {
	n := m.name("in")
	if dims == nil {
		dims = []any{} // a scalar; inUnranked declares no shape
	}
	m.g.Input = append(m.g.Input, &onnxpb.ValueInfoProto{Name: proto.String(n), Type: ocTensorType(dt, dims)})
	m.feeds[n] = &ocFeed{dt: dt, dims: dims, values: values}
	return n
}

func ocTensorType(dt graph.DType, dims []any) *onnxpb.TypeProto {
	var sp *onnxpb.TensorShapeProto
	if dims != nil {
		sp = &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{}}
		for _, d := range dims {
			switch v := d.(type) {
			case string:
				sp.Dim = append(sp.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: v}})
			case int:
				sp.Dim = append(sp.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(v)}})
			case int64:
				sp.Dim = append(sp.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: v}})
			default:
				panic(fmt.Sprintf("bad dim %v", d))
			}
		}
	}
	return &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
		ElemType: proto.Int32(int32(dt)), Shape: sp}}}
}

// ocTensor encodes values (float64 for every element type) as a raw TensorProto.
func ocTensor(dt graph.DType, dims []int64, values []float64) *onnxpb.TensorProto {
	t := &onnxpb.TensorProto{Dims: dims, DataType: proto.Int32(int32(dt))}
	t.RawData = ocEncode(dt, values)
	if t.RawData == nil {
		t.RawData = []byte{}
	}
	return t
}

func ocEncode(dt graph.DType, values []float64) []byte {
	var b []byte
	for _, v := range values {
		switch dt {
		case graph.Float:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
		case graph.Double:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		case graph.Float16:
			b = binary.LittleEndian.AppendUint16(b, float16.Fromfloat32(float32(v)).Bits())
		case graph.Int64, graph.Uint64:
			b = binary.LittleEndian.AppendUint64(b, uint64(int64(v)))
		case graph.Int32, graph.Uint32:
			b = binary.LittleEndian.AppendUint32(b, uint32(int32(v)))
		case graph.Int16, graph.Uint16:
			b = binary.LittleEndian.AppendUint16(b, uint16(int16(v)))
		case graph.Int8, graph.Uint8, graph.Bool:
			b = append(b, byte(int8(v)))
		default:
			panic("ocEncode: unsupported dtype " + dt.String())
		}
	}
	return b
}

func ocFloats[T int | int64 | float64](v []T) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// init adds an initializer with the given values.
func (m *ocModel) init(dt graph.DType, dims []int64, values []float64) string {
	n := m.name("w")
	t := ocTensor(dt, dims, values)
	t.Name = proto.String(n)
	m.g.Initializer = append(m.g.Initializer, t)
	return n
}

// ints adds a 1-D int64 initializer (encoded exactly, INT64_MIN and MAX included).
func (m *ocModel) ints(v ...int64) string {
	n := m.name("w")
	t := &onnxpb.TensorProto{Name: proto.String(n), Dims: []int64{int64(len(v))}, DataType: proto.Int32(int32(graph.Int64)), RawData: []byte{}}
	for _, x := range v {
		t.RawData = binary.LittleEndian.AppendUint64(t.RawData, uint64(x))
	}
	m.g.Initializer = append(m.g.Initializer, t)
	return n
}

// scalarI adds a 0-D int64 initializer.
func (m *ocModel) scalarI(v int64) string {
	return m.init(graph.Int64, []int64{}, []float64{float64(v)})
}

// scalarF adds a 0-D float initializer.
func (m *ocModel) scalarF(v float64) string {
	return m.init(graph.Float, []int64{}, []float64{v})
}

// weight adds a random initializer of the given shape and element type.
func (m *ocModel) weight(dt graph.DType, dims ...int64) string {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		switch {
		case dt.IsFloat():
			v[i] = m.rng.Float64()*2 - 1
		case dt == graph.Bool:
			v[i] = float64(m.rng.Intn(2))
		default:
			v[i] = float64(m.rng.Intn(3))
		}
	}
	return m.init(dt, append([]int64{}, dims...), v)
}

// op adds a node with one output and returns its name.
func (m *ocModel) op(opType string, inputs []string, attrs ...*onnxpb.AttributeProto) string {
	return m.opN(opType, inputs, 1, attrs...)[0]
}

// opN adds a node with n outputs ("" entries in inputs are omitted optional inputs).
func (m *ocModel) opN(opType string, inputs []string, n int, attrs ...*onnxpb.AttributeProto) []string {
	return m.opD("", opType, inputs, n, attrs...)
}

// opD adds a node of a given domain.
func (m *ocModel) opD(domain, opType string, inputs []string, n int, attrs ...*onnxpb.AttributeProto) []string {
	base := m.name(strings.ToLower(opType))
	outs := make([]string, n)
	for i := range outs {
		outs[i] = fmt.Sprintf("%s_o%d", base, i)
	}
	np := &onnxpb.NodeProto{Name: proto.String(base), OpType: proto.String(opType), Input: inputs, Output: outs, Attribute: attrs}
	if domain != "" {
		np.Domain = proto.String(domain)
	}
	m.g.Node = append(m.g.Node, np)
	return outs
}

// loose marks tensors whose dims may legitimately be unknown to inference (they depend on
// run-time data or on unbound symbolic dims); it returns its first argument.
func (m *ocModel) loose(names ...string) string {
	for _, n := range names {
		m.anon[n] = true
	}
	return names[0]
}

// skipOut replaces output i of the last node by "" (an omitted optional output).
func (m *ocModel) skipOut(i int) {
	m.g.Node[len(m.g.Node)-1].Output[i] = ""
}

// Attribute constructors.
func aI(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}
func aIs(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}
func aF(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}
func aFs(name string, v ...float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOATS.Enum(), Floats: v}
}
func aS(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}
func aSs(name string, v ...string) *onnxpb.AttributeProto {
	a := &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRINGS.Enum()}
	for _, s := range v {
		a.Strings = append(a.Strings, []byte(s))
	}
	return a
}
func aT(name string, t *onnxpb.TensorProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: t}
}
func aG(name string, g *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: g}
}

// ocSub is a subgraph under construction (If/Loop bodies).
type ocSub struct {
	*ocModel
}

// sub starts a subgraph sharing the model's name counter.
func (m *ocModel) sub() *ocSub {
	return &ocSub{&ocModel{opset: m.opset, g: &onnxpb.GraphProto{Name: proto.String(m.name("body"))},
		seq: m.seq, rng: m.rng, feeds: map[string]*ocFeed{}}}
}

// subIn declares a subgraph input.
func (s *ocSub) subIn(dt graph.DType, dims ...any) string {
	n := s.name("sin")
	if dims == nil {
		dims = []any{}
	}
	s.g.Input = append(s.g.Input, &onnxpb.ValueInfoProto{Name: proto.String(n), Type: ocTensorType(dt, dims)})
	return n
}

// out declares a subgraph output; dims nil leaves the shape undeclared.
func (s *ocSub) out(name string, dt graph.DType, dims []any) {
	s.g.Output = append(s.g.Output, &onnxpb.ValueInfoProto{Name: proto.String(name), Type: ocTensorType(dt, dims)})
}

// ocT is the part of testing.T the harness uses (a recorder stands in for it in the
// harness's own test).
type ocT interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	TempDir() string
}

// ocCase is one model of the coverage table.
type ocCase struct {
	name  string
	opset int64
	build func(m *ocModel)
	// bind binds symbolic dims through ingest.Options{Dims}; run gives the sizes of the other
	// symbolic dims for the ORT run only (inference must keep them symbolic or unknown).
	bind map[string]int64
	run  map[string]int64
	// anon lists tensors (by name prefix, e.g. "nonzero") whose dims may be anonymous
	// unknowns: data-dependent sizes, or sizes that depend on an unbound symbolic dim.
	anon []string
	// check runs extra assertions on the ingested model.
	check func(t ocT, m *Model)
	// ortRejects marks a case whose model ORT refuses to load or run; the string must occur
	// in ORT's error (the case then checks only what check asserts).
	ortRejects string
	// tamper edits ORT's results before the comparison (only the harness's own test).
	tamper func(name string, r *ocORTResult)
}

// ocIRVersion picks an IR version ORT accepts for an opset.
func ocIRVersion(opset int64) int64 {
	switch {
	case opset >= 23:
		return 11
	case opset >= 21:
		return 10
	default:
		return 8
	}
}

func (m *ocModel) modelProto() *onnxpb.ModelProto {
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(ocIRVersion(m.opset)), Graph: m.g,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(m.opset)}}}
	var doms []string
	for d := range m.opsets {
		doms = append(doms, d)
	}
	sort.Strings(doms)
	for _, d := range doms {
		mp.OpsetImport = append(mp.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String(d), Version: proto.Int64(m.opsets[d])})
	}
	return mp
}

func ocWrite(t ocT, path string, mp *onnxpb.ModelProto) {
	t.Helper()
	b, err := proto.Marshal(mp)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatalf("%v", err)
	}
}

// ocORTResult is what ORT reports of one tensor.
type ocORTResult struct {
	dt    graph.DType
	shape []int64
	value []int64 // only for tensors ingest has a value for
}

// runOCCase ingests the case's model, runs it in ORT and compares every produced tensor.
// It returns the ingested model (nil when the case stopped early).
func runOCCase(t ocT, c ocCase) *Model {
	t.Helper()
	m := newOCModel(c.opset)
	c.build(m)
	mp := m.modelProto()
	// Every node output is a graph output (so nothing is dead), declared without a type so
	// that neither ingest nor ORT can take anything from the declaration (value_info the case
	// declares on purpose is left alone).
	inValueInfo := map[string]bool{}
	for _, vi := range mp.Graph.ValueInfo {
		inValueInfo[vi.GetName()] = true
	}
	for _, n := range mp.Graph.Node {
		for _, o := range n.Output {
			if o != "" && !inValueInfo[o] {
				mp.Graph.Output = append(mp.Graph.Output, &onnxpb.ValueInfoProto{Name: proto.String(o)})
			}
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "model.onnx")
	ocWrite(t, path, mp)
	im, err := Load(path, Options{Dims: c.bind})
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	if c.ortRejects == "" { // a model ORT rejects may well make inference report errors
		for _, w := range im.Warnings {
			t.Errorf("ingest warning: %s", w)
		}
	}
	if len(im.Unsupported) > 0 {
		t.Errorf("ingest does not support %v", im.Unsupported)
	}
	g := im.Graph

	// The probe model.
	pm := proto.Clone(mp).(*onnxpb.ModelProto)
	pg := pm.Graph
	minus1 := ocTensor(graph.Int64, []int64{1}, []float64{-1})
	minus1.Name = proto.String("__probe_m1")
	zero := ocTensor(graph.Int64, []int64{1}, []float64{0})
	zero.Name = proto.String("__probe_zero")
	pg.Initializer = append(pg.Initializer, minus1, zero)
	pg.Output = nil
	var tensors []int // ids of the tensors compared
	var fetch []string
	for id := range g.Tensors {
		tn := &g.Tensors[id]
		if tn.Kind != graph.Activation || tn.Producer < 0 || tn.NonTensor != "" {
			continue
		}
		tensors = append(tensors, id)
		n := tn.Name
		pg.Output = append(pg.Output, &onnxpb.ValueInfoProto{Name: proto.String(n)})
		pg.Node = append(pg.Node,
			&onnxpb.NodeProto{OpType: proto.String("Shape"), Input: []string{n}, Output: []string{"__shape_" + n}},
			&onnxpb.NodeProto{OpType: proto.String("Concat"), Input: []string{"__probe_m1", "__shape_" + n},
				Output: []string{"__probe_" + n}, Attribute: []*onnxpb.AttributeProto{aI("axis", 0)}})
		pg.Output = append(pg.Output, &onnxpb.ValueInfoProto{Name: proto.String("__probe_" + n), Type: ocTensorType(graph.Int64, []any{"p"})})
		fetch = append(fetch, "__probe_"+n)
		if tn.Value != nil {
			pg.Node = append(pg.Node,
				&onnxpb.NodeProto{OpType: proto.String("Reshape"), Input: []string{n, "__probe_m1"}, Output: []string{"__flat_" + n}},
				&onnxpb.NodeProto{OpType: proto.String("Cast"), Input: []string{"__flat_" + n}, Output: []string{"__cast_" + n},
					Attribute: []*onnxpb.AttributeProto{aI("to", int64(graph.Int64))}},
				&onnxpb.NodeProto{OpType: proto.String("Concat"), Input: []string{"__probe_zero", "__cast_" + n},
					Output: []string{"__value_" + n}, Attribute: []*onnxpb.AttributeProto{aI("axis", 0)}})
			pg.Output = append(pg.Output, &onnxpb.ValueInfoProto{Name: proto.String("__value_" + n), Type: ocTensorType(graph.Int64, []any{"v"})})
			fetch = append(fetch, "__value_"+n)
		}
	}
	if len(m.feeds) == 0 { // the Go binding cannot run a session without inputs
		pg.Input = append(pg.Input, &onnxpb.ValueInfoProto{Name: proto.String("__probe_dummy"), Type: ocTensorType(graph.Float, []any{1})})
	}
	ppath := filepath.Join(dir, "probe.onnx")
	ocWrite(t, ppath, pm)
	_, outs, err := ort.ModelIO(ppath)
	if c.ortRejects != "" && err != nil && strings.Contains(err.Error(), c.ortRejects) {
		ocCheck(t, c, im)
		return nil
	}
	if err != nil {
		t.Fatalf("ORT: %v", err)
	}
	ortType := map[string]graph.DType{}
	for _, o := range outs {
		ortType[o.Name] = o.DType
	}
	// Feeds.
	sizes := map[string]int64{}
	for k, v := range c.bind {
		sizes[k] = v
	}
	for k, v := range c.run {
		sizes[k] = v
	}
	var inNames []string
	feeds := map[string]*ort.Tensor{}
	rng := rand.New(rand.NewSource(3))
	for _, vi := range mp.Graph.Input {
		f := m.feeds[vi.GetName()]
		if f == nil {
			continue
		}
		var dims []int64
		for _, d := range f.dims {
			switch v := d.(type) {
			case string:
				s, ok := sizes[v]
				if !ok {
					t.Fatalf("no run size for symbolic dim %q", v)
				}
				dims = append(dims, s)
			case int:
				dims = append(dims, int64(v))
			case int64:
				dims = append(dims, v)
			}
		}
		n := int64(1)
		for _, d := range dims {
			n *= d
		}
		vals := f.values
		if vals == nil {
			vals = make([]float64, n)
			for i := range vals {
				switch {
				case f.dt.IsFloat():
					vals[i] = rng.Float64()*2 - 1
				default:
					vals[i] = float64(rng.Intn(2))
				}
			}
		}
		if int64(len(vals)) != n {
			t.Fatalf("input %s: %d values for shape %v", vi.GetName(), len(vals), dims)
		}
		inNames = append(inNames, vi.GetName())
		feeds[vi.GetName()] = &ort.Tensor{DType: f.dt, Shape: dims, Data: ocEncode(f.dt, vals)}
	}
	if len(m.feeds) == 0 {
		inNames = append(inNames, "__probe_dummy")
		feeds["__probe_dummy"] = &ort.Tensor{DType: graph.Float, Shape: []int64{1}, Data: make([]byte, 4)}
	}
	s, err := ort.NewSession(ppath, inNames, fetch, ort.Options{})
	if c.ortRejects != "" && err != nil && strings.Contains(err.Error(), c.ortRejects) {
		ocCheck(t, c, im)
		return nil
	}
	if err != nil {
		t.Fatalf("ORT: %v", err)
	}
	defer s.Close()
	res, err := s.Run(feeds, nil)
	if c.ortRejects != "" && err != nil && strings.Contains(err.Error(), c.ortRejects) {
		ocCheck(t, c, im)
		return nil
	}
	if err != nil {
		t.Fatalf("ORT run: %v", err)
	}
	if c.ortRejects != "" {
		t.Fatalf("expected ORT to reject the model with %q, but it ran", c.ortRejects)
	}
	got := map[string]*ocORTResult{}
	for _, id := range tensors {
		n := g.Tensors[id].Name
		p := ocInt64s(res["__probe_"+n])
		r := &ocORTResult{dt: ortType[n], shape: p[1:]}
		if v, ok := res["__value_"+n]; ok {
			r.value = ocInt64s(v)[1:]
		}
		got[n] = r
		if c.tamper != nil {
			c.tamper(n, r)
		}
	}
	for n := range m.anon {
		c.anon = append(c.anon, n)
	}
	ocCompare(t, c, im, tensors, got, sizes)
	ocCheck(t, c, im)
	return im
}

// ocCheck runs the case's own assertions (also for models ORT rejects).
func ocCheck(t ocT, c ocCase, im *Model) {
	if c.check != nil {
		c.check(t, im)
	}
}

func ocInt64s(t *ort.Tensor) []int64 {
	if t == nil {
		return nil
	}
	v := make([]int64, len(t.Data)/8)
	for i := range v {
		v[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
	}
	return v
}

// ocCompare checks ingest's view of each tensor against ORT's: the dtype must match; every
// known dim must equal ORT's; a symbolic dim must be the symbol of an unbound input dim with
// ORT's size; an anonymous unknown dim is allowed only in tensors the case lists in anon; a
// folded value must equal ORT's.
func ocCompare(t ocT, c ocCase, im *Model, tensors []int, got map[string]*ocORTResult, sizes map[string]int64) {
	t.Helper()
	g := im.Graph
	symbols := map[string]bool{}
	for _, s := range im.SymbolicDims {
		symbols[s] = true
	}
	for _, id := range tensors {
		tn := &g.Tensors[id]
		r := got[tn.Name]
		what := fmt.Sprintf("%s (%s)", tn.Name, g.Nodes[tn.Producer].OpType)
		if r.dt != tn.DType {
			t.Errorf("%s: ORT dtype %s, ingest %s", what, r.dt, tn.DType)
		}
		anonOK := false
		for _, p := range c.anon {
			if strings.HasPrefix(tn.Name, p) {
				anonOK = true
			}
		}
		if tn.Shape == nil {
			if !anonOK {
				t.Errorf("%s: ORT shape %v, ingest rank unknown", what, r.shape)
			}
			continue
		}
		if len(tn.Shape) != len(r.shape) {
			t.Errorf("%s: ORT shape %v, ingest %v", what, r.shape, tn.Shape)
			continue
		}
		for i, d := range tn.Shape {
			switch {
			case d.Known() && d.Value != r.shape[i]:
				t.Errorf("%s: ORT shape %v, ingest %v", what, r.shape, tn.Shape)
			case !d.Known() && d.Param != "":
				// A symbol of an unbound input dim, or an expression in such symbols.
				p, _ := polyOf(d, false)
				var v int64
				for mono, coef := range p {
					term := coef
					for _, a := range strings.Split(mono, "*") {
						if a == "" {
							continue
						}
						if _, bound := c.bind[a]; bound || !symbols[a] {
							t.Errorf("%s: dim %d is %q, and %q is no unbound input dim", what, i, d.Param, a)
						}
						term *= sizes[a]
					}
					v += term
				}
				if v != r.shape[i] {
					t.Errorf("%s: ORT shape %v, ingest %v (%s=%d)", what, r.shape, tn.Shape, d.Param, v)
				}
			case !d.Known() && !anonOK:
				t.Errorf("%s: ORT shape %v, ingest %v (dim %d unknown)", what, r.shape, tn.Shape, i)
			}
			if !d.Known() {
				continue
			}
		}
		if tn.Value != nil && r.value != nil && fmt.Sprint(tn.Value) != fmt.Sprint(r.value) {
			t.Errorf("%s: ORT value %v, ingest folded %v", what, r.value, tn.Value)
		}
	}
}

// ocTensorNamed finds a tensor by name prefix (the first match in graph order).
func ocTensorNamed(t ocT, im *Model, prefix string) *graph.Tensor {
	t.Helper()
	for i := range im.Graph.Tensors {
		if strings.HasPrefix(im.Graph.Tensors[i].Name, prefix) {
			return &im.Graph.Tensors[i]
		}
	}
	t.Fatalf("no tensor named %s*", prefix)
	return nil
}

// ocNodeOf finds the first node of an op type.
func ocNodeOf(t ocT, im *Model, op string) *graph.Node {
	t.Helper()
	for i := range im.Graph.Nodes {
		if im.Graph.Nodes[i].OpType == op {
			return &im.Graph.Nodes[i]
		}
	}
	t.Fatalf("no %s node", op)
	return nil
}
