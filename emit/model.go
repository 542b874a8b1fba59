package emit

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// externalTensor is a weight written to a stage's data file: from the source's external
// data (path, offset) or from inline bytes.
type externalTensor struct {
	name   string
	path   string // source data file, or "" for inline bytes
	offset int64
	length int64
	inline []byte
	// at is the offset in the stage's data file.
	at int64
}

// stageModel builds stage i's model. Unchanged messages of the source (nodes, inline
// weights, opsets, functions) are shared, not copied: the source is never modified.
func (l *Layout) stageModel(i int) (*onnxpb.ModelProto, []*externalTensor, error) {
	src := l.m.Proto()
	g := l.m.Graph
	sp := l.stages[i]
	pg := src.Graph

	gr := &onnxpb.GraphProto{
		Name:          proto.String(fmt.Sprintf("%s_stage%d", pg.GetName(), i)),
		DocString:     pg.DocString,
		MetadataProps: pg.MetadataProps,
	}
	for _, v := range sp.nodes {
		gr.Node = append(gr.Node, pg.Node[v])
	}
	// Source value infos by name: boundary types fall back on them for non-tensor values,
	// and tensors internal to the stage keep the source's annotations.
	srcVI := map[string]*onnxpb.ValueInfoProto{}
	for _, l := range [][]*onnxpb.ValueInfoProto{pg.ValueInfo, pg.Output, pg.Input} {
		for _, vi := range l {
			srcVI[vi.GetName()] = vi
		}
	}
	irOld := src.GetIrVersion() < 4
	for _, t := range sp.inputs {
		vi, err := boundaryInfo(g, t, l.shape(t), srcVI)
		if err != nil {
			return nil, nil, err
		}
		gr.Input = append(gr.Input, vi)
	}
	for _, t := range sp.outputs {
		vi, err := boundaryInfo(g, t, l.shape(t), srcVI)
		if err != nil {
			return nil, nil, err
		}
		gr.Output = append(gr.Output, vi)
	}
	boundary := map[string]bool{}
	for _, t := range append(append([]int{}, sp.inputs...), sp.outputs...) {
		boundary[g.Tensors[t].Name] = true
	}
	local := map[string]bool{}
	for _, v := range sp.nodes {
		for _, t := range g.Nodes[v].Outputs {
			if t >= 0 {
				local[g.Tensors[t].Name] = true
			}
		}
	}
	batched := map[string]bool{} // internal tensors whose declared leading dim is the load's, not the batch's
	for t, ok := range l.batched {
		if ok {
			batched[g.Tensors[t].Name] = true
		}
	}
	for _, vi := range pg.ValueInfo {
		if local[vi.GetName()] && !boundary[vi.GetName()] && !batched[vi.GetName()] {
			gr.ValueInfo = append(gr.ValueInfo, vi)
		}
	}
	// Weights.
	sparse := map[string]*onnxpb.SparseTensorProto{}
	for _, st := range pg.SparseInitializer {
		sparse[st.GetValues().GetName()] = st
	}
	var dense []*onnxpb.TensorProto
	for _, t := range sp.inits {
		name := g.Tensors[t].Name
		if st, ok := sparse[name]; ok {
			gr.SparseInitializer = append(gr.SparseInitializer, st)
			continue
		}
		tp := l.m.Initializer(name)
		if rw := l.rewrites[name]; rw != nil {
			tp = rw // made to let the batch through (Options.Batch)
		}
		if tp == nil {
			return nil, nil, diag.Internal("internal error: no initializer %q", name)
		}
		dense = append(dense, tp)
		if irOld {
			if vi := srcVI[name]; vi != nil {
				gr.Input = append(gr.Input, vi) // IR < 4 lists weights among the inputs
			}
		}
	}
	for _, ann := range pg.QuantizationAnnotation {
		if local[ann.GetTensorName()] || boundary[ann.GetTensorName()] {
			gr.QuantizationAnnotation = append(gr.QuantizationAnnotation, ann)
		}
	}

	mp := &onnxpb.ModelProto{
		IrVersion:       src.IrVersion,
		OpsetImport:     src.OpsetImport,
		ProducerName:    proto.String("onnxpart"),
		ProducerVersion: proto.String(l.opt.Producer),
		Domain:          src.Domain,
		ModelVersion:    src.ModelVersion,
		DocString:       src.DocString,
		Graph:           gr,
		Functions:       usedFunctions(src, gr),
	}
	meta := map[string]string{}
	var keys []string
	for _, kv := range src.MetadataProps {
		if _, ok := meta[kv.GetKey()]; !ok {
			keys = append(keys, kv.GetKey())
		}
		meta[kv.GetKey()] = kv.GetValue()
	}
	ours := [][2]string{
		{"onnxpart.source_model", filepath.Base(l.m.Path)},
		{"onnxpart.source_sha256", l.m.SHA256},
		{"onnxpart.stage", strconv.Itoa(i)},
		{"onnxpart.stages", strconv.Itoa(len(l.stages))},
	}
	ours = append(ours, sourceProducer(src)...)
	for _, kv := range ours {
		if _, ok := meta[kv[0]]; !ok {
			keys = append(keys, kv[0])
		}
		meta[kv[0]] = kv[1]
	}
	for _, k := range keys {
		mp.MetadataProps = append(mp.MetadataProps, &onnxpb.StringStringEntryProto{Key: proto.String(k), Value: proto.String(meta[k])})
	}

	// Decide which weights go to external data.
	ext := map[string]bool{}
	for j, tp := range dense {
		isExt := tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL
		switch {
		case isExt && l.opt.ExternalData == ExternalNever:
			inl, err := l.inlineCopy(tp)
			if err != nil {
				return nil, nil, err
			}
			dense[j] = inl
		case isExt:
			ext[tp.GetName()] = true
		case l.opt.ExternalData == ExternalAlways && externalizable(tp):
			ext[tp.GetName()] = true
		}
	}
	build := func() {
		gr.Initializer = gr.Initializer[:0]
		for _, tp := range dense {
			if ext[tp.GetName()] {
				gr.Initializer = append(gr.Initializer, externalStub(tp))
			} else {
				gr.Initializer = append(gr.Initializer, tp)
			}
		}
	}
	build()
	if size := int64(proto.Size(mp)); size > l.opt.MaxInlineBytes {
		if l.opt.ExternalData == ExternalNever {
			return nil, nil, diag.Input("stage %d is %d bytes, over the %d-byte limit for one protobuf, and external data is disabled", i, size, l.opt.MaxInlineBytes).About(diag.Stage, strconv.Itoa(i))
		}
		for _, tp := range dense {
			if externalizable(tp) {
				ext[tp.GetName()] = true
			}
		}
		build()
		if size := int64(proto.Size(mp)); size > l.opt.MaxInlineBytes {
			return nil, nil, diag.Input("stage %d is %d bytes even with its weights in external data (over the %d-byte limit; large Constant attributes?)", i, size, l.opt.MaxInlineBytes).About(diag.Stage, strconv.Itoa(i))
		}
	}
	// External data layout: tensors in initializer order, each aligned (4 KiB for tensors of
	// 1 MiB or more, so they can be memory-mapped; 64 bytes otherwise).
	var exts []*externalTensor
	var at int64
	for j, tp := range dense {
		if !ext[tp.GetName()] {
			continue
		}
		et := &externalTensor{name: tp.GetName()}
		if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
			ref, err := l.m.ExternalRef(tp.GetName())
			if err != nil {
				return nil, nil, err
			}
			et.path, et.offset, et.length = ref.Path, ref.Offset, ref.Length
		} else {
			b, err := ingest.TensorData(tp)
			if err != nil {
				return nil, nil, err
			}
			et.inline, et.length = b, int64(len(b))
		}
		align := int64(64)
		if et.length >= 1<<20 {
			align = 4096
		}
		at = (at + align - 1) / align * align
		et.at = at
		at += et.length
		stub := gr.Initializer[j]
		stub.ExternalData = []*onnxpb.StringStringEntryProto{
			{Key: proto.String("location"), Value: proto.String(dataFile(i))},
			{Key: proto.String("offset"), Value: proto.String(strconv.FormatInt(et.at, 10))},
			{Key: proto.String("length"), Value: proto.String(strconv.FormatInt(et.length, 10))},
		}
		exts = append(exts, et)
	}
	return mp, exts, nil
}

