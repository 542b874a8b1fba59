package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/graph/blocks"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/units"
)

func init() {
	register(&command{
		name:    "split",
		summary: "split a model into pipeline stages by hand: --cut, --stages N or --assignment",
		usage: `Usage: onnxpart split MODEL.onnx -o DIR (--cut T1,T2,… | --stages N | --assignment FILE.json) [flags]

Writes one ONNX model per pipeline stage (DIR/stage<i>.onnx, + stage<i>.onnx.data for
external weights) and DIR/manifest.json, atomically. Each stage's inputs are the tensors it
reads and does not produce; its outputs those a later stage or the model's outputs need.
Weights are copied into every stage that reads them; nodes computed from weights alone go
with their consumers. Check the result with 'onnxpart verify DIR'.

  --cut T1,T2,…      a new stage starts right after the node producing each tensor, in the
                     model's topological order (as with PiPPy split points)
  -k, --stages N     N consecutive parts of the topological order with about equal FLOPs
                     (with symbolic dimensions left unbound, FLOPs are counted with them = 1)
  --cut-at MODE      where --stages may cut: any (between any two nodes), blocks (only between
                     the model's repeated blocks, such as transformer layers, so that stages
                     hold whole layers and send hidden states; tensors every block reads that
                     cheap nodes compute from the model's inputs, such as a decoder's mask, are
                     computed again in each stage instead of sent) or auto (the default: blocks
                     for a model with state, such as a decoder with a KV cache, and at least
                     two blocks; any otherwise)
  --assignment FILE  a JSON object {"node name": stage, …} (unnamed nodes: "Op#index"); stage
                     numbers need not be dense or in pipeline order, but the stages must not
                     depend on each other in a cycle (refused, naming the tensors that close it)

A stage left without nodes of its own is dropped, with a note in the manifest.

  --emit report,triton  also write DIR/report.html (a self-contained page: pipeline,
                     transfers, memory; predictions and bounds when a planner gave them) and
                     DIR/triton (a Triton model repository: one model per stage and an ensemble)

Examples:
  onnxpart split resnet50.onnx -o out --stages 4
  onnxpart split bert.onnx -o out --cut /enc/layers.5/Add_1_output_0
  onnxpart split model.onnx -o out --assignment plan.json --force
  onnxpart split mobilenet_dynbatch.onnx -o out --stages 3 --dim batch=8
  onnxpart split resnet50.onnx -o out -k 2 --stage-devices gpu0,gpu1 --provider CUDAExecutionProvider --emit report,triton
`,
		run: runSplit,
	})
}

