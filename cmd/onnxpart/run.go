package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/onnxpart/onnxpart"
	"github.com/onnxpart/onnxpart/costs"
	"github.com/onnxpart/onnxpart/deploy/genai"
	"github.com/onnxpart/onnxpart/deploy/triton"
	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	ortmeasure "github.com/onnxpart/onnxpart/internal/measure"
	"github.com/onnxpart/onnxpart/internal/units"
	"github.com/onnxpart/onnxpart/partition"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/report"
)

func init() {
	register(&command{
		name:    "run",
		summary: "plan, emit stage files and report (the default: onnxpart MODEL.onnx …)",
		usage: `Usage: onnxpart MODEL.onnx [--devices auto|SPEC|FILE] [-k N] [-o DIR] [flags]
       onnxpart run MODEL.onnx …

Plans how to split MODEL across the devices, writes one ONNX model per stage, manifest.json
and report.html into DIR (atomically), and says how far the plan can be from the best
possible one: the plan's predicted time, a proved lower bound, and the gap between them.

Identical devices get a pipeline that maximises throughput (the max-throughput partitioning
problem: SliceGraph + BRKGA + refinement, with MIP lower bounds on HiGHS). Mixed devices get
a placement that minimises the latency of one input (list heuristics, EA/SA, MILP,
MILP-SPLIT, with lower bounds), unless --objective throughput asks for a pipeline.
--batch N instead shares a batch of N inputs among the devices (data and model parallel:
the batch is cut into at most 8 equal granules, each placed on its own route of stages) and
maximises N / the time of the batch; route 0's stages are written to DIR, any other route's
to DIR/route1, DIR/route2, … (verify checks them all). Planning
runs on the graph coarsened by the backend's fusion rules (--fusion) and is expanded back to
the original nodes.

Devices (--devices):
  auto                 the GPUs NVML finds (with NVLink/PCIe links), else this machine's CPU
  4xA100-80G           catalog devices (onnxpart profile --catalog lists them), joined by
  a100-80g,t4,cpu      --link nvlink|pcie4|pcie5|ib100|eth10
  cluster.yaml         a device spec file (see testdata/devices/)

Examples:
  onnxpart resnet50.onnx --devices 4xA100-80G -o out
  onnxpart bert.onnx --devices 8xH100-SXM --link nvlink -k 4 --time-limit 1m -o out
  onnxpart model.onnx --devices a100-80g,t4,cpu --objective latency -o out
  onnxpart model.onnx --devices a100-80g,t4,cpu --batch 16 -o out    # share a batch of 16
  onnxpart model.onnx --devices cluster.yaml --json -o - > plan.json   # plan only, write nothing
  onnxpart verify out                                                 # check the stages

Reproducible output: with --seed, the same model, devices, flags and seed give byte-identical
files on any machine and load: searches run on work budgets (iterations, MIPs solved to the
end) and a bound the time limit cuts short is left out (a note says so). Without --seed the
planner uses all of --time-limit and keeps what the clock allowed (often tighter bounds, but
a rerun may differ). If the time limit cuts a reproducible search anyway, a note says so.

Exit codes: 0 ok, 1 bad input, 2 bad usage, 3 infeasible (the model cannot fit the
devices, proved), 4 verification mismatch, 5 no plan found within the limits (nothing proved
that none exists; a longer --time-limit may find one), 130 interrupted (the best plan so far
is still written).
`,
		run:   runMain,
		flags: func(fs *pflag.FlagSet) { new(runFlags).define(fs) },
	})
}

// runFlags are the main command's flags (also listed by the top-level --help).
type runFlags struct {
	devices, link, objective, fusion, fusionRules, solver, bounds, out, costs string
	cutAt                                                                     string
	k, batch, polish, maxBatch, stagesPerDevice                               int
	timeLimit                                                                 time.Duration
	gap                                                                       float64
	dims, emit, genai                                                         []string
	inputShapes, maxDims, workload, states                                    []string
	gpuIDs                                                                    []int
	seed                                                                      int64
	asJSON, force, quiet, freezeDims, allowUnknownShapes, verbose             bool
}