func dataFile(i int) string { return stageFile(i) + ".data" }

// externalizable: numeric weights of at least ExternalMinBytes.
func externalizable(tp *onnxpb.TensorProto) bool {
	if graph.DType(tp.GetDataType()) == graph.String {
		return false
	}
	n, err := graph.ByteSize(graph.DType(tp.GetDataType()), dimsShape(tp.Dims))
	return err == nil && n >= ExternalMinBytes
}

// inlineCopy reads an externally stored weight into a copy holding raw_data.
func (l *Layout) inlineCopy(tp *onnxpb.TensorProto) (*onnxpb.TensorProto, error) {
	ref, err := l.m.ExternalRef(tp.GetName())
	if err != nil {
		return nil, err
	}
	f, err := os.Open(ref.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, ref.Length)
	if _, err := f.ReadAt(buf, ref.Offset); err != nil && !(err == io.EOF && ref.Length == 0) {
		return nil, diag.Input("weight %q: reading %s: %w", tp.GetName(), ref.Rel, err).About(diag.Tensor, tp.GetName())
	}
	c := externalStub(tp)
	c.DataLocation = nil
	c.RawData = buf
	return c, nil
}

func dimsShape(d []int64) graph.Shape { return graph.ShapeOf(d...) }

// externalStub is a copy of a weight's description without its data; the caller sets
// external_data.
func externalStub(tp *onnxpb.TensorProto) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{
		Dims:          tp.Dims,
		DataType:      tp.DataType,
		Name:          tp.Name,
		DocString:     tp.DocString,
		MetadataProps: tp.MetadataProps,
		DataLocation:  onnxpb.TensorProto_EXTERNAL.Enum(),
	}
}

