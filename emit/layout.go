package emit

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/internal/ops/optype"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/graph/dag"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// Options control how stages are written.
type Options struct {
	// ExternalData chooses where weights go (default ExternalAuto).
	ExternalData ExternalDataMode
	// MaxInlineBytes is the largest stage model kept in a single protobuf (default
	// DefaultMaxInlineBytes, just under protobuf's 2 GiB limit); a larger stage moves its
	// weights of at least ExternalMinBytes to external data.
	MaxInlineBytes int64
	// Force replaces an existing output directory.
	Force bool
	// ModelPath is the model path recorded in the manifest (default: the path it was loaded
	// from).
	ModelPath string
	// Producer is recorded as the stage models' producer_version (default "dev").
	Producer string
	// FreezeDims writes the stage files at the sizes the model was loaded with (--dim,
	// --input-shape), as the planner costed them. By default they keep the model's symbolic
	// dims (dim_param), so that a plan made at batch 8 also serves batch 1: the bindings only
	// size the costs, the FLOPs and the checks.
	FreezeDims bool
	// Extras, when set, is called by WriteDir with the temporary directory after the stages
	// and the manifest are written (file hashes filled in) and before the atomic rename, to
	// add more files (report.html, a Triton repository); an error aborts the whole write.
	Extras func(tmpDir string, m *Manifest) error
	// BeforeManifest, when set, is called by WriteDir with the temporary directory after the
	// stage files are written and before the manifest, to add files the manifest's notes
	// describe (genai_config.json: package deploy/genai's Write, whose notes name the values
	// it could not find); an error aborts the whole write.
	BeforeManifest func(tmpDir string, m *Manifest) error
	// State names state pairs the pattern of graph.StatePairs misses, input → output
	// (--state); the manifest lists each stage's state.
	State map[string]string
	// Batch, when > 1, is the batch a plan runs each stage call on (a batched plan's
	// batched kernels): the stage files declare the leading axis of every tensor that
	// carries the batch as a symbolic dim (the model's own leading dim_param, else
	// "batch"), also where the model fixes it at 1, so that they take that batch. NewLayout
	// refuses, with the reason, a model whose graph does not let the batch flow along the
	// leading axis (ingest.Model.BatchFlow), and Batch with FreezeDims.
	Batch int
	// Names are the caller's names of these options, by field ("FreezeDims":
	// "--freeze-dims", "Force": "--force", "Batch": "--batch"): errors and manifest notes
	// name an option so; without a name they say "Options.FreezeDims". The command passes
	// its flags.
	Names diag.Names
}

// ExternalDataMode says which weights are written to stage<i>.onnx.data.
type ExternalDataMode int

// External-data modes.
const (
	// ExternalAuto keeps weights where the source had them (inline or external) and moves
	// weights of at least ExternalMinBytes out of a stage that would exceed MaxInlineBytes.
	ExternalAuto ExternalDataMode = iota
	// ExternalAlways writes every weight of at least ExternalMinBytes externally.
	ExternalAlways
	// ExternalNever keeps every weight inline; a stage over MaxInlineBytes is an error.
	ExternalNever
)

// DefaultMaxInlineBytes keeps a stage model safely under protobuf's 2 GiB message limit.
const DefaultMaxInlineBytes = 2<<30 - 64<<20

// ExternalMinBytes is the smallest weight moved to external data (as onnx's own
// convert_model_to_external_data does by default).
const ExternalMinBytes = 1024

// Layout is a model split into ordered stages, ready to be written. Its Manifest may be
// completed (Predicted, Bounds, Solver, per-stage Predicted, Devices' details, Objective)
// before WriteDir.
type Layout struct {
	Manifest *Manifest

	m      *ingest.Model
	opt    Options
	stages []*stagePlan
	// graphOut maps each model output to the stage producing it.
	graphOut map[int]int
	// shapes, when the stage files keep dims the model was loaded with bound, are the
	// shapes they declare, by tensor ID (see symbolicShapes); nil: the graph's own.
	shapes []graph.Shape
	// fixed marks tensors whose shape could not be inferred without the bindings: they keep
	// their bound shape.
	fixed map[int]bool
	// symbolic are the dim_params the stage files keep.
	symbolic []string
	// batched marks the tensors whose leading axis carries Options.Batch (nil: none);
	// rewrites are the initializers the stage files carry changed so that it does.
	batched  []bool
	rewrites map[string]*onnxpb.TensorProto
	// failAfterFiles, when positive, makes WriteDir fail after writing that many files
	// (tests of the clean-up path).
	failAfterFiles int
}

