package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/graph/blocks"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/outdir"
	"github.com/onnxpart/onnxpart/internal/units"
)

func init() {
	register(&command{
		name:    "inspect",
		summary: "summarise a model: ops, parameters, FLOPs, shapes",
		usage: `Usage: onnxpart inspect MODEL.onnx [--dim NAME=SIZE]... [--json] [--nodes] [--tensors] [--fusion RULESET]
       onnxpart inspect DIR [--json]

Reads the model, infers the shape of every tensor and prints the op histogram, parameter
count and bytes, total FLOPs, activation bytes, the repeated blocks (transformer layers,
residual blocks: their count, size and boundary tensor), inputs and outputs, unsupported
ops and tensors whose shape stays unknown. --nodes adds a table of every node in graph
order: op, name, FLOPs, parameter bytes, activation (output) bytes, and its inputs and
outputs with dtypes and shapes (JSON: node_list). Given an output directory of onnxpart, it
inspects the model planned there, with the sizes it was planned with, and lists the nodes
per stage (JSON: stage_list, and each node's stages).

Examples:
  onnxpart inspect resnet50.onnx
  onnxpart inspect mobilenet_dynbatch.onnx --dim batch=8 --json
  onnxpart inspect bert.onnx --json --tensors | jq '.tensors[] | select(.bytes > 1e6)'
  onnxpart inspect bert.onnx --fusion ort-cuda      # the fused kernels the backend would run
  onnxpart inspect resnet50.onnx --nodes            # per node: op, shapes, FLOPs, bytes
  onnxpart inspect out/                             # the nodes of each stage of a plan
`,
		run: runInspect,
	})
}

func runInspect(ctx context.Context, e *env, args []string) error {
	c := commands["inspect"]
	fs := newFlags(e, c)
	dimFlags := fs.StringArray("dim", nil, "bind a symbolic dimension, NAME=SIZE (repeatable)")
	shapeFlags := fs.StringArray("input-shape", nil, inputShapeHelp)
	asJSON := fs.Bool("json", false, "print one JSON object")
	tensors := fs.Bool("tensors", false, "list every tensor (with --json: the `tensors` array)")
	nodes := fs.Bool("nodes", false, "list every node in graph order: op, inputs and outputs with shapes, FLOPs, bytes (with --json: node_list); implied for an output directory")
	ff := addFusionFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return diag.Usage("inspect takes one model file or output directory, got %d arguments", fs.NArg())
	}
	dims, err := parseDims(*dimFlags)
	if err != nil {
		return err
	}
	shapes, err := parseInputShapes(*shapeFlags)
	if err != nil {
		return err
	}
	var m *ingest.Model
	var man *emit.Manifest
	if outputDir(fs.Arg(0)) {
		if len(shapes) > 0 {
			return diag.Usage("--input-shape applies to a model file; an output directory's model is loaded with the sizes it was planned with (--dim overrides them)").About(diag.Flag, "--input-shape")
		}
		m, man, err = loadOutputDir(fs.Arg(0), dims)
		*nodes = true
	} else {
		m, err = ingest.Load(fs.Arg(0), ingest.Options{Dims: dims, InputShapes: shapes, Names: ingestFlags})
	}
	if err != nil {
		return err
	}
	var rows []inspectNode
	var stages []inspectStage
	if *nodes {
		rows = nodeRows(m.Graph)
		if man != nil {
			stages = stageList(m.Graph, man, rows)
		}
	}
	fsum, err := ff.summary(m.Graph)
	if err != nil {
		return err
	}
	s := m.Summarize(*tensors)
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			*ingest.Summary
			Fusion    *fusion.Summary `json:"fusion,omitempty"`
			NodeList  []inspectNode   `json:"node_list,omitempty"`
			StageList []inspectStage  `json:"stage_list,omitempty"`
		}{s, fsum, rows, stages})
	}
	flops, acts := flopsLine(s), units.Bytes(s.ActivationBytes)
	if s.SymbolicShapeTensors > 0 {
		acts = "unknown (bind the symbolic dims with --dim NAME=SIZE)"
	}
	if s.FLOPsUncounted > 0 && len(s.SymbolicDims) > 0 && man == nil {
		// Count them at a stated binding: every unbound dim at 1.
		ones := map[string]int64{}
		for _, d := range s.SymbolicDims {
			ones[d] = 1
		}
		if b, err := ingest.Load(fs.Arg(0), ingest.Options{Dims: dims, InputShapes: shapes, DefaultDims: ones, Names: ingestFlags}); err == nil {
			if bs := b.Summarize(false); bs.FLOPsUncounted == 0 {
				flops = fmt.Sprintf("%s at %s (unbound dims at 1, derived dims from them; bind with --dim NAME=SIZE)", flopsStr(bs.FLOPs), outdir.DimList(bs.FLOPsAt))
				if bs.SymbolicShapeTensors == 0 {
					acts = fmt.Sprintf("%s at %s", units.Bytes(bs.ActivationBytes), outdir.DimList(bs.FLOPsAt))
				}
			}
		}
	}
	printSummary(e.stdout, s, flops, acts, blocksLine(m.Graph), *tensors)
	if *nodes {
		printNodes(e.stdout, rows, stages, man)
	}
	if fsum != nil {
		fmt.Fprintln(e.stdout)
		return fsum.WriteText(e.stdout)
	}
	return nil
}