func (f *runFlags) define(fs *pflag.FlagSet) {
	fs.StringVar(&f.devices, "devices", "auto", "auto, catalog devices (4xA100-80G, a100-80g,t4,cpu) or a .yaml/.json spec file")
	fs.StringVar(&f.link, "link", "auto", "how catalog devices connect: "+strings.Join(hw.LinkChoices, ", "))
	fs.IntSliceVar(&f.gpuIDs, "gpu-ids", nil, "CUDA ordinals of the GPUs, in --devices order, for the manifest's device_id and Triton's gpus (default: NVML's index under auto, else each GPU's position)")
	fs.IntVar(&f.stagesPerDevice, "stages-per-device", 0, fmt.Sprintf("the most stages (runtime calls) on one device of a latency or --batch placement; 0: no cap (default: %d on mixed devices unless -k is given)", onnxpart.DefaultStagesPerDevice))
	fs.IntVarP(&f.k, "stages", "k", 0, "number of pipeline stages, or the most stages (runtime calls) of a latency or --batch placement, at least 1 (default: number of devices; placements: --stages-per-device)")
	fs.StringVar(&f.objective, "objective", "", "throughput or latency (default: throughput for identical devices, latency for mixed)")
	fs.IntVar(&f.batch, "batch", 0, "plan a batch of `N` inputs shared among the devices (data and model parallel) for throughput")
	fs.StringVar(&f.fusion, "fusion", "", "fusion rule set to coarsen with: ort-cpu, ort-cuda, tensorrt, generic, none (default: by device)")
	fs.StringVar(&f.fusionRules, "fusion-rules", "", "coarsen by the rule set in `FILE` instead")
	fs.StringVar(&f.solver, "solver", "auto", "throughput: auto, brkga, random, mla; latency: auto, met, greedy, heft, ea, sa, milp, split")
	fs.StringVar(&f.bounds, "bounds", "fast", "lower-bound effort: none, simple, fast, full")
	fs.IntVar(&f.polish, "polish-window", 4, polishWindowHelp)
	fs.DurationVar(&f.timeLimit, "time-limit", 30*time.Second, "time budget for planning (search and bounds)")
	fs.Float64Var(&f.gap, "gap", 0, "stop as soon as the plan is proved within this relative gap (e.g. 0.01)")
	fs.StringArrayVar(&f.dims, "dim", nil, "bind a symbolic dimension, NAME=SIZE (repeatable)")
	fs.StringArrayVar(&f.maxDims, "max-dim", nil, "check each stage's memory (KV cache, activations, buffers) at this size of a symbolic dimension, NAME=SIZE (repeatable; default: the --dim size)")
	fs.StringArrayVar(&f.inputShapes, "input-shape", nil, inputShapeHelp)
	fs.StringArrayVar(&f.workload, "workload", nil, workloadHelp)
	fs.StringArrayVar(&f.states, "state", nil, stateHelp)
	fs.StringVar(&f.cutAt, "cut-at", "auto", "where pipeline cuts may fall: any, blocks (only between repeated blocks such as transformer layers, so stages hold whole layers) or auto (blocks for models with state, such as decoders, when that costs at most 5% throughput)")
	fs.BoolVar(&f.allowUnknownShapes, "allow-unknown-shapes", false, "plan even when shape inference leaves most nodes' output shapes (so their FLOPs and activation bytes) unknown; they count 0")
	fs.BoolVar(&f.freezeDims, "freeze-dims", false, "write the stage files at the --dim/--input-shape sizes (default: they keep the model's symbolic dims; the sizes only cost and check the plan)")
	fs.IntVar(&f.maxBatch, "max-batch", 0, "Triton max_batch_size along the leading symbolic batch dim (default: the size --dim binds it to)")
	fs.Int64Var(&f.seed, "seed", 0, "random seed (default: unseeded, the planner uses the whole --time-limit and a rerun may differ); given, the plan and files are reproducible: searches run on work budgets, not the clock (see --help)")
	fs.StringVarP(&f.out, "output", "o", "out", "output directory; - writes nothing and prints the plan")
	fs.StringSliceVar(&f.emit, "emit", []string{"onnx", "manifest", "report"}, emitHelp)
	fs.StringArrayVar(&f.genai, "genai", nil, genaiHelp)
	fs.BoolVar(&f.asJSON, "json", false, "print the plan as JSON on stdout")
	fs.BoolVar(&f.force, "force", false, "replace the output directory if it is empty or holds a previous onnxpart output (only the files onnxpart wrote are removed)")
	fs.StringVar(&f.costs, "costs", "roofline", costsFlagHelp)
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no progress on stderr")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "also print the time of each phase of the pipeline solver")
}

