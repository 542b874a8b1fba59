package triton

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// A batched plan (emit.Manifest.Batch with several routes) is served from one repository in
// the top directory, so that one client calls one model for the whole batch:
//
//	<name>                    ensemble: the plan's batch of N inputs in, the N outputs out
//	<name>_split              onnxruntime_onnx on the CPU: splits each input along its
//	                          leading axis into the routes' shares, in route order
//	<name>_route<r>_stage<j>  route r's stage j (every route's stages, names unique)
//	<name>_route<r>           ensemble: route r alone, for a client that routes itself
//	<name>_concat             onnxruntime_onnx on the CPU: joins the routes' outputs in
//	                          route order
//
// The routing rule: route r takes the inputs from offset o_r = n_0 + … + n_(r−1) to
// o_r + n_r of the batch (n_r is the route's share, Manifest.Batch.Routes[r].Inputs); its
// outputs come back at the same offsets. Granules are all the same size, so which inputs a
// route takes does not change the plan. The ensemble's inputs lead with N: it takes exactly
// the planned batch; the route ensembles take any batch.

// BatchedModels builds the config.pbtxt of every model of a batched plan's repository (see
// above): routes[r] is route r's manifest. The split and concat models' ONNX files are not
// included (writeBatched writes them).
func BatchedModels(routes []*emit.Manifest, opt Options) ([]Model, error) {
	models, _, err := batchedRepo(routes, nil, opt)
	return models, err
}

// writeBatched writes the repository of the batched plan whose route 0 manifest is m, with
// the other routes' manifests and stage files in their directories under stageDir.
func writeBatched(m *emit.Manifest, stageDir, repoDir string, opt Options) error {
	routes := []*emit.Manifest{m}
	dirs := []string{stageDir}
	for _, rt := range m.Batch.Routes[1:] {
		if rt.Dir == "" || rt.Dir == "." || rt.Dir == ".." || strings.ContainsAny(rt.Dir, `/\:`) {
			return tritonErrorf("route %d's directory %q is not a plain subdirectory name", rt.Index, rt.Dir)
		}
		d := filepath.Join(stageDir, rt.Dir)
		raw, err := os.ReadFile(filepath.Join(d, emit.ManifestFile))
		if err != nil {
			return diag.Input("triton: route %d: %w", rt.Index, err)
		}
		var rm emit.Manifest
		if err := json.Unmarshal(raw, &rm); err != nil {
			return diag.Input("triton: route %d: %s: %w", rt.Index, emit.ManifestFile, err)
		}
		routes, dirs = append(routes, &rm), append(dirs, d)
	}
	_, files, err := batchedRepo(routes, dirs, opt)
	if err != nil {
		return err
	}
	return writeRepo(repoDir, files, opt)
}