// blocksLine describes g's repeated blocks (graph/blocks): "12 × 79 ops (boundary tensor
// NAME, 32.0 KiB), 1 shared tensor", with the range of sizes and the number of kinds when
// the blocks differ; "none" without repetition.
func blocksLine(g *graph.Graph) string {
	r := blocks.Find(g)
	if len(r.Blocks) == 0 {
		return "none"
	}
	lo, hi, kinds := len(r.Blocks[0].Nodes), 0, 0
	for _, b := range r.Blocks {
		lo, hi, kinds = min(lo, len(b.Nodes)), max(hi, len(b.Nodes)), max(kinds, b.Kind+1)
	}
	size := fmt.Sprint(lo)
	if hi > lo {
		size = fmt.Sprintf("%d–%d", lo, hi)
	}
	line := fmt.Sprintf("%d × %s ops", len(r.Blocks), size)
	if kinds > 1 {
		line += fmt.Sprintf(", %d kinds", kinds)
	}
	b := r.Blocks[0]
	bytes := "size unknown"
	if b.Bytes >= 0 {
		bytes = units.Bytes(b.Bytes)
	}
	line += fmt.Sprintf(" (boundary tensor %s, %s)", g.Tensors[b.Out].Name, bytes)
	if n := len(r.Shared); n > 0 {
		line += ", " + plural(n, "shared tensor")
	}
	return line
}

// flopsLine states the model's FLOPs with the binding they were counted at, or says they are
// unknown until the dims are bound: never a count that silently leaves nodes out.
func flopsLine(s *ingest.Summary) string {
	at := ""
	if len(s.FLOPsAt) > 0 {
		at = " at " + outdir.DimList(s.FLOPsAt)
	}
	switch {
	case s.FLOPsUncounted == 0:
		return flopsStr(s.FLOPs) + at
	case len(s.SymbolicDims) > 0:
		return fmt.Sprintf("unknown (bind with --dim %s=SIZE)", s.SymbolicDims[0])
	}
	return fmt.Sprintf("%s%s, without %s of unknown size", flopsStr(s.FLOPs), at, plural(s.FLOPsUncounted, "node"))
}