func runMain(ctx context.Context, e *env, args []string) error {
	c := commands["run"]
	fs := newFlags(e, c)
	f := &runFlags{}
	f.define(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() == 0:
		return diag.Usage("missing MODEL.onnx: onnxpart MODEL.onnx --devices … (see onnxpart --help)")
	case fs.NArg() > 1:
		return diag.Usage("give one model file, got %d arguments: %s (see onnxpart --help)", fs.NArg(), strings.Join(fs.Args(), " "))
	}
	want, err := parseEmit(f.emit)
	if err != nil {
		return err
	}
	if err := want.setGenAI(f.genai); err != nil {
		return err
	}
	if f.out == "" {
		return diag.Usage("-o needs a directory (or - to write nothing)").About(diag.Flag, "-o")
	}
	if strings.TrimSpace(f.devices) == "" {
		return diag.Usage("--devices is empty: give auto, catalog devices (4xA100-80G, a100-80g,t4,cpu) or a spec file").About(diag.Flag, "--devices")
	}
	if fs.Changed("stages") && f.k < 1 {
		return diag.Usage("-k %d: want a number of stages ≥ 1 (leave -k out for one stage per device)", f.k).About(diag.Flag, "-k")
	}
	if f.stagesPerDevice < 0 {
		return diag.Usage("--stages-per-device %d: want a number of stages ≥ 1, or 0 for no cap", f.stagesPerDevice).About(diag.Flag, "--stages-per-device")
	}
	if f.gap < 0 || f.gap >= 1 {
		return diag.Usage("--gap %g: want a fraction in [0, 1)", f.gap).About(diag.Flag, "--gap")
	}
	if f.timeLimit <= 0 {
		return diag.Usage("--time-limit must be positive").About(diag.Flag, "--time-limit")
	}
	cspec, err := parseCosts(f.costs)
	if err != nil {
		return err
	}
	if f.batch < 0 || (fs.Changed("batch") && f.batch == 0) {
		return diag.Usage("--batch %d: want a number of inputs ≥ 1", f.batch).About(diag.Flag, "--batch")
	}
	dims, err := parseDims(f.dims)
	if err != nil {
		return err
	}
	if fs.Changed("max-batch") && f.maxBatch < 1 {
		return diag.Usage("--max-batch %d: want a batch size ≥ 1", f.maxBatch).About(diag.Flag, "--max-batch")
	}
	if len(f.workload) > 0 && f.freezeDims {
		return diag.Usage("--workload plans stage files that serve every phase, so they keep the dims symbolic; leave out --freeze-dims").About(diag.Flag, "--workload")
	}
	if fs.Changed("max-batch") && f.freezeDims {
		return diag.Usage("--max-batch needs a symbolic batch dim, and --freeze-dims fixes every dim").About(diag.Flag, "--max-batch")
	}
	want.maxBatch = f.maxBatch
	begin := time.Now()
	prog := newProgress(e, f.quiet, f.timeLimit)
	defer prog.stop()
	prog.phase("reading " + fs.Arg(0))
	shapes, err := parseInputShapes(f.inputShapes)
	if err != nil {
		return err
	}
	states, err := parseStates(f.states)
	if err != nil {
		return err
	}
	phases, dims, err := loadPhases(fs.Arg(0), f.workload, dims, shapes)
	if err != nil {
		return err
	}
	m, err := ingest.Load(fs.Arg(0), ingest.Options{Dims: dims, InputShapes: shapes, Names: ingestFlags})
	if err != nil {
		return err
	}
	for _, n := range m.DerivedNotes() {
		prog.note(n)
	}
	memGraph, err := maxDimGraph(fs.Arg(0), f.maxDims, dims, shapes)
	if err != nil {
		return err
	}
	if memGraph == nil && len(phases) > 1 {
		big := largestPhase(phases)
		memGraph = big.Graph
		prog.note(fmt.Sprintf("memory checked at the dims of phase %s, the largest of the workload (--max-dim sets others)", big.Name))
	}
	if err := m.RequireInputSizes(); err != nil { // every input size known, and none breaks a node
		return err
	}
	if !f.allowUnknownShapes {
		if err := m.RequireKnownShapes(); err != nil { // no plan of guessed costs
			return err
		}
	}
	if f.out != "-" {
		// Every output check before planning, which can take minutes.
		if err := emit.CheckOutput(m, f.out, emit.Options{Force: f.force, Names: emitFlags}); err != nil {
			return err
		}
	}
	prog.phase("devices " + f.devices)
	cluster, err := hw.Resolve(ctx, f.devices, hw.Options{Link: f.link, Names: profileFlags})
	if err != nil {
		return err
	}
	for _, n := range cluster.Notes {
		prog.note(n.Msg)
	}
	var measured [][]float64
	var applied *costs.Applied
	switch cspec.mode {
	case "measured":
		prog.phase("measuring node times in ONNX Runtime")
		measured, err = measure(ctx, m, cluster)
		if err != nil {
			return err
		}
	case "files":
		applied = cspec.apply(cluster, m.Graph) // its notes go with the plan's
		measured = applied.Measured
	}
	seed := int64(1) // unseeded searches start from 1 too, but the clock decides where they stop
	if fs.Changed("seed") {
		seed = f.seed
	}
	popt := onnxpart.Options{MaxStages: f.k, Objective: onnxpart.Objective(f.objective), Batch: f.batch, Fusion: f.fusion, FusionRules: f.fusionRules,
		Solver: onnxpart.Solver(f.solver), Bounds: onnxpart.Bounds(f.bounds), TimeLimit: f.timeLimit, Gap: f.gap, Seed: seed, Measured: measured, PolishWindow: f.polish,
		Reproducible: fs.Changed("seed"), Progress: prog.update, GPUIDs: f.gpuIDs, MemoryGraph: memGraph,
		Workload: phases, State: states, CutAt: onnxpart.Cut(f.cutAt), Names: optionFlags, StagesPerDevice: f.stagesPerDevice}
	if fs.Changed("stages-per-device") && f.stagesPerDevice == 0 {
		popt.StagesPerDevice = onnxpart.NoStageCap
	}
	prog.phase("planning")
	res, err := onnxpart.Plan(ctx, m, cluster, popt)
	interrupted := ctx.Err() != nil
	if err != nil {
		return planError(err)
	}
	var costsInfo *emit.Costs
	switch cspec.mode {
	case "measured":
		cm := profile.NewCostModel(cluster, profile.CostOptions{Measured: measured})
		here := costs.FromMeasured(measured, "this run")
		shares := here.Shares(m.Graph, cm, nodeDevices(res))
		res.Notes = append(res.Notes, diag.Note{Kind: diag.NoteInfo, Msg: here.Line(shares)}, diag.Note{Kind: diag.NoteInfo, Msg: notReproducible})
		costsInfo = costsManifest(here, cluster, shares)
		costsInfo.Source, costsInfo.MeasuredShare, costsInfo.Files = "measured", costsInfo.Files[0].Share, nil
	case "files":
		cm := profile.NewCostModel(cluster, profile.CostOptions{Measured: measured})
		shares := applied.Shares(m.Graph, cm, nodeDevices(res))
		res.Notes = append(append(res.Notes, applied.Notes...), diag.Note{Kind: diag.NoteInfo, Msg: applied.Line(shares)})
		costsInfo = costsManifest(applied, cluster, shares)
	}
	if !fs.Changed("seed") {
		// The report shows the planning time; with --seed its bytes must not depend on it.
		want.solverSeconds = res.Seconds
	}
	eopt := emit.Options{Force: f.force, Producer: version, Extras: want.extras(), FreezeDims: f.freezeDims, State: states, BeforeManifest: want.beforeManifest(m), Names: emitFlags}
	layout, err := onnxpart.Prepare(m, res, eopt, seed)
	if err != nil {
		return err
	}
	layout.Manifest.Costs = costsInfo
	fig := report.PlanFigures(layout.Manifest)
	prog.result(fig.Upper, fig.Lower, fig.Gap)
	prog.done()
	if f.out != "-" {
		if err := layout.WriteDir(f.out); err != nil {
			return err
		}
	}
	res.Seconds = time.Since(begin).Seconds()
	if f.asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(jsonPlan(m, res, layout.Manifest, f.out, givenSeed(fs, seed), interrupted)); err != nil {
			return err
		}
	} else {
		printPlan(e.stdout, m, res, layout.Manifest, f.out)
		if f.verbose {
			fmt.Fprintf(e.stdout, "phases     %s\n", phaseTimes(res.Phases))
			if res.Partition != nil {
				fmt.Fprintf(e.stdout, "solve      %s\n", phaseTimes(res.Partition.Phases))
			}
		}
	}
	if interrupted {
		return diag.Interrupted("interrupted: wrote the best plan found so far")
	}
	return nil
}