// stagePlan is one stage: the nodes it computes and its boundary.
type stagePlan struct {
	label   int
	nodes   []int         // node IDs in topological (model) order
	inits   []int         // initializer tensor IDs read, ascending
	inputs  []int         // tensor IDs, ascending
	outputs []int         // tensor IDs: model outputs in model order, then others ascending
	from    map[int]int   // input tensor → producing stage index (-1 model input)
	to      map[int][]int // output tensor → consuming later stage indices
	// passthrough marks model outputs that are model inputs or weights, routed through the
	// last stage.
	passthrough []int
}

// node roles in a layout
const (
	roleNormal    = iota
	roleStatic    // computed from weights only: emitted with every consumer
	roleShapeOnly // computed from activations' shapes only: recomputed where the activation is
	roleRecompute // Assignment.Recompute: computed in every stage that reads it
)

// NewLayout lays the model out in stages following the assignment: it decides where every
// node is computed, orders the stages (refusing a cyclic stage graph with graph.StageCycle's
// error), computes each stage's inputs, outputs and weights, and fills
// the manifest. Nothing is written.
func NewLayout(m *ingest.Model, a *Assignment, opt Options) (*Layout, error) {
	g := m.Graph
	if len(a.Stage) != len(g.Nodes) {
		return nil, diag.Input("assignment has %d entries for %d nodes", len(a.Stage), len(g.Nodes))
	}
	if len(g.Nodes) == 0 {
		return nil, errNoStages
	}
	for v, s := range a.Stage {
		if s < 0 {
			return nil, diag.Input("node %s has no stage", g.Nodes[v].Label()).About(diag.Node, g.Nodes[v].Label())
		}
	}
	if opt.MaxInlineBytes <= 0 {
		opt.MaxInlineBytes = DefaultMaxInlineBytes
	}
	if opt.ModelPath == "" {
		opt.ModelPath = m.Path
	}
	if opt.Producer == "" {
		opt.Producer = "dev"
	}
	order := g.TopoOrder()
	pos := make([]int, len(g.Nodes))
	for i, v := range order {
		pos[v] = i
	}
	role, sources := classify(g, order)
	label := a.Stage
	if err := markRecompute(g, role, a.Recompute); err != nil {
		return nil, err
	}

	// readers[t] lists the labels whose normal nodes read tensor t; a shape-only node can be
	// recomputed in a stage where the activations whose shapes it reads are present anyway.
	readers := map[int][]int{}
	for v := range g.Nodes {
		if role[v] != roleNormal {
			continue
		}
		for _, t := range g.Nodes[v].Deps() {
			readers[t] = appendUnique(readers[t], label[v])
		}
	}
	emitted := make([][]int, len(g.Nodes)) // where each node is computed
	present := func(x, s int) bool {
		if p := g.Tensors[x].Producer; p >= 0 && role[p] == roleNormal && label[p] == s {
			return true
		}
		for _, c := range g.Tensors[x].Consumers {
			if role[c] == roleRecompute && contains(emitted[c], s) {
				return true // read by value there
			}
		}
		for _, l := range readers[x] {
			if l == s {
				return true
			}
		}
		return false
	}

	// Where each node is computed, deciding consumers before producers.
	for i := len(order) - 1; i >= 0; i-- {
		v := order[i]
		n := &g.Nodes[v]
		if role[v] == roleNormal {
			emitted[v] = []int{label[v]}
			continue
		}
		var need []int
		isOut := false
		for _, t := range n.Outputs {
			if t < 0 {
				continue
			}
			isOut = isOut || g.Tensors[t].IsOutput
			for _, c := range g.Tensors[t].Consumers {
				for _, s := range emitted[c] {
					need = appendUnique(need, s)
				}
			}
		}
		var at []int
		home := isOut || len(need) == 0
		for _, s := range need {
			if role[v] == roleStatic || role[v] == roleRecompute || allPresent(sources[v], s, present) {
				at = appendUnique(at, s)
			} else {
				home = true // sent from the stage it was assigned to
			}
		}
		if home {
			at = appendUnique(at, label[v])
		}
		sort.Ints(at)
		emitted[v] = at
	}

	// Stages by label, each with its nodes in topological order.
	byLabel := map[int]*stagePlan{}
	var labels []int
	for _, v := range order {
		for _, s := range emitted[v] {
			sp := byLabel[s]
			if sp == nil {
				sp = &stagePlan{label: s, from: map[int]int{}, to: map[int][]int{}}
				byLabel[s] = sp
				labels = append(labels, s)
			}
			sp.nodes = append(sp.nodes, v)
		}
	}
	sort.Ints(labels)
	var notes []diag.Note
	assigned := map[int]bool{}
	for _, s := range label {
		assigned[s] = true
	}
	var dropped []int
	for s := range assigned {
		if byLabel[s] == nil {
			dropped = append(dropped, s)
		}
	}
	sort.Ints(dropped)
	for _, s := range dropped {
		notes = append(notes, diag.Notef(diag.NoteSkipped, "stage %d of the assignment was dropped: all its nodes are computed from weights alone and went with their consumers", s).About(diag.Stage, strconv.Itoa(s)))
	}

	// The stage providing tensor t to other stages (labels): its producer's label.
	provider := func(t int) int {
		p := g.Tensors[t].Producer
		return label[p]
	}
	// Inputs and weights of each stage.
	for _, s := range labels {
		sp := byLabel[s]
		produced := map[int]bool{}
		for _, v := range sp.nodes {
			for _, t := range g.Nodes[v].Outputs {
				if t >= 0 {
					produced[t] = true
				}
			}
		}
		ins, inits := map[int]bool{}, map[int]bool{}
		for _, v := range sp.nodes {
			for _, t := range g.Nodes[v].Deps() {
				switch {
				case g.Tensors[t].Kind == graph.Initializer:
					inits[t] = true
				case produced[t]:
				default:
					ins[t] = true
				}
			}
		}
		sp.inputs = slices.Sorted(maps.Keys(ins))
		sp.inits = slices.Sorted(maps.Keys(inits))
		for _, t := range sp.inputs {
			if g.Tensors[t].Kind == graph.Input {
				sp.from[t] = -1
				continue
			}
			p := g.Tensors[t].Producer
			if p < 0 {
				return nil, diag.Internal("internal error: stage %d reads %q, which nothing produces", s, g.Tensors[t].Name)
			}
			if !contains(emitted[p], provider(t)) {
				return nil, diag.Internal("internal error: stage %d reads %q from stage %d, which does not compute it", s, g.Tensors[t].Name, provider(t))
			}
			sp.from[t] = provider(t) // a label for now
		}
	}

	// Order the stage graph; refuse cycles.
	stageOrder, err := orderStages(g, labels, byLabel)
	if err != nil {
		return nil, err
	}
	index := map[int]int{}
	for i, s := range stageOrder {
		index[s] = i
	}
	renumbered := false
	for i, s := range stageOrder {
		if s != i {
			renumbered = true
		}
	}
	if renumbered {
		var parts []string
		for i, s := range stageOrder {
			parts = append(parts, fmt.Sprintf("%d→%d", s, i))
		}
		notes = append(notes, diag.Notef(diag.NoteInfo, "stages renumbered in pipeline order (assignment label→index): %s", strings.Join(parts, ", ")))
	}
	l := &Layout{m: m, opt: opt, graphOut: map[int]int{}, symbolic: append([]string{}, m.SymbolicDims...)}
	if !opt.FreezeDims {
		var note string
		l.shapes, l.fixed, l.symbolic, note = symbolicShapes(m, l.opt.Names)
		if note != "" {
			notes = append(notes, diag.Notef(diag.NoteFault, "%s", note).About(diag.Option, l.opt.Names.Name("FreezeDims")))
		}
	}
	if opt.Batch > 1 {
		note, err := l.batchShapes()
		if err != nil {
			return nil, err
		}
		if note != "" {
			notes = append(notes, diag.Notef(diag.NoteInfo, "%s", note).About(diag.Option, l.opt.Names.Name("Batch")))
		}
	}
	for _, s := range stageOrder {
		l.stages = append(l.stages, byLabel[s])
	}
	// Labels → indices in from; consumers in to.
	for i, sp := range l.stages {
		for _, t := range sp.inputs {
			if f := sp.from[t]; f >= 0 {
				fi := index[f]
				sp.from[t] = fi
				src := l.stages[fi]
				src.to[t] = append(src.to[t], i)
			}
		}
	}
	// Model outputs: produced by their producer's stage; a model output that is a model
	// input or a weight is routed through the last stage.
	last := len(l.stages) - 1
	for _, t := range g.Outputs {
		if _, done := l.graphOut[t]; done {
			continue
		}
		tt := &g.Tensors[t]
		if tt.Producer >= 0 {
			l.graphOut[t] = index[label[tt.Producer]]
			continue
		}
		sp := l.stages[last]
		l.graphOut[t] = last
		sp.passthrough = append(sp.passthrough, t)
		if tt.Kind == graph.Initializer {
			if !contains(sp.inits, t) {
				sp.inits = append(sp.inits, t)
				sort.Ints(sp.inits)
			}
		} else if !contains(sp.inputs, t) {
			sp.inputs = append(sp.inputs, t)
			sort.Ints(sp.inputs)
			sp.from[t] = -1
		}
	}
	for i, sp := range l.stages {
		var outs []int
		for _, t := range g.Outputs {
			if l.graphOut[t] == i && !contains(outs, t) {
				outs = append(outs, t)
			}
		}
		var others []int
		for t := range sp.to {
			sort.Ints(sp.to[t])
			if !contains(outs, t) {
				others = append(others, t)
			}
		}
		sort.Ints(others)
		sp.outputs = append(outs, others...)
	}
	for i, sp := range l.stages {
		if len(sp.outputs) == 0 {
			notes = append(notes, diag.Notef(diag.NoteSkipped, "stage %d produces nothing any later stage or the model's outputs need", i).About(diag.Stage, strconv.Itoa(i)))
		}
	}
	notes = append(notes, a.Notes...)
	l.Manifest = l.buildManifest(a, emitted, notes)
	if err := l.addState(l.Manifest); err != nil {
		return nil, err
	}
	return l, nil
}