// boundaryInfo is the value info of a stage input or output: element type and onnxpart's
// inferred shape (symbolic dims as dim_param), the shape the stage files keep (see
// Layout.shape). Non-tensor values take the source's type.
func boundaryInfo(g *graph.Graph, t int, shape graph.Shape, srcVI map[string]*onnxpb.ValueInfoProto) (*onnxpb.ValueInfoProto, error) {
	tt := &g.Tensors[t]
	if tt.NonTensor != "" {
		if vi := srcVI[tt.Name]; vi != nil && vi.Type != nil {
			return &onnxpb.ValueInfoProto{Name: proto.String(tt.Name), Type: vi.Type}, nil
		}
		return nil, diag.Input("tensor %q (%s) crosses a stage boundary but the model declares no type for it", tt.Name, tt.NonTensor).About(diag.Tensor, tt.Name)
	}
	if !tt.DType.Valid() {
		return nil, diag.Input("tensor %q crosses a stage boundary but its element type is unknown", tt.Name).About(diag.Tensor, tt.Name)
	}
	tensor := &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(tt.DType))}
	if shape != nil {
		sh := &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{}}
		for _, d := range shape {
			dim := &onnxpb.TensorShapeProto_Dimension{}
			switch {
			case d.Known():
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d.Value}
			case d.Param != "":
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d.Param}
			}
			sh.Dim = append(sh.Dim, dim)
		}
		tensor.Shape = sh
	}
	vi := &onnxpb.ValueInfoProto{Name: proto.String(tt.Name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: tensor}}}
	if s := srcVI[tt.Name]; s != nil {
		vi.DocString = s.DocString
		if s.GetType().Denotation != nil {
			vi.Type.Denotation = s.GetType().Denotation
		}
	}
	return vi, nil
}

// usedFunctions returns the model-local functions called from the graph (its subgraphs
// included) and, transitively, from those functions, in the source's order.
func usedFunctions(src *onnxpb.ModelProto, gr *onnxpb.GraphProto) []*onnxpb.FunctionProto {
	if len(src.Functions) == 0 {
		return nil
	}
	key := func(domain, name, overload string) string { return domain + "\x00" + name + "\x00" + overload }
	byKey := map[string]int{}
	for i, f := range src.Functions {
		byKey[key(f.GetDomain(), f.GetName(), f.GetOverload())] = i
	}
	used := map[int]bool{}
	var visitNodes func(nodes []*onnxpb.NodeProto)
	visitNodes = func(nodes []*onnxpb.NodeProto) {
		for _, n := range nodes {
			if i, ok := byKey[key(n.GetDomain(), n.GetOpType(), n.GetOverload())]; ok && !used[i] {
				used[i] = true
				visitNodes(src.Functions[i].Node)
			}
			for _, a := range n.Attribute {
				if a.G != nil {
					visitNodes(a.G.Node)
				}
				for _, sg := range a.Graphs {
					visitNodes(sg.Node)
				}
			}
		}
	}
	visitNodes(gr.Node)
	idx := make([]int, 0, len(used))
	for i := range used {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	out := make([]*onnxpb.FunctionProto, len(idx))
	for j, i := range idx {
		out[j] = src.Functions[i]
	}
	return out
}