// phaseTimes lists phases with their wall times: "options 2ms, coarsen 40ms, …".
func phaseTimes(phases []partition.PhaseTime) string {
	var ph []string
	for _, p := range phases {
		ph = append(ph, fmt.Sprintf("%s %s", p.Name, dur(p.Seconds)))
	}
	return strings.Join(ph, ", ")
}

// planError words an interruption before any plan; exitCode maps the rest.
func planError(err error) error {
	if errors.Is(err, context.Canceled) {
		return diag.Interrupted("interrupted before any plan was found")
	}
	return err
}

// measure profiles the model on the host CPU and calibrates every host device of the
// cluster on that profile as `onnxpart profile --costs measured` does (ortmeasure.CalibrateHost:
// call cost, I/O and layout bandwidths, op classes), and returns per-node times for every
// host device.
func measure(ctx context.Context, m *ingest.Model, c *profile.Cluster) ([][]float64, error) {
	threads := 0
	for i := range c.Devices {
		if c.Devices[i].Host {
			threads = c.Devices[i].Threads
		}
	}
	h, err := ortmeasure.CalibrateHost(ctx, c, m.Path, m.Graph, threads)
	if errors.Is(err, ortmeasure.ErrNoHost) {
		return nil, diag.Usage("--costs measured needs the host CPU among the devices (add cpu to --devices)").About(diag.Flag, "--costs")
	}
	if err != nil {
		return nil, diag.Wrap(diag.KindInput, err)
	}
	return h.Measured, nil
}