// batchedRepo builds the models and, with dirs (each route's stage directory), the files.
func batchedRepo(routes []*emit.Manifest, dirs []string, opt Options) ([]Model, []repoFile, error) {
	m := routes[0]
	b := m.Batch
	if b == nil || len(b.Routes) != len(routes) {
		return nil, nil, tritonErrorf("the manifest's batch section lists %d routes, %d manifests given", len(b.Routes), len(routes))
	}
	if opt.MaxBatch > 0 {
		return nil, nil, tritonErrorf("max_batch_size %d: a batched plan's ensemble takes the plan's batch of %d, split among %d routes; leave out %s", opt.MaxBatch, b.Inputs, len(routes), opt.Names.Name("MaxBatch"))
	}
	base := opt.Name
	if base == "" {
		base = strings.TrimSuffix(m.Model.File, filepath.Ext(m.Model.File))
	}
	base = tritonName(base)
	// One GPU numbering for every route: the devices of all their stages.
	all := *m
	all.Stages = nil
	for _, rm := range routes {
		all.Stages = append(all.Stages, rm.Stages...)
	}
	gpus := gpuIndices(&all, opt.GPUs)
	shares := make([]int64, len(routes))
	total := int64(0)
	for r, rt := range b.Routes {
		if rt.Index != r || rt.Inputs < 1 {
			return nil, nil, tritonErrorf("route %d: index %d, %d inputs", r, rt.Index, rt.Inputs)
		}
		shares[r] = int64(rt.Inputs)
		total += shares[r]
	}
	if total != int64(b.Inputs) {
		return nil, nil, tritonErrorf("the routes take %d inputs, the batch has %d", total, b.Inputs)
	}
	for _, ts := range [][]emit.TensorRef{m.Model.Inputs, m.Model.Outputs} {
		for _, t := range ts {
			if len(t.Shape) == 0 || t.Shape[0].Known() {
				return nil, nil, tritonErrorf("model tensor %q is %s: the stage files do not take a batch along its leading axis (plan again with this version of onnxpart)", t.Name, graph.Shape(t.Shape)).About(diag.Tensor, t.Name)
			}
		}
	}
	var models []Model
	var files []repoFile
	seen := map[string]bool{}
	add := func(md Model, extra ...repoFile) error {
		if seen[md.Name] {
			return tritonErrorf("two models of the repository are named %q", md.Name)
		}
		seen[md.Name] = true
		models = append(models, md)
		files = append(files, repoFile{model: md})
		files = append(files, extra...)
		return nil
	}
	routeTensor := func(r int, name string) string { return fmt.Sprintf("route%d/%s", r, name) }
	share := func(name string, r int) string { return fmt.Sprintf("%s__route%d", name, r) }
	var steps []step

	// Split: the model inputs some stage reads.
	read := map[string]bool{}
	for _, rm := range routes {
		for _, st := range rm.Stages {
			for _, t := range st.Inputs {
				read[t.Name] = true
			}
		}
	}
	var ins []emit.TensorRef
	for _, t := range m.Model.Inputs {
		if read[t.Name] {
			ins = append(ins, t)
		}
	}
	whole := func(t emit.TensorRef, n int64) emit.TensorRef {
		s := append(emit.Shape{}, t.Shape...)
		s[0] = graph.Static(n)
		t.Shape = s
		return t
	}
	var splitIn, splitOut []emit.TensorRef
	splitStep := step{model: base + "_split", in: map[string]string{}, out: map[string]string{}}
	for _, t := range ins {
		splitIn = append(splitIn, whole(t, total))
		splitStep.in[t.Name] = t.Name
		for r := range routes {
			o := whole(t, shares[r])
			o.Name = share(t.Name, r)
			splitOut = append(splitOut, o)
			splitStep.out[o.Name] = routeTensor(r, t.Name)
		}
	}
	splitONNX, err := splitModel(splitIn, shares, share)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := cpuConfig(fmt.Sprintf("# onnxpart: splits the batch of %d among %d routes (route r takes the inputs from the sum of the earlier routes' shares on; shares %s)", total, len(routes), joinInts(shares)),
		splitStep.model, splitIn, splitOut)
	if err != nil {
		return nil, nil, err
	}
	if err := add(Model{Name: splitStep.model, Stage: -1, Config: cfg}, repoFile{model: Model{Name: splitStep.model}, file: "model.onnx", data: splitONNX}); err != nil {
		return nil, nil, err
	}
	steps = append(steps, splitStep)

	// Every route's stages and its own ensemble.
	for r, rm := range routes {
		names := make([]string, len(rm.Stages))
		for i, st := range rm.Stages {
			names[i] = fmt.Sprintf("%s_route%d_stage%d", base, r, st.Index)
			cfg, err := stageConfig(rm, i, names[i], gpus, 0)
			if err != nil {
				return nil, nil, fmt.Errorf("route %d: %w", r, err)
			}
			md := Model{Name: names[i], Stage: i, Config: cfg}
			var extra []repoFile
			if dirs != nil {
				fs, err := stageFiles(st, dirs[r], md)
				if err != nil {
					return nil, nil, fmt.Errorf("route %d: %w", r, err)
				}
				extra = fs[1:]
			}
			if err := add(md, extra...); err != nil {
				return nil, nil, err
			}
			s := step{model: names[i], in: map[string]string{}, out: map[string]string{}}
			for _, t := range st.Inputs {
				s.in[t.Name] = routeTensor(r, t.Name)
			}
			for _, t := range st.Outputs {
				s.out[t.Name] = routeTensor(r, t.Name)
			}
			steps = append(steps, s)
		}
		ecfg, err := ensembleConfig(rm, fmt.Sprintf("%s_route%d", base, r), names, 0)
		if err != nil {
			return nil, nil, fmt.Errorf("route %d: %w", r, err)
		}
		if err := add(Model{Name: fmt.Sprintf("%s_route%d", base, r), Stage: -1, Config: ecfg}); err != nil {
			return nil, nil, err
		}
	}

	// Concat: every model output.
	var catIn, catOut []emit.TensorRef
	catStep := step{model: base + "_concat", in: map[string]string{}, out: map[string]string{}}
	for _, t := range m.Model.Outputs {
		catOut = append(catOut, whole(t, total))
		catStep.out[t.Name] = t.Name
		for r := range routes {
			i := whole(t, shares[r])
			i.Name = share(t.Name, r)
			catIn = append(catIn, i)
			catStep.in[i.Name] = routeTensor(r, t.Name)
		}
	}
	catONNX, err := concatModel(catOut, len(routes), share)
	if err != nil {
		return nil, nil, err
	}
	cfg, err = cpuConfig("# onnxpart: joins the routes' outputs in route order", catStep.model, catIn, catOut)
	if err != nil {
		return nil, nil, err
	}
	if err := add(Model{Name: catStep.model, Stage: -1, Config: cfg}, repoFile{model: Model{Name: catStep.model}, file: "model.onnx", data: catONNX}); err != nil {
		return nil, nil, err
	}
	steps = append(steps, catStep)

	// The ensemble a client calls.
	var p pbtxt
	p.line("# onnxpart: %s, a batched plan: the batch of %d inputs split among %d routes (shares %s, in route order), each route's stages, the outputs joined in the same order",
		oneLine(m.Model.File), total, len(routes), joinInts(shares))
	p.line("name: %s", pbQuote(base))
	p.line(`platform: "ensemble"`)
	p.line("max_batch_size: 0")
	if err := p.tensors("input", splitIn, "model", false, false); err != nil {
		return nil, nil, err
	}
	if err := p.tensors("output", catOut, "model", false, false); err != nil {
		return nil, nil, err
	}
	p.open("ensemble_scheduling {")
	p.open("step [")
	for i, s := range steps {
		s.write(&p, i == len(steps)-1)
	}
	p.close("]")
	p.close("}")
	if err := add(Model{Name: base, Stage: -1, Config: []byte(p.b.String())}); err != nil {
		return nil, nil, err
	}
	return models, files, nil
}