// classify finds weight-only (static) and shape-only nodes. sources[v] of a shape-only
// node are the activations (or model inputs) whose shapes it reads.
func classify(g *graph.Graph, order []int) (role []int, sources [][]int) {
	role = make([]int, len(g.Nodes))
	sources = make([][]int, len(g.Nodes))
	for _, v := range order {
		n := &g.Nodes[v]
		if n.Static {
			role[v] = roleStatic
			continue
		}
		if n.Domain != "" || n.Subgraphs > 0 {
			continue
		}
		if (n.OpType == optype.Shape || n.OpType == optype.Size) && len(n.Inputs) > 0 && n.Inputs[0] >= 0 {
			x := n.Inputs[0]
			if p := g.Tensors[x].Producer; p >= 0 && role[p] == roleShapeOnly {
				sources[v] = sources[p]
			} else {
				sources[v] = []int{x}
			}
			role[v] = roleShapeOnly
			continue
		}
		ok, any := true, false
		var src []int
		for _, t := range n.Deps() {
			tt := &g.Tensors[t]
			switch {
			case tt.Kind == graph.Initializer:
			case tt.Producer >= 0 && role[tt.Producer] == roleStatic:
			case tt.Producer >= 0 && role[tt.Producer] == roleShapeOnly:
				any = true
				for _, x := range sources[tt.Producer] {
					src = appendUnique(src, x)
				}
			default:
				ok = false
			}
		}
		if ok && any && !nondeterministicOp[n.OpType] {
			role[v] = roleShapeOnly
			sort.Ints(src)
			sources[v] = src
		}
	}
	return role, sources
}