func printSummary(w io.Writer, s *ingest.Summary, flops, acts, blocksDesc string, tensors bool) {
	fmt.Fprintf(w, "model      %s\n", s.Path)
	fmt.Fprintf(w, "producer   %s, IR %d, opsets %s\n", orDash(s.Producer), s.IRVersion, opsetList(s.Opsets))
	fmt.Fprintf(w, "nodes      %d (%d edges)\n", s.Nodes, s.Edges)
	if s.QuantParams > 0 {
		fmt.Fprintf(w, "params     %s (%s; quantisation scales and zero points %s more)\n", count(s.Params), units.Bytes(s.ParamsBytes), count(s.QuantParams))
	} else {
		fmt.Fprintf(w, "params     %s (%s)\n", count(s.Params), units.Bytes(s.ParamsBytes))
	}
	fmt.Fprintf(w, "flops      %s\n", flops)
	fmt.Fprintf(w, "activations %s\n", acts)
	fmt.Fprintf(w, "blocks     %s\n", blocksDesc)
	for _, t := range s.Inputs {
		fmt.Fprintf(w, "input      %s %s %s\n", t.Name, t.DType, shapeStr(t.Shape))
	}
	for _, t := range s.Outputs {
		fmt.Fprintf(w, "output     %s %s %s\n", t.Name, t.DType, shapeStr(t.Shape))
	}
	if len(s.SymbolicDims) > 0 {
		fmt.Fprintf(w, "symbolic   %s (bind with --dim NAME=SIZE)\n", strings.Join(s.SymbolicDims, ", "))
	}
	if len(s.UnsupportedOps) > 0 {
		fmt.Fprintf(w, "unsupported ops (no shape inference) %s\n", strings.Join(s.UnsupportedOps, ", "))
	}
	if s.SymbolicShapeTensors > 0 {
		fmt.Fprintf(w, "symbolic shapes %s (known up to the symbolic dims)\n", plural(s.SymbolicShapeTensors, "tensor"))
	}
	fmt.Fprintf(w, "unknown shapes %s\n", plural(s.UnknownShapeTensors, "tensor"))
	for _, n := range firstN(s.UnknownShapeNames, 10) {
		fmt.Fprintf(w, "  %s\n", n)
	}
	for _, wn := range s.Warnings {
		fmt.Fprintf(w, "warning    %s\n", wn)
	}
	fmt.Fprintln(w, "\nops:")
	type kv struct {
		op string
		n  int
	}
	var ops []kv
	for k, v := range s.Ops {
		ops = append(ops, kv{k, v})
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].n != ops[j].n {
			return ops[i].n > ops[j].n
		}
		return ops[i].op < ops[j].op
	})
	for _, o := range ops {
		fmt.Fprintf(w, "  %6d  %s\n", o.n, o.op)
	}
	if tensors {
		fmt.Fprintln(w, "\ntensors:")
		tw := newTable(w, 0)
		fmt.Fprintln(tw, "  name\tdtype\tshape\tbytes\tproducer\tconsumers")
		for _, t := range s.Tensors {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%d\n", t.Name, t.DType, shapeStr(t.Shape), t.Bytes, orDash(t.Producer), len(t.Consumers))
		}
		tw.Flush()
	}
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… and %d more", len(s)-n))
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func opsetList(m map[string]int64) string {
	var parts []string
	for d, v := range m {
		parts = append(parts, fmt.Sprintf("%s:%d", d, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func shapeStr(s ingest.ShapeJSON) string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(string(b), `"`, "")
}

func count(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f G", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f M", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f k", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func flopsStr(n int64) string {
	f := float64(n)
	switch {
	case f >= 1e12:
		return fmt.Sprintf("%.2f TFLOP", f/1e12)
	case f >= 1e9:
		return fmt.Sprintf("%.3f GFLOP", f/1e9)
	case f >= 1e6:
		return fmt.Sprintf("%.2f MFLOP", f/1e6)
	case f >= 1e3:
		return fmt.Sprintf("%.1f kFLOP", f/1e3)
	}
	return fmt.Sprintf("%d FLOP", n)
}