// step is one ensemble step: its model and the maps model tensor → ensemble tensor.
type step struct {
	model   string
	in, out map[string]string
}

func (s step) write(p *pbtxt, last bool) {
	p.open("{")
	p.line("model_name: %s", pbQuote(s.model))
	p.line("model_version: -1")
	for _, k := range sortedKeys(s.in) {
		p.line("input_map { key: %s value: %s }", pbQuote(k), pbQuote(s.in[k]))
	}
	for _, k := range sortedKeys(s.out) {
		p.line("output_map { key: %s value: %s }", pbQuote(k), pbQuote(s.out[k]))
	}
	if last {
		p.close("}")
	} else {
		p.close("},")
	}
}

func sortedKeys(m map[string]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// cpuConfig is the config of a helper model (split, concat) on the CPU.
func cpuConfig(comment, name string, ins, outs []emit.TensorRef) ([]byte, error) {
	var p pbtxt
	p.line("%s", oneLine(comment))
	p.line("name: %s", pbQuote(name))
	p.line(`platform: "onnxruntime_onnx"`)
	p.line("max_batch_size: 0")
	if err := p.tensors("input", ins, name, true, false); err != nil {
		return nil, err
	}
	if err := p.tensors("output", outs, name, true, false); err != nil {
		return nil, err
	}
	p.open("instance_group [")
	p.open("{")
	p.line("kind: KIND_CPU")
	p.line("count: 1")
	p.close("}")
	p.close("]")
	return []byte(p.b.String()), nil
}

func joinInts(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(s, ", ")
}

// valueInfo declares tensor t for the split and concat models.
func valueInfo(t emit.TensorRef) (*onnxpb.ValueInfoProto, error) {
	dt, ok := graph.ParseDType(t.DType)
	if !ok {
		return nil, tritonErrorf("tensor %q has element type %s, which the batch's split and concat models cannot carry", t.Name, t.DType).About(diag.Tensor, t.Name)
	}
	sh := &onnxpb.TensorShapeProto{}
	for _, d := range t.Shape {
		dim := &onnxpb.TensorShapeProto_Dimension{}
		switch {
		case d.Known():
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d.Value}
		case d.Param != "" && d.Param != "?":
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d.Param}
		}
		sh.Dim = append(sh.Dim, dim)
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(t.Name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(dt)), Shape: sh}}}}, nil
}