var nondeterministicOp = map[string]bool{
	optype.RandomNormal: true, optype.RandomUniform: true, optype.RandomNormalLike: true,
	optype.RandomUniformLike: true, optype.Multinomial: true, optype.Bernoulli: true, optype.Dropout: true,
}

func allPresent(xs []int, s int, present func(x, s int) bool) bool {
	for _, x := range xs {
		if !present(x, s) {
			return false
		}
	}
	return true
}

// orderStages orders the stage graph topologically (ties: smaller label first), or returns
// graph.StageCycle's error naming the tensors carried by the edges of one cycle.
func orderStages(g *graph.Graph, labels []int, byLabel map[int]*stagePlan) ([]int, error) {
	type edge struct{ a, b int }
	sorted := append([]int(nil), labels...)
	sort.Ints(sorted)
	dense := make(map[int]int, len(sorted)) // label → rank: ties by id are ties by label
	for i, s := range sorted {
		dense[s] = i
	}
	carrier := map[edge]int{}
	var edges [][2]int
	for _, s := range labels {
		sp := byLabel[s]
		for _, t := range sp.inputs {
			f := sp.from[t]
			if f < 0 || f == s {
				continue
			}
			e := edge{f, s}
			if _, ok := carrier[e]; !ok {
				carrier[e] = t
				edges = append(edges, [2]int{dense[f], dense[s]})
			}
		}
	}
	order, cyc := dag.Topological(dag.FromEdges(len(sorted), edges))
	if cyc == nil {
		for i, x := range order {
			order[i] = sorted[x]
		}
		return order, nil
	}
	stages := make([]int, len(cyc))
	for i, x := range cyc {
		stages[i] = sorted[x]
	}
	tensors := make([]string, len(stages))
	for i := range stages {
		tensors[i] = g.Tensors[carrier[edge{stages[i], stages[(i+1)%len(stages)]}]].Name
	}
	return nil, graph.StageCycle(stages, tensors)
}

