package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
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
  --stages N         N consecutive parts of the topological order with about equal FLOPs
                     (with symbolic dimensions left unbound, FLOPs are counted with them = 1)
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
  onnxpart split resnet50.onnx -o out --stages 2 --devices gpu0,gpu1 --provider CUDAExecutionProvider --emit report,triton
`,
		run: runSplit,
	})
}

func runSplit(ctx context.Context, e *env, args []string) error {
	c := commands["split"]
	fs := newFlags(e, c)
	out := fs.StringP("output", "o", "", "output directory (required)")
	cuts := fs.StringSlice("cut", nil, "tensors after which a new stage starts (comma-separated)")
	stages := fs.Int("stages", 0, "number of equal-FLOP stages")
	assignment := fs.String("assignment", "", `JSON file {"node name": stage, …}`)
	dimFlags := fs.StringArray("dim", nil, "bind a symbolic dimension, NAME=SIZE (repeatable)")
	shapeFlags := fs.StringArray("input-shape", nil, inputShapeHelp)
	freezeDims := fs.Bool("freeze-dims", false, "write the stage files at the --dim/--input-shape sizes (default: they keep the model's symbolic dims)")
	maxBatch := fs.Int("max-batch", 0, "Triton max_batch_size along the leading symbolic batch dim (default: the size --dim binds it to)")
	force := fs.Bool("force", false, "replace DIR if it is empty or holds a previous onnxpart output (only the files onnxpart wrote are removed)")
	devices := fs.StringSlice("devices", nil, "device name per stage (comma-separated), or one name for all")
	provider := fs.String("provider", emit.DefaultProvider, "ONNX Runtime execution provider recorded for every stage")
	external := fs.String("external-data", "auto", "weights in stage<i>.onnx.data: auto (as the source, or when a stage exceeds 2 GiB), always, never")
	asJSON := fs.Bool("json", false, "print the manifest instead of the summary")
	emitList := fs.StringSlice("emit", []string{"onnx", "manifest"}, emitHelp)
	genai := fs.StringArray("genai", nil, genaiHelp)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	extra, err := parseEmit(*emitList)
	if err != nil {
		return err
	}
	if err := extra.setGenAI(*genai); err != nil {
		return err
	}
	if fs.Changed("max-batch") && *maxBatch < 1 {
		return usageErrorf("--max-batch %d: want a batch size ≥ 1", *maxBatch)
	}
	extra.maxBatch = *maxBatch
	if fs.NArg() != 1 {
		return usageErrorf("split takes one model file, got %d arguments", fs.NArg())
	}
	if *out == "" {
		return usageErrorf("split needs an output directory: -o DIR")
	}
	modes := 0
	for _, set := range []bool{fs.Changed("cut"), fs.Changed("stages"), *assignment != ""} {
		if set {
			modes++
		}
	}
	if modes != 1 {
		return usageErrorf("give exactly one of --cut, --stages or --assignment")
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
		return usageErrorf("--external-data %q: want auto, always or never", *external)
	}
	dims, err := parseDims(*dimFlags)
	if err != nil {
		return err
	}
	shapes, err := ingest.ParseInputShapes(*shapeFlags)
	if err != nil {
		return err
	}
	m, err := ingest.Load(fs.Arg(0), ingest.Options{Dims: dims, InputShapes: shapes})
	if err != nil {
		return err
	}
	if err := emit.CheckOutput(m, *out, *force); err != nil {
		return splitError(err)
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
			return usageErrorf("--cut needs at least one tensor name")
		}
		a.Stage, err = emit.CutAfter(m.Graph, names)
		a.Split = emit.SplitInfo{Method: "cut", Cuts: names}
	case fs.Changed("stages"):
		g := m.Graph
		if len(m.SymbolicDims) > 0 {
			// FLOPs need sizes: count them with the unbound dimensions set to 1.
			cd := map[string]int64{}
			for k, v := range dims {
				cd[k] = v
			}
			for _, d := range m.SymbolicDims {
				cd[d] = 1
			}
			cm, err := ingest.Load(fs.Arg(0), ingest.Options{Dims: cd})
			if err != nil {
				return err
			}
			g = cm.Graph
			a.Notes = append(a.Notes, fmt.Sprintf("--stages balanced FLOPs counted with %s = 1 (left symbolic in the stages)", strings.Join(m.SymbolicDims, ", ")))
		}
		a.Stage, err = emit.EqualFLOPs(g, *stages)
		a.Split = emit.SplitInfo{Method: "stages", RequestedStages: *stages}
	default:
		f, ferr := os.Open(*assignment)
		if ferr != nil {
			return inputErrorf("%v", ferr)
		}
		a.Stage, err = emit.ReadAssignment(f, m.Graph)
		f.Close()
		a.Split = emit.SplitInfo{Method: "assignment"}
		if err != nil {
			err = fmt.Errorf("%s: %w", *assignment, err)
		}
	}
	if err != nil {
		return splitError(err)
	}
	if len(*devices) > 0 {
		k := 0
		for _, s := range a.Stage {
			k = max(k, s+1)
		}
		names := *devices
		if len(names) != 1 && len(names) != k {
			return usageErrorf("--devices: give one name, or one per stage (%d), not %d", k, len(names))
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
	man, err := emit.Write(m, a, *out, emit.Options{Force: *force, ExternalData: mode, Producer: version, Extras: extra.extras(), FreezeDims: *freezeDims, GenAI: extra.genai})
	if err != nil {
		return splitError(err)
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
	for _, n := range man.Notes {
		fmt.Fprintf(e.stderr, "note: %s\n", n)
	}
	return nil
}

// splitError maps emit's errors to exit codes: flag values that do not fit the model are
// usage errors; bad assignment files, cycles and output-directory problems are bad input.
func splitError(err error) error {
	var ce *emit.CutError
	var se *emit.StageCountError
	var cyc *graph.StageCycleError
	switch {
	case errors.As(err, &ce), errors.As(err, &se):
		return usageErrorf("%v", err)
	case errors.As(err, &cyc):
		return inputErrorf("the assignment is not a pipeline: stage %s; move nodes so that tensors only flow to later stages", cycleText(cyc))
	}
	return inputErrorf("%v", err)
}

func cycleText(e *graph.StageCycleError) string {
	var b strings.Builder
	for i, s := range e.Stages {
		next := e.Stages[(i+1)%len(e.Stages)]
		if i > 0 {
			b.WriteString(", stage ")
		}
		fmt.Fprintf(&b, "%d sends %q to stage %d", s, e.Tensors[i], next)
	}
	return b.String()
}

func printSplit(w io.Writer, dir string, man *emit.Manifest) {
	fmt.Fprintf(w, "wrote %s: %s of %s (%s, %s, params %s)\n", dir, plural(len(man.Stages), "stage"), man.Model.File,
		plural(man.Model.Nodes, "node"), flopsStr(man.Model.FLOPs), bytesStr(man.Model.ParamsBytes))
	tw := newTable(w, 0)
	fmt.Fprintln(tw, "stage\tnodes\tflops\tparams\tinputs\toutputs\tdevice\tfile")
	for _, st := range man.Stages {
		file := st.File
		if st.DataFile != "" {
			file += " + " + st.DataFile
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", st.Index, len(st.Nodes), flopsStr(st.FLOPs), bytesStr(st.ParamsBytes),
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
	fmt.Fprintf(w, "transfers: %d, %s per sample%s\n", len(man.Transfers), bytesStr(total), suffix)
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
	s := fmt.Sprintf("%d (%s", len(ts), bytesStr(b))
	if unknown {
		s += "+?"
	}
	return s + ")"
}