func runSplit(ctx context.Context, e *env, args []string) error {
	c := commands["split"]
	fs := newFlags(e, c)
	out := fs.StringP("output", "o", "", "output directory (required)")
	cuts := fs.StringSlice("cut", nil, "tensors after which a new stage starts (comma-separated)")
	stages := fs.IntP("stages", "k", 0, "number of equal-FLOP stages")
	cutAt := fs.String("cut-at", "auto", "where --stages may cut: any, blocks (only between repeated blocks such as transformer layers) or auto (blocks for models with state, such as decoders)")
	assignment := fs.String("assignment", "", `JSON file {"node name": stage, …}`)
	dimFlags := fs.StringArray("dim", nil, "bind a symbolic dimension, NAME=SIZE (repeatable)")
	shapeFlags := fs.StringArray("input-shape", nil, inputShapeHelp)
	freezeDims := fs.Bool("freeze-dims", false, "write the stage files at the --dim/--input-shape sizes (default: they keep the model's symbolic dims)")
	maxBatch := fs.Int("max-batch", 0, "Triton max_batch_size along the leading symbolic batch dim (default: the size --dim binds it to)")
	force := fs.Bool("force", false, "replace DIR if it is empty or holds a previous onnxpart output (only the files onnxpart wrote are removed)")
	devices := fs.StringSlice("stage-devices", nil, "device name per stage recorded in the manifest (comma-separated), or one name for all")
	// --devices is the main command's device spec (auto, 4xA100-80G, a spec file); split
	// plans nothing on devices, so it does not take one, and says why.
	fs.String("devices", "", "")
	fs.MarkHidden("devices")
	provider := fs.String("provider", emit.DefaultProvider, "ONNX Runtime execution provider recorded for every stage")
	external := fs.String("external-data", "auto", "weights in stage<i>.onnx.data: auto (as the source, or when a stage exceeds 2 GiB), always, never")
	asJSON := fs.Bool("json", false, "print the manifest instead of the summary")
	emitList := fs.StringSlice("emit", []string{"onnx", "manifest"}, emitHelp)
	genai := fs.StringArray("genai", nil, genaiHelp)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.Changed("devices") {
		return diag.Usage("split does not take --devices: it is the main command's device spec (auto, 4xA100-80G, a spec file) to plan on, and split plans nothing; name each stage's device for the manifest with --stage-devices NAME,… (see onnxpart split --help)").About(diag.Flag, "--devices")
	}
	extra, err := parseEmit(*emitList)
	if err != nil {
		return err
	}
	if err := extra.setGenAI(*genai); err != nil {
		return err
	}
	if fs.Changed("max-batch") && *maxBatch < 1 {
		return diag.Usage("--max-batch %d: want a batch size ≥ 1", *maxBatch).About(diag.Flag, "--max-batch")
	}
	extra.maxBatch = *maxBatch
	if fs.NArg() != 1 {
		return diag.Usage("split takes one model file, got %d arguments", fs.NArg())
	}
	if *out == "" {
		return diag.Usage("split needs an output directory: -o DIR")
	}
	modes := 0
	for _, set := range []bool{fs.Changed("cut"), fs.Changed("stages"), *assignment != ""} {
		if set {
			modes++
		}
	}
	if modes != 1 {
		return diag.Usage("give exactly one of --cut, --stages or --assignment")
	}
	switch *cutAt {
	case "any", "blocks", "auto":
	default:
		return diag.Usage("--cut-at %q: want any, blocks or auto", *cutAt).About(diag.Flag, "--cut-at")
	}
	if fs.Changed("cut-at") && !fs.Changed("stages") {
		return diag.Usage("--cut-at applies to --stages; --cut and --assignment place the cuts themselves").About(diag.Flag, "--cut-at")
	}
	var mode emit.ExternalDataMode
	switch *external {
	case "auto":
		mode = emit.ExternalAuto
	case "always":
		mode = emit.ExternalAlways
	case "never":
		mode = emit.ExternalNever
	default:
		return diag.Usage("--external-data %q: want auto, always or never", *external).About(diag.Flag, "--external-data")
	}
	dims, err := parseDims(*dimFlags)
	if err != nil {
		return err
	}
	shapes, err := parseInputShapes(*shapeFlags)
	if err != nil {
		return err
	}
	m, err := ingest.Load(fs.Arg(0), ingest.Options{Dims: dims, InputShapes: shapes, Names: ingestFlags})
	if err != nil {
		return err
	}
	if err := emit.CheckOutput(m, *out, emit.Options{Force: *force, Names: emitFlags}); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	a := &emit.Assignment{}
	switch {
	case fs.Changed("cut"):
		var names []string
		for _, s := range *cuts {
			if s = strings.TrimSpace(s); s != "" {
				names = append(names, s)
			}
		}
		if len(names) == 0 {
			return diag.Usage("--cut needs at least one tensor name").About(diag.Flag, "--cut")
		}
		a.Stage, err = emit.CutAfter(m.Graph, names)
		a.Split = emit.SplitInfo{Method: "cut", Cuts: names}
	case fs.Changed("stages"):
		g := m.Graph
		if len(m.SymbolicDims) > 0 {
			// FLOPs need sizes: count them with the unbound dimensions set to 1, but for
			// those the model ties to others (total = past + seq), which follow from them.
			ones := map[string]int64{}
			for _, d := range m.SymbolicDims {
				ones[d] = 1
			}
			cm, err := ingest.Load(fs.Arg(0), ingest.Options{Dims: dims, InputShapes: shapes, DefaultDims: ones, Names: ingestFlags})
			if err != nil {
				return err
			}
			g = cm.Graph
			var set []string
			for _, d := range m.SymbolicDims {
				if _, derived := cm.DerivedDims[d]; !derived {
					set = append(set, d)
				}
			}
			note := fmt.Sprintf("--stages balanced FLOPs counted with %s = 1", strings.Join(set, ", "))
			for _, dn := range cm.DerivedNotes() {
				note += ", " + strings.TrimSuffix(dn, " (derived)")
			}
			a.Notes = append(a.Notes, diag.Note{Kind: diag.NoteApprox, Msg: note + " (left symbolic in the stages)"}.About(diag.Flag, "--stages"))
		}
		var bs *blockSplit
		if bs, err = splitAtBlocks(g, *stages, *cutAt); err != nil {
			return err
		}
		if bs != nil {
			a.Stage, a.Recompute = bs.stage, bs.recompute
			a.Notes = append(a.Notes, bs.notes...)
		} else {
			a.Stage, err = emit.EqualFLOPs(g, *stages)
		}
		a.Split = emit.SplitInfo{Method: "stages", RequestedStages: *stages}
	default:
		f, ferr := os.Open(*assignment)
		if ferr != nil {
			return diag.Input("%v", ferr)
		}
		a.Stage, err = emit.ReadAssignment(f, m.Graph)
		f.Close()
		a.Split = emit.SplitInfo{Method: "assignment"}
		if err != nil {
			err = fmt.Errorf("%s: %w", *assignment, err)
		}
	}
	if err != nil {
		return err
	}
	if len(*devices) > 0 {
		k := 0
		for _, s := range a.Stage {
			k = max(k, s+1)
		}
		names := *devices
		if len(names) != 1 && len(names) != k {
			return diag.Usage("--stage-devices: give one name, or one per stage (%d), not %d", k, len(names)).About(diag.Flag, "--stage-devices")
		}
		a.Devices = make([]emit.Device, k)
		for i := range a.Devices {
			a.Devices[i] = emit.Device{Name: names[min(i, len(names)-1)], Provider: *provider}
		}
	} else if *provider != emit.DefaultProvider {
		a.Devices = []emit.Device{}
		k := 0
		for _, s := range a.Stage {
			k = max(k, s+1)
		}
		for i := 0; i < k; i++ {
			a.Devices = append(a.Devices, emit.Device{Provider: *provider})
		}
	}
	man, err := emit.Write(m, a, *out, emit.Options{Force: *force, ExternalData: mode, Producer: version, Extras: extra.extras(), FreezeDims: *freezeDims, BeforeManifest: extra.beforeManifest(m), Names: emitFlags})
	if err != nil {
		return err
	}
	if *asJSON {
		js, err := man.MarshalIndent()
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(js)
		return err
	}
	printSplit(e.stdout, *out, man)
	extra.print(e.stdout, *out)
	printDerived(e.stdout, m.DerivedNotes())
	printNotes(e.stderr, "note: ", "notes: ", man.Notes)
	return nil
}