// nodeDevices is the device (cluster index) of each node of the plan: route 0's for a batched
// plan; -1 for nodes no stage computes.
func nodeDevices(r *onnxpart.Result) []int {
	a := r.Assignment
	out := make([]int, len(a.Stage))
	for v, lab := range a.Stage {
		out[v] = -1
		if lab >= 0 && lab < len(a.Devices) {
			out[v] = r.Cluster.Index(a.Devices[lab].Name)
		}
	}
	return out
}

// givenSeed is the seed when the user gave one (--seed), else nil.
func givenSeed(fs *pflag.FlagSet, seed int64) *int64 {
	if !fs.Changed("seed") {
		return nil
	}
	return &seed
}

func jsonPlan(m *ingest.Model, r *onnxpart.Result, man *emit.Manifest, out string, seed *int64, interrupted bool) *planJSON {
	o := &planJSON{Format: "onnxpart.plan/v1", Input: m.Path, InputFormat: "onnx", Objective: r.Upper, ObjectiveKind: string(r.Objective),
		ObjectiveReason: r.ObjectiveChosen, LowerBound: r.Lower, BoundMethod: r.BoundMethod, Gap: r.Gap, AtMostSlower: report.PlanFigures(man).Slower,
		ThroughputPerS: r.ThroughputPerS, LatencyS: r.LatencyS, Fusion: r.RuleSet, PlanNodes: r.CoarseNodes,
		Algorithm: r.Algorithm, Seed: seed, Seconds: round3(r.Seconds), Output: out, Interrupted: interrupted,
		Devices: []string{}, Bounds: []boundJSON{}, Notes: diag.NoteStrings(man.Notes), Batch: man.Batch}
	if man.Predicted != nil {
		o.Workload = man.Predicted.Workload
	}
	for _, d := range r.Devices {
		o.Devices = append(o.Devices, r.Cluster.Devices[d].Name)
	}
	for _, b := range r.Bounds {
		o.Bounds = append(o.Bounds, boundJSON{Method: b.Method, LowerBound: b.LowerBoundS})
	}
	byLabel := map[int]onnxpart.StageSummary{}
	for _, s := range r.Stages {
		byLabel[s.Stage] = s
	}
	index := map[string]int{}
	for i := range m.Graph.Nodes {
		if _, dup := index[m.Graph.Nodes[i].Label()]; !dup {
			index[m.Graph.Nodes[i].Label()] = i
		}
	}
	critical := criticalSet(man)
	for _, st := range man.Stages {
		ids := make([]int, len(st.Nodes))
		for i, n := range st.Nodes {
			ids[i] = index[n]
		}
		o.Stages = append(o.Stages, ids)
		o.StageNodeNames = append(o.StageNodeNames, st.Nodes)
		o.StageDeviceNames = append(o.StageDeviceNames, st.Device)
		s := byLabel[st.Label]
		o.StageCosts = append(o.StageCosts, stageCostJSON{Work: s.ComputeS, Comm: s.CommS, Call: s.CallS, Total: s.TotalS,
			ParamsBytes: st.ParamsBytes, Nodes: len(st.Nodes), Bottleneck: isPipeline(r) && s.Bottleneck, CriticalPath: critical[st.Index],
			Memory: st.Memory})
	}
	return o
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// isPipeline says whether the plan is a pipeline, whose objective is its bottleneck stage:
// a latency plan is judged by one input's time and a batched plan by the batch's.
func isPipeline(r *onnxpart.Result) bool { return r.Objective == onnxpart.Throughput && r.Batch == nil }

// criticalSet holds the stage indices on the critical path of a latency or batched plan's
// schedule (the manifest's timeline); empty for pipelines.
func criticalSet(man *emit.Manifest) map[int]bool {
	c := map[int]bool{}
	if man.Objective == emit.Objective(onnxpart.Latency) || man.Batch != nil {
		for _, i := range report.CriticalStages(man) {
			c[i] = true
		}
	}
	return c
}

func printPlan(w io.Writer, m *ingest.Model, r *onnxpart.Result, man *emit.Manifest, out string) {
	// Devices in the order given; a run of identical products is one entry.
	var dl []string
	for i := 0; i < len(r.Devices); {
		d := &r.Cluster.Devices[r.Devices[i]]
		j := i + 1
		for j < len(r.Devices) && r.Cluster.Devices[r.Devices[j]].Model == d.Model {
			j++
		}
		if j-i == 1 {
			dl = append(dl, onnxpart.DeviceLabel(r.Cluster, d.Name))
		} else {
			dl = append(dl, fmt.Sprintf("%d× %s (%s–%s)", j-i, d.Model, d.Name, r.Cluster.Devices[r.Devices[j-1]].Name))
		}
		i = j
	}
	fmt.Fprintf(w, "model      %s: %d nodes, %s, params %s\n", m.Path, len(m.Graph.Nodes), flopsStr(m.Graph.TotalFLOPs()), units.Bytes(m.ParamBytes()))
	fmt.Fprintf(w, "devices    %s\n", strings.Join(dl, ", "))
	obj := string(r.Objective)
	if r.ObjectiveChosen != "" {
		obj += " (" + r.ObjectiveChosen + ")"
	}
	fmt.Fprintf(w, "objective  %s\n", obj)
	fmt.Fprintf(w, "planned on %d fused groups (%s rules), %s in %.1fs\n\n", r.CoarseNodes, r.RuleSet, r.Algorithm, r.Seconds)
	byLabel := map[int]onnxpart.StageSummary{}
	for _, s := range r.Stages {
		byLabel[s.Stage] = s
	}
	critical := criticalSet(man)
	if man.Predicted != nil && len(man.Predicted.Workload) > 0 {
		fmt.Fprintln(w, "stage times per request: each phase's time × its calls, summed")
	}
	if man.Batch != nil && len(man.Batch.Routes) > 1 {
		fmt.Fprintf(w, "route 0's stages (%s in %s; the other routes' are in their directories, see the route lines)\n", plural(len(man.Stages), "stage"), out)
	}
	tw := newTable(w, tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tdevice\tops\tparams\tcompute\tcomm\tcall\ttotal\t\t")
	for _, st := range man.Stages {
		s := byLabel[st.Label]
		mark := ""
		switch {
		case isPipeline(r) && s.Bottleneck:
			mark = "◀ bottleneck"
		case critical[st.Index]:
			mark = "◀ critical path"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", st.Index, onnxpart.DeviceLabel(r.Cluster, st.Device), len(st.Nodes), units.Bytes(st.ParamsBytes),
			dur(s.ComputeS), dur(s.CommS), dur(s.CallS), dur(s.TotalS), mark)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if b := r.Batch; b != nil {
		fmt.Fprintf(w, "batch      %s in %s of %d: %s for the batch, %.1f inferences/s\n", plural(b.Inputs, "input"), plural(b.Granules, "granule"), b.GranuleInputs, dur(r.Upper), r.ThroughputPerS)
		for _, d := range b.Devices {
			fmt.Fprintf(w, "share      %s: %d of %s, %s, busy %s\n", onnxpart.DeviceLabel(r.Cluster, d.Device), d.Inputs, plural(b.Inputs, "input"), plural(d.Ops, "op"), dur(d.BusyS))
		}
		if man.Batch != nil {
			for _, rt := range man.Batch.Routes {
				labels := make([]string, len(rt.Devices))
				for i, d := range rt.Devices {
					labels[i] = onnxpart.DeviceLabel(r.Cluster, d)
				}
				fmt.Fprintf(w, "route %-4d %s (granules %s) through %s in %s (%s)\n", rt.Index, plural(rt.Inputs, "input"), emit.GranuleList(rt.Granules), strings.Join(labels, " → "), rt.Dir, plural(len(rt.Devices), "stage file"))
			}
		}
	} else if man.Predicted != nil && len(man.Predicted.Workload) > 0 {
		fmt.Fprintf(w, "throughput %s requests/s (busiest stage %s per request), latency %s per request\n", rate(r.ThroughputPerS), dur(r.Upper), dur(r.LatencyS))
		for _, ph := range man.Predicted.Workload {
			fmt.Fprintf(w, "phase      %s (%s) ×%g: bottleneck %s per call (%s calls/s alone), latency %s\n",
				ph.Name, dimWords(ph.Dims), ph.Weight, dur(ph.BottleneckS), rate(ph.ThroughputPerS), dur(ph.LatencyS))
		}
	} else if r.Objective == onnxpart.Throughput {
		fmt.Fprintf(w, "throughput %.1f inferences/s (bottleneck stage %s), latency %s\n", r.ThroughputPerS, dur(r.Upper), dur(r.LatencyS))
	} else {
		fmt.Fprintf(w, "latency    %s per inference (%.1f inferences/s one at a time)\n", dur(r.LatencyS), r.ThroughputPerS)
	}
	fmt.Fprintf(w, "bound      %s\n", boundWords(report.PlanFigures(man)))
	if out != "-" {
		if man.Batch != nil && len(man.Batch.Routes) > 1 {
			// Every route's files: route 0's here, the others' in their directories.
			files := 0
			var dirs []string
			for _, rt := range man.Batch.Routes {
				files += len(rt.Devices)
				if rt.Index > 0 {
					dirs = append(dirs, rt.Dir+"/")
				}
			}
			fmt.Fprintf(w, "wrote      %s (%s in %d routes: %d here, the rest in %s; a manifest.json per route%s)\n",
				out, plural(files, "stage file"), len(man.Batch.Routes), len(man.Stages), strings.Join(dirs, ", "), extrasText(out))
		} else {
			fmt.Fprintf(w, "wrote      %s (%s, manifest.json%s)\n", out, plural(len(man.Stages), "stage file"), extrasText(out))
		}
	}
	printNotes(w, "note       ", "notes      ", man.Notes)
}

func extrasText(dir string) string {
	s := ""
	if _, err := os.Stat(filepath.Join(dir, report.File)); err == nil {
		s += ", " + report.File
	}
	if _, err := os.Stat(filepath.Join(dir, triton.Dir)); err == nil {
		s += ", triton/"
	}
	if _, err := os.Stat(filepath.Join(dir, genai.File)); err == nil {
		s += ", " + genai.File
	}
	return s
}

// boundWords says how far the plan can be from the best one, in the figures of the report
// (report.PlanFigures): "at most X% slower" is upper/lower − 1, the gap 1 − lower/upper.
func boundWords(f report.Figures) string {
	switch {
	case f.Lower <= 0:
		return "no lower bound computed (--bounds none): the plan's distance from the best is unknown"
	case f.Gap <= 1e-9:
		return fmt.Sprintf("%s, proved optimal (lower bound %s by %s)", dur(f.Upper), dur(f.Lower), f.Method)
	case f.Gap < 5e-4: // within a MIP's tolerance: do not print "at most 0.0% slower"
		return fmt.Sprintf("%s, optimal to within %.2g%% (lower bound %s by %s)", dur(f.Upper), 100*f.Slower, dur(f.Lower), f.Method)
	}
	return fmt.Sprintf("lower bound %s (%s): at most %.1f%% slower than the best possible %s (upper/lower − 1; gap 1 − lower/upper = %.1f%%)",
		dur(f.Lower), f.Method, 100*f.Slower, f.Word, 100*f.Gap)
}

// dur formats seconds with a unit.
func dur(s float64) string {
	switch {
	case s <= 0:
		return "0"
	case s >= 1:
		return fmt.Sprintf("%.3gs", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.3gms", s*1e3)
	}
	return fmt.Sprintf("%.3gµs", s*1e6)
}

// plural is "1 input", "2 inputs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// optionFlags are the flags that set onnxpart.Options, by field: the planner's errors and
// notes name an option by its flag.
var optionFlags = map[string]string{
	"MaxStages": "-k", "Objective": "--objective", "Batch": "--batch", "Fusion": "--fusion", "FusionRules": "--fusion-rules",
	"Solver": "--solver", "Bounds": "--bounds", "TimeLimit": "--time-limit", "Gap": "--gap", "Seed": "--seed",
	"PolishWindow": "--polish-window", "GPUIDs": "--gpu-ids", "MemoryGraph": "--max-dim", "Workload": "--workload",
	"State": "--state", "CutAt": "--cut-at", "StagesPerDevice": "--stages-per-device",
}