func helperModel(g *onnxpb.GraphProto) ([]byte, error) {
	return proto.Marshal(&onnxpb.ModelProto{IrVersion: proto.Int64(8), ProducerName: proto.String("onnxpart"),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(13)}}, Graph: g})
}

// splitModel splits each input (leading dim the whole batch) into the routes' shares.
func splitModel(ins []emit.TensorRef, shares []int64, share func(string, int) string) ([]byte, error) {
	g := &onnxpb.GraphProto{Name: proto.String("split")}
	g.Initializer = append(g.Initializer, &onnxpb.TensorProto{Name: proto.String("shares"), DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)),
		Dims: []int64{int64(len(shares))}, Int64Data: shares})
	for _, t := range ins {
		vi, err := valueInfo(t)
		if err != nil {
			return nil, err
		}
		g.Input = append(g.Input, vi)
		n := &onnxpb.NodeProto{OpType: proto.String(optype.Split), Name: proto.String("split_" + t.Name), Input: []string{t.Name, "shares"},
			Attribute: []*onnxpb.AttributeProto{{Name: proto.String("axis"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(0)}}}
		for r, s := range shares {
			o := t
			o.Name = share(t.Name, r)
			o.Shape = append(emit.Shape{graph.Static(s)}, t.Shape[1:]...)
			vo, err := valueInfo(o)
			if err != nil {
				return nil, err
			}
			g.Output = append(g.Output, vo)
			n.Output = append(n.Output, o.Name)
		}
		g.Node = append(g.Node, n)
	}
	return helperModel(g)
}

// concatModel joins each output's route shares along the leading axis.
func concatModel(outs []emit.TensorRef, routes int, share func(string, int) string) ([]byte, error) {
	g := &onnxpb.GraphProto{Name: proto.String("concat")}
	for _, t := range outs {
		n := &onnxpb.NodeProto{OpType: proto.String(optype.Concat), Name: proto.String("concat_" + t.Name), Output: []string{t.Name},
			Attribute: []*onnxpb.AttributeProto{{Name: proto.String("axis"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(0)}}}
		for r := range routes {
			i := t
			i.Name = share(t.Name, r)
			i.Shape = append(emit.Shape{graph.Symbolic(fmt.Sprintf("route%d_inputs", r))}, t.Shape[1:]...)
			vi, err := valueInfo(i)
			if err != nil {
				return nil, err
			}
			g.Input = append(g.Input, vi)
			n.Input = append(n.Input, i.Name)
		}
		vo, err := valueInfo(t)
		if err != nil {
			return nil, err
		}
		g.Output = append(g.Output, vo)
		g.Node = append(g.Node, n)
	}
	return helperModel(g)
}