func printSplit(w io.Writer, dir string, man *emit.Manifest) {
	fmt.Fprintf(w, "wrote %s: %s of %s (%s, %s, params %s)\n", dir, plural(len(man.Stages), "stage"), man.Model.File,
		plural(man.Model.Nodes, "node"), flopsStr(man.Model.FLOPs), units.Bytes(man.Model.ParamsBytes))
	tw := newTable(w, 0)
	fmt.Fprintln(tw, "stage\tnodes\tflops\tparams\tinputs\toutputs\tdevice\tfile")
	for _, st := range man.Stages {
		file := st.File
		if st.DataFile != "" {
			file += " + " + st.DataFile
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", st.Index, len(st.Nodes), flopsStr(st.FLOPs), units.Bytes(st.ParamsBytes),
			ioStr(st.Inputs), ioStr(st.Outputs), st.Device, file)
	}
	tw.Flush()
	var total int64
	unknown := false
	for _, t := range man.Transfers {
		if t.Bytes < 0 {
			unknown = true
		}
		total += max(t.Bytes, 0)
	}
	suffix := ""
	if unknown {
		suffix = " (some sizes unknown: symbolic dimensions)"
	}
	fmt.Fprintf(w, "transfers: %d, %s per sample%s\n", len(man.Transfers), units.Bytes(total), suffix)
}

// ioStr summarises boundary tensors: count and bytes.
func ioStr(ts []emit.TensorRef) string {
	var b int64
	unknown := false
	for _, t := range ts {
		if t.Bytes < 0 {
			unknown = true
		}
		b += max(t.Bytes, 0)
	}
	s := fmt.Sprintf("%d (%s", len(ts), units.Bytes(b))
	if unknown {
		s += "+?"
	}
	return s + ")"
}

// recomputeFLOPsPerByte bounds what --cut-at blocks computes again rather than sends: a
// tensor every block reads (a decoder's mask) is computed in each stage that reads it when
// the nodes computing it from the model's inputs cost at most this many FLOPs per byte of
// it. Every device computes far more FLOPs in the time a link moves a byte.
const recomputeFLOPsPerByte = 1

// blockSplit is an equal-FLOP split that cuts only between blocks.
type blockSplit struct {
	stage     []int
	recompute []bool // emit.Assignment.Recompute; nil for none
	notes     []diag.Note
}