func appendUnique(s []int, x int) []int {
	if contains(s, x) {
		return s
	}
	return append(s, x)
}

func contains(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// NumStages is the number of stages after dropping empty ones.
func (l *Layout) NumStages() int { return len(l.stages) }

// StageNodes returns the node IDs computed by stage i, in model order.
func (l *Layout) StageNodes(i int) []int { return append([]int(nil), l.stages[i].nodes...) }

// buildManifest fills everything but the files' hashes.
func (l *Layout) buildManifest(a *Assignment, emitted [][]int, notes []diag.Note) *Manifest {
	m, g := l.m, l.m.Graph
	index := map[int]int{}
	for i, sp := range l.stages {
		index[sp.label] = i
	}
	man := &Manifest{Format: Format, Split: a.Split, Notes: notes}
	if man.Notes == nil {
		man.Notes = []diag.Note{}
	}
	dims := boundDims(m)
	man.Model = ModelInfo{
		Path: l.opt.ModelPath, File: filepath.Base(m.Path), SHA256: m.SHA256, FileBytes: m.FileSize,
		IRVersion: m.Proto().GetIrVersion(), Opsets: map[string]int64{}, Nodes: len(g.Nodes),
		ParamsBytes: g.ParamBytes(), FLOPs: g.TotalFLOPs(), Dims: dims, SymbolicDims: append([]string{}, l.symbolic...),
		ExternalData: m.ExternalData,
	}
	if l.shapes != nil {
		var kept []string
		for _, d := range l.symbolic {
			if v, ok := dims[d]; ok {
				kept = append(kept, fmt.Sprintf("%s=%d", d, v))
			}
		}
		if len(kept) > 0 {
			man.Notes = append(man.Notes, diag.Notef(diag.NoteInfo, "planned at %s; the stage files keep these dims symbolic and serve other sizes (%s writes the planned sizes in)", strings.Join(kept, ", "), l.opt.Names.Name("FreezeDims")))
		}
	}
	for d, v := range g.Opsets {
		if d == "" {
			d = "ai.onnx"
		}
		man.Model.Opsets[d] = v
	}
	for _, t := range g.Inputs {
		r := l.tensorRef(t, -1)
		r.ModelInput = true
		man.Model.Inputs = append(man.Model.Inputs, r)
	}
	for _, t := range g.Outputs {
		r := l.tensorRef(t, l.graphOut[t])
		r.ModelOutput = true
		man.Model.Outputs = append(man.Model.Outputs, r)
	}
	// Weights and nodes held by several stages.
	holders := map[int][]int{}
	for i, sp := range l.stages {
		for _, t := range sp.inits {
			holders[t] = append(holders[t], i)
		}
	}
	devIndex := map[string]bool{}
	for i, sp := range l.stages {
		dev := Device{Name: DefaultDevice, Provider: DefaultProvider}
		if sp.label < len(a.Devices) {
			if d := a.Devices[sp.label]; d.Name != "" {
				dev.Name = d.Name
			}
			if d := a.Devices[sp.label]; d.Provider != "" {
				dev.Provider = d.Provider
			}
		}
		if !devIndex[dev.Name] {
			devIndex[dev.Name] = true
			man.Devices = append(man.Devices, DeviceInfo{Name: dev.Name, Provider: dev.Provider})
		}
		st := Stage{Index: i, Label: sp.label, Device: dev.Name, Provider: dev.Provider,
			File: stageFile(i), Nodes: []string{}, DuplicatedNodes: []string{}, DuplicatedWeights: []SharedWeight{},
			Inputs: []TensorRef{}, Outputs: []TensorRef{}}
		for _, v := range sp.nodes {
			st.Nodes = append(st.Nodes, g.Nodes[v].Label())
			st.FLOPs += g.Nodes[v].FLOPs
			// Weights the stage holds besides its initializers, counted as the model's
			// params are (graph.ParamBytes): Constant-node values and the weights inside
			// control-flow subgraphs.
			st.ParamsBytes += max(g.Nodes[v].SubgraphParamBytes, 0)
			for _, t := range g.Nodes[v].Outputs {
				if t >= 0 && g.IsParam(t) && len(g.Tensors[t].Consumers) > 0 {
					st.ParamsBytes += max(g.Tensors[t].Bytes, 0)
				}
			}
			if len(emitted[v]) > 1 {
				st.DuplicatedNodes = append(st.DuplicatedNodes, g.Nodes[v].Label())
			}
		}
		st.Weights = len(sp.inits)
		for _, t := range sp.inits {
			b := max(g.Tensors[t].Bytes, 0)
			st.ParamsBytes += b
			if hs := holders[t]; len(hs) > 1 {
				st.DuplicatedWeights = append(st.DuplicatedWeights, SharedWeight{Name: g.Tensors[t].Name, Bytes: b, Stages: hs})
			}
		}
		for _, t := range sp.inputs {
			r := l.tensorRef(t, sp.from[t])
			r.ModelInput = g.Tensors[t].Kind == graph.Input
			st.Inputs = append(st.Inputs, r)
		}
		for _, t := range sp.outputs {
			r := l.tensorRef(t, i)
			r.Consumers = sp.to[t]
			r.ModelOutput = g.Tensors[t].IsOutput && l.graphOut[t] == i
			st.Outputs = append(st.Outputs, r)
			for _, c := range sp.to[t] {
				man.Transfers = append(man.Transfers, Transfer{Tensor: g.Tensors[t].Name, From: i, To: c, Bytes: g.Tensors[t].Bytes})
			}
		}
		st.Pipeline = map[string]GenAIStage{fmt.Sprintf("stage%d", i): GenAIPipelineEntry(st)}
		for _, t := range append(append([]int{}, sp.inputs...), sp.outputs...) {
			if l.fixed[t] {
				man.Notes = append(man.Notes, diag.Notef(diag.NoteApprox, "stage %d: boundary tensor %q keeps its bound shape %s in the stage files: its shape is not inferred without the bindings (%s writes every tensor so)", i, g.Tensors[t].Name, g.Tensors[t].Shape, l.opt.Names.Name("FreezeDims")).About(diag.Tensor, g.Tensors[t].Name))
			}
			if l.shape(t) == nil && g.Tensors[t].NonTensor == "" {
				man.Notes = append(man.Notes, diag.Notef(diag.NoteApprox, "stage %d: boundary tensor %q has no inferred shape; its type carries only the element type (ONNX Runtime accepts this, onnx.checker does not)", i, g.Tensors[t].Name).About(diag.Tensor, g.Tensors[t].Name))
			}
		}
		man.Stages = append(man.Stages, st)
	}
	if man.Transfers == nil {
		man.Transfers = []Transfer{}
	}
	sort.SliceStable(man.Transfers, func(i, j int) bool {
		a, b := man.Transfers[i], man.Transfers[j]
		if a.From != b.From {
			return a.From < b.From
		}
		return a.To < b.To
	})
	return man
}

func stageFile(i int) string { return fmt.Sprintf("stage%d.onnx", i) }

// tensorRef describes tensor t as the stage files declare it; its bytes are those at the
// bound dims.
func (l *Layout) tensorRef(t, stage int) TensorRef {
	tt := &l.m.Graph.Tensors[t]
	dt := tt.DType.String()
	if tt.NonTensor != "" {
		dt = tt.NonTensor
	}
	return TensorRef{Name: tt.Name, DType: dt, Shape: Shape(l.shape(t)), Bytes: tt.Bytes, Stage: stage}
}

// shape is tensor t's shape in the stage files.
func (l *Layout) shape(t int) graph.Shape {
	if l.shapes != nil {
		return l.shapes[t]
	}
	return l.m.Graph.Tensors[t].Shape
}

// symbolicShapes gives the shapes the stage files declare when they keep the symbolic dims
// of a model loaded with some bound (--dim, --input-shape): the shapes are inferred again
// from the loaded model without bindings (ingest.Model.Unbound, no second read of the file),
// and each tensor takes the shape inferred there. The two list the same nodes and tensors in
// the same order (both follow the file); that is checked by name, and where it fails every
// tensor keeps its bound shape and the note says why. A tensor whose unbound shape is unknown or disagrees with its
// bound one in rank or in a fixed size keeps its bound shape (marked in fixed). symbolic
// lists the dims the stage files keep. All nil when nothing was bound. names name the
// options in the note.
func symbolicShapes(m *ingest.Model, names diag.Names) (shapes []graph.Shape, fixed map[int]bool, symbolic []string, note string) {
	symbolic = append([]string{}, m.SymbolicDims...)
	if len(m.Dims()) == 0 && len(m.InputShapes()) == 0 {
		return nil, nil, symbolic, ""
	}
	g := m.Graph
	frozen := "the stage files are written at the bound sizes, as with " + names.Name("FreezeDims") + ": "
	u, err := m.Unbound()
	switch {
	case err != nil:
		return nil, nil, symbolic, frozen + "inferring the model's shapes without the bindings failed: " + err.Error()
	case len(u.Graph.Nodes) != len(g.Nodes) || len(u.Graph.Tensors) != len(g.Tensors):
		return nil, nil, symbolic, frozen + fmt.Sprintf("without the bindings the model has %d nodes and %d tensors, with them %d and %d",
			len(u.Graph.Nodes), len(u.Graph.Tensors), len(g.Nodes), len(g.Tensors))
	}
	for i := range g.Tensors {
		if u.Graph.Tensors[i].Name != g.Tensors[i].Name {
			return nil, nil, symbolic, frozen + fmt.Sprintf("tensor %d is %q without the bindings, %q with them", i, u.Graph.Tensors[i].Name, g.Tensors[i].Name)
		}
	}
	for v := range g.Nodes {
		if u.Graph.Nodes[v].Label() != g.Nodes[v].Label() {
			return nil, nil, symbolic, frozen + fmt.Sprintf("node %d is %s without the bindings, %s with them", v, u.Graph.Nodes[v].Label(), g.Nodes[v].Label())
		}
	}
	shapes = make([]graph.Shape, len(g.Tensors))
	fixed = map[int]bool{}
	for t := range g.Tensors {
		b, s := g.Tensors[t].Shape, u.Graph.Tensors[t].Shape
		shapes[t] = b
		if b == nil {
			continue
		}
		if !sameFixedSizes(s, b) {
			fixed[t] = true
			continue
		}
		shapes[t] = s
	}
	return shapes, fixed, append([]string{}, u.SymbolicDims...), ""
}

// sameFixedSizes: the unbound shape s has the rank of the bound shape b, and every size s
// fixes is b's.
func sameFixedSizes(s, b graph.Shape) bool {
	if s == nil || len(s) != len(b) {
		return false
	}
	for i, d := range s {
		if d.Known() && (!b[i].Known() || b[i].Value != d.Value) {
			return false
		}
	}
	return true
}

// genaiProviders maps ONNX Runtime execution providers to onnxruntime-genai's names.
var genaiProviders = map[string]string{
	"CUDAExecutionProvider": "cuda", "DmlExecutionProvider": "dml", "ROCMExecutionProvider": "rocm",
	"QNNExecutionProvider": "qnn", "OpenVINOExecutionProvider": "OpenVINO", "WebGpuExecutionProvider": "webgpu",
	"NvTensorRTRTXExecutionProvider": "NvTensorRtRtx", "TensorrtExecutionProvider": "tensorrt",
}

// GenAIPipelineEntry returns st's element of onnxruntime-genai's decoder pipeline (see
// Stage.Pipeline, which the layout fills with it): the stage file, its inputs and outputs,
// and its execution provider by genai's name.
func GenAIPipelineEntry(st Stage) GenAIStage {
	gs := GenAIStage{Filename: st.File, Inputs: []string{}, Outputs: []string{}, RunOnPrompt: true, RunOnTokenGen: true,
		SessionOptions: GenAISessionOpts{ProviderOptions: []map[string]map[string]string{}}}
	for _, r := range st.Inputs {
		gs.Inputs = append(gs.Inputs, r.Name)
	}
	for _, r := range st.Outputs {
		gs.Outputs = append(gs.Outputs, r.Name)
	}
	if st.Provider != DefaultProvider {
		name, ok := genaiProviders[st.Provider]
		if !ok {
			name = strings.TrimSuffix(st.Provider, "ExecutionProvider")
		}
		gs.SessionOptions.ProviderOptions = append(gs.SessionOptions.ProviderOptions, map[string]map[string]string{name: {}})
	}
	return gs
}

// boundDims recovers the --dim bindings of a loaded model: dim_params of its inputs that are
// no longer symbolic, with the size the graph gives them. Only the inputs' dims can be bound
// again (verify and bench bind these); the names an exporter gives internal or output dims
// in value_info ("3 + sequence_length", "total_token_count") are not dims of the model's
// inputs, and the sizes they take follow from those.
func boundDims(m *ingest.Model) map[string]int64 {
	unbound := map[string]bool{}
	for _, d := range m.SymbolicDims {
		unbound[d] = true
	}
	dims := map[string]int64{}
	pg := m.Proto().Graph
	for _, l := range [][]*onnxpb.ValueInfoProto{pg.Input} {
		for _, vi := range l {
			id, ok := m.Graph.TensorByName(vi.GetName())
			if !ok {
				continue
			}
			shape := m.Graph.Tensors[id].Shape
			ds := vi.GetType().GetTensorType().GetShape().GetDim()
			if len(ds) != len(shape) {
				continue
			}
			for i, d := range ds {
				p, ok := d.GetValue().(*onnxpb.TensorShapeProto_Dimension_DimParam)
				if !ok || unbound[p.DimParam] || !shape[i].Known() {
					continue
				}
				if _, have := dims[p.DimParam]; !have {
					dims[p.DimParam] = shape[i].Value
				}
			}
		}
	}
	return dims
}

// batchShapes makes the stage files take a batch of Options.Batch (see Options.Batch): the
// leading axis of every tensor that carries the batch becomes the symbolic batch dim.
func (l *Layout) batchShapes() (string, error) {
	m, g := l.m, l.m.Graph
	if l.opt.FreezeDims {
		n := l.opt.Names
		return "", diag.Usage("%s runs each stage call on a batch, so the stage files keep a symbolic batch dim, and %s fixes every dim (leave out one of them)", n.Say("Batch", strconv.Itoa(l.opt.Batch)), n.Name("FreezeDims")).About(diag.Option, n.Name("FreezeDims"))
	}
	name, flow, rewrites, err := batchFlow(m, l.opt.Batch, l.opt.Names)
	if err != nil {
		return "", err
	}
	note := ""
	if len(rewrites) > 0 {
		l.rewrites = rewrites
		names := slices.Sorted(maps.Keys(rewrites))
		note = fmt.Sprintf("the batch flows through the stage files because the leading 1 of the Reshape shape constant(s) %s became 0 (copy the batch from the input): the same Reshape at batch 1", strings.Join(names, ", "))
	}
	if l.shapes == nil {
		l.shapes = make([]graph.Shape, len(g.Tensors))
		for t := range g.Tensors {
			l.shapes[t] = g.Tensors[t].Shape
		}
	}
	l.batched = make([]bool, len(flow))
	for t, axes := range flow {
		if axes == nil || len(l.shapes[t]) != len(axes) {
			continue
		}
		s := append(graph.Shape{}, l.shapes[t]...)
		for i, a := range axes {
			switch a {
			case ingest.BatchExact:
				s[i] = graph.Symbolic(name)
			case ingest.BatchFolded:
				s[i] = graph.Symbolic("") // a size that follows from the batch
			}
		}
		l.shapes[t] = s
		l.batched[t] = true
		delete(l.fixed, t)
	}
	if !slices.Contains(l.symbolic, name) {
		l.symbolic = append(l.symbolic, name)
		sort.Strings(l.symbolic)
	}
	return note, nil
}

// CheckBatch returns nil when the stage files of m can take a batch of n along the leading
// axis (see Options.Batch), else the usage error NewLayout would give, with the reason: the
// planner asks before it prices batched kernels. names are the caller's names of the
// options (Options.Names: "Batch").
func CheckBatch(m *ingest.Model, n int, names diag.Names) error {
	_, _, _, err := batchFlow(m, n, names)
	return err
}

func batchFlow(m *ingest.Model, n int, names diag.Names) (string, [][]ingest.BatchAxis, map[string]*onnxpb.TensorProto, error) {
	name := BatchDimName(m)
	flow, rewrites, err := m.BatchFlow(name)
	if err != nil {
		return "", nil, nil, diag.Usage("%s prices each stage call as one batched kernel, but the stage files cannot take a batch: %v; export the model with a symbolic batch dim, or leave out %s for a pipeline of single inputs", names.Say("Batch", strconv.Itoa(n)), err, names.Name("Batch")).About(diag.Option, names.Name("Batch"))
	}
	return name, flow, rewrites, nil
}

// BatchDimName is the symbolic dim stage files written with Options.Batch take the batch
// along: the leading dim_param of the model's first input that has one, else "batch".
func BatchDimName(m *ingest.Model) string {
	pg := m.Proto().Graph
	for _, vi := range pg.Input {
		if m.Initializer(vi.GetName()) != nil {
			continue
		}
		tt := vi.GetType().GetTensorType()
		if tt == nil || len(tt.GetShape().GetDim()) == 0 {
			continue
		}
		if p := tt.GetShape().GetDim()[0].GetDimParam(); p != "" && !strings.ContainsAny(p, "+-*/() ") {
			return p
		}
	}
	return "batch"
}