// splitAtBlocks applies --cut-at to --stages N: nil for cuts anywhere (emit.EqualFLOPs),
// else N equal-FLOP stages cut only at the block boundaries graph/blocks finds in g (auto:
// when the model has state pairs and at least two blocks).
func splitAtBlocks(g *graph.Graph, n int, cutAt string) (*blockSplit, error) {
	if cutAt == "any" || n <= 1 {
		return nil, nil
	}
	var pairs []graph.StatePair
	if cutAt == "auto" {
		var err error
		if pairs, err = g.StatePairs(nil); err != nil || len(pairs) == 0 {
			return nil, nil
		}
	}
	res := blocks.Find(g)
	if len(res.Blocks) < 2 {
		if cutAt == "auto" {
			return nil, nil
		}
		return nil, diag.Usage("--cut-at blocks: the model has no repeated blocks (layers) to cut between; --cut-at any cuts anywhere").About(diag.Flag, "--cut-at")
	}
	if pairs == nil {
		pairs, _ = g.StatePairs(nil)
	}
	order := blocks.Order(g, res.Blocks)
	at := blocks.Boundaries(g, res.Blocks)
	if len(at) < n-1 {
		return nil, diag.Usage("--stages %d --cut-at %s: the model has %d blocks, whose boundaries allow at most %d stages; ask for fewer, or --cut-at any to cut anywhere",
			n, cutAt, len(res.Blocks), len(at)+1).About(diag.Flag, "--stages")
	}
	stage, err := emit.EqualFLOPsAt(g, n, order, at)
	if err != nil {
		return nil, err
	}
	bs := &blockSplit{stage: stage}
	why := "--cut-at blocks"
	if cutAt == "auto" {
		why = "--cut-at auto: the model carries state, as a decoder's KV cache"
	}
	// How far the FLOPs of the stages are from equal shares (weight-only nodes go with
	// their consumers and cost nothing per inference).
	flops := make([]int64, n)
	var total int64
	for v := range g.Nodes {
		if f := max(g.Nodes[v].FLOPs, 0); !g.Nodes[v].Static {
			flops[stage[v]] += f
			total += f
		}
	}
	var parts []string
	var most int64
	for _, f := range flops {
		parts = append(parts, flopsStr(f))
		most = max(most, f)
	}
	uneven := ""
	if total > 0 {
		uneven = fmt.Sprintf(": the largest is %.1f%% above an equal share", 100*(float64(most)*float64(n)/float64(total)-1))
	}
	bs.notes = append(bs.notes, diag.Notef(diag.NoteApprox, "--stages %d cut only between the model's %d blocks (%s; --cut-at any cuts anywhere), so stages hold whole blocks; stage FLOPs %s%s",
		n, len(res.Blocks), why, strings.Join(parts, ", "), uneven))

	// Tensors every block reads that cheap nodes compute from the model's inputs (not from
	// its state) are computed again in each stage that reads them: the producer and all its
	// ancestors but the weight-only ones, which every stage computes anyway.
	state := map[int]bool{}
	for _, p := range pairs {
		state[p.In] = true
	}
	var names []string
	for _, sh := range res.Shared {
		prod := g.Tensors[sh.Tensor].Producer
		if prod < 0 || sh.Bytes < 0 {
			continue
		}
		cone, ok := g.InputCone(prod, state)
		var f int64
		for _, v := range cone {
			f += max(g.Nodes[v].FLOPs, 0)
		}
		if !ok || len(cone) == 0 || f > recomputeFLOPsPerByte*sh.Bytes {
			continue
		}
		if bs.recompute == nil {
			bs.recompute = make([]bool, len(g.Nodes))
		}
		for _, v := range cone {
			bs.recompute[v] = true
		}
		names = append(names, fmt.Sprintf("%q", g.Tensors[sh.Tensor].Name))
	}
	if len(names) > 0 {
		bs.notes = append(bs.notes, diag.Notef(diag.NoteInfo, "%s, read by every block and computed from the model's inputs by a few cheap nodes, %s computed again in each stage that reads %s instead of sent",
			strings.Join(names, ", "), map[bool]string{true: "is", false: "are"}[len(names) == 1], map[bool]string{true: "it", false: "them"}[len(names) == 1]))
	}
	return bs, nil
}

// printDerived writes the dims the model's ties derived (ingest's Model.DerivedNotes) on one
// line, as verify does.
func printDerived(w io.Writer, notes []string) {
	if len(notes) == 0 {
		return
	}
	parts := make([]string, len(notes))
	for i, n := range notes {
		parts[i] = strings.TrimSuffix(n, " (derived)")
	}
	fmt.Fprintf(w, "derived: %s (the model ties it to the other sizes)\n", strings.Join(parts, ", "))
}
