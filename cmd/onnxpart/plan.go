package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/partition"
	"github.com/onnxpart/onnxpart/partition/instances"
	"github.com/onnxpart/onnxpart/schedule"
	schedinst "github.com/onnxpart/onnxpart/schedule/instances"
)

func init() {
	register(&command{
		name:    "plan",
		summary: "solve a partitioning instance (ONNX, dnn-partitioning JSON, Moirai CSV) and print the plan",
		usage: `Usage: onnxpart plan INSTANCE [--input-format onnx|dnn-partitioning|moirai] [-k K] [--cpus N]
                     [--bounds none|simple|fast|full] [--time-limit D] [--gap G] [--seed S] [--json]

Solves an instance and prints the plan with its certified lower bound and gap; writes nothing.

  onnx               an ONNX model, planned like the main command (takes its device flags:
                     --devices, --link, --objective, --fusion, …) but without emitting
  dnn-partitioning   a JSON instance of Tarnawski et al. (maxFPGAs, nodes, edges): a k-stage
                     pipeline (MTPP) minimising the slowest stage; --cpus N adds N
                     communication-free CPU stages anywhere in the chain
  moirai             a Moirai placement spreadsheet (CSV): a latency placement on its devices
                     with per-link transfer times and congestion

The format is guessed from the extension (.onnx, .json, .csv) when not given.

--json prints one object with at least objective (the plan's value, an upper bound),
lower_bound, gap (1 − lower/upper), stages (node ids per stage) and seconds.

Examples:
  onnxpart plan LayerGraphs/resnet50_inference.json -k 4
  onnxpart plan OperatorGraphs/bert_l-3_inference.json -k 2 --cpus 1 --json
  onnxpart plan GoogLeNet.csv --time-limit 60s
  onnxpart plan resnet50.onnx --devices 4xH100-SXM -k 4
`,
		run: runPlan,
	})
}

func runPlan(ctx context.Context, e *env, args []string) error {
	c := commands["plan"]
	// ONNX instances go through the main command's planner without writing anything.
	format, rest := "", args
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--input-format" && i+1 < len(args) {
			format = args[i+1]
		} else if v, ok := strings.CutPrefix(a, "--input-format="); ok {
			format = v
		}
	}
	if format == "" {
		for _, a := range args {
			if f := guessFormat(a); !strings.HasPrefix(a, "-") && f != "" {
				format = f
				break
			}
		}
	}
	if format == "onnx" {
		var pass []string
		for i := 0; i < len(rest); i++ {
			a := rest[i]
			if a == "--input-format" {
				i++
				continue
			}
			if strings.HasPrefix(a, "--input-format=") {
				continue
			}
			for _, w := range []string{"-o", "--output", "--emit", "--force"} {
				if a == w || strings.HasPrefix(a, w+"=") || (w == "-o" && strings.HasPrefix(a, "-o") && !strings.HasPrefix(a, "--")) {
					return diag.Usage("plan takes no %s: it prints the plan and writes nothing; the main command writes the stage files (onnxpart MODEL.onnx -o DIR)", w).About(diag.Flag, w)
				}
			}
			pass = append(pass, a)
		}
		return runMain(ctx, e, append(pass, "-o", "-"))
	}
	fs := newFlags(e, c)
	fs.String("input-format", "", "onnx, dnn-partitioning or moirai (default: by extension)")
	k := fs.IntP("stages", "k", 0, "accelerator stages (dnn-partitioning; default: the file's maxFPGAs)")
	cpus := fs.Int("cpus", 0, "extra CPU stages (dnn-partitioning)")
	bounds := fs.String("bounds", "fast", "lower-bound effort: none, simple, fast, full")
	polish := fs.Int("polish-window", 4, polishWindowHelp+" (dnn-partitioning)")
	timeLimit := fs.Duration("time-limit", 30*time.Second, "time budget for planning (search and bounds), as in the main command")
	gap := fs.Float64("gap", 0, "stop when proved within this relative gap")
	seed := fs.Int64("seed", 0, "random seed (default: unseeded, as in the main command: the searches start from 1 and the JSON names no seed)")
	solver := fs.String("solver", "auto", "moirai: auto, met, greedy, heft, ea, sa, milp, split")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return diag.Usage("plan takes one instance file, got %d arguments", fs.NArg())
	}
	path := fs.Arg(0)
	// Each format's own flags; given to another, they would be ignored: say so instead.
	for _, f := range []struct{ flag, only string }{{"stages", "dnn-partitioning"}, {"cpus", "dnn-partitioning"},
		{"polish-window", "dnn-partitioning"}, {"bounds", "dnn-partitioning"}, {"solver", "moirai"}} {
		if fs.Changed(f.flag) && format != f.only {
			return diag.Usage("--%s applies to %s instances; %s is %s", f.flag, f.only, path, format).About(diag.Flag, "--"+f.flag)
		}
	}
	if !fs.Changed("seed") {
		*seed = 1 // the searches' start; givenSeed leaves it out of the JSON
	}
	if *timeLimit <= 0 {
		return diag.Usage("--time-limit must be positive").About(diag.Flag, "--time-limit")
	}
	var out *planJSON
	var err error
	switch format {
	case "dnn-partitioning":
		out, err = planDNN(ctx, path, *k, *cpus, *bounds, *polish, *timeLimit, *gap, *seed)
	case "moirai":
		out, err = planMoirai(ctx, path, *solver, *timeLimit, *seed)
	default:
		return diag.Usage("--input-format %q: want onnx, dnn-partitioning or moirai", format).About(diag.Flag, "--input-format")
	}
	if err != nil {
		return err
	}
	out.Format, out.Input, out.InputFormat, out.Seed = "onnxpart.plan/v1", path, format, givenSeed(fs, *seed)
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	printInstancePlan(e.stdout, out)
	return nil
}

// polishWindowHelp is the help of --polish-window (the main command and plan).
const polishWindowHelp = "widest window of the pipeline polish, in consecutive stages (exact sub-MIPs around the bottleneck); wider finds better plans on many stages, slower"

func guessFormat(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".onnx":
		return "onnx"
	case ".json":
		return "dnn-partitioning"
	case ".csv":
		return "moirai"
	}
	return ""
}

func planDNN(ctx context.Context, path string, k, cpus int, bounds string, polish int, limit time.Duration, gap float64, seed int64) (*planJSON, error) {
	if k < 0 || cpus < 0 {
		return nil, diag.Usage("-k and --cpus must not be negative").About(diag.Flag, "-k")
	}
	if polish < 2 { // 0 is no default here: the flag's default is 4
		return nil, diag.Usage("--polish-window %d: a window spans at least 2 stages", polish).About(diag.Flag, "--polish-window")
	}
	inst, err := instances.LoadDNN(path, k, cpus)
	if err != nil {
		return nil, diag.Wrap(diag.KindInput, err)
	}
	if p := inst.Problem; p.NumStages() > p.NumNodes() {
		// A stage holds at least one node; more only allocate (a huge k ran out of memory).
		if k == 0 {
			return nil, diag.Input("%s: maxFPGAs = %d stages for %d nodes; give -k", path, inst.FileK, p.NumNodes())
		}
		return nil, diag.Usage("-k %d and --cpus %d: %d stages for an instance of %d nodes", k, cpus, p.NumStages(), p.NumNodes()).About(diag.Flag, "-k")
	}
	be, err := partition.ParseBounds(bounds)
	if err != nil {
		return nil, diag.Wrap(diag.KindUsage, err)
	}
	plan, err := partition.Solve(ctx, inst.Problem, partition.Options{Seed: seed, TimeLimit: limit, Gap: gap, Bounds: be,
		Polish: partition.PolishOptions{MaxWindow: polish}})
	if err != nil {
		return nil, planError(err)
	}
	o := &planJSON{Objective: plan.Objective, ObjectiveKind: "throughput", LowerBound: plan.LowerBound,
		BoundMethod: plan.BoundMethod, Gap: plan.Gap, StageDeviceNames: plan.StageDeviceNames, Algorithm: plan.Algorithm,
		Seconds: round3(plan.Seconds), Devices: []string{}, Bounds: []boundJSON{}, Notes: diag.NoteStrings(plan.Notes), notes: plan.Notes}
	seen := map[string]bool{}
	for _, d := range plan.StageDeviceNames {
		if !seen[d] {
			seen[d] = true
			o.Devices = append(o.Devices, d)
		}
	}
	if plan.Objective > 0 {
		o.ThroughputPerS = 1 / plan.Objective
	}
	bott := -1
	for i, sc := range plan.StageCosts {
		if bott < 0 || sc.Total > plan.StageCosts[bott].Total {
			bott = i
		}
	}
	for i, st := range plan.Stages {
		ids := make([]int, len(st))
		for j, v := range st {
			ids[j] = inst.IDs[v]
		}
		o.Stages = append(o.Stages, ids)
		sc := plan.StageCosts[i]
		o.StageCosts = append(o.StageCosts, stageCostJSON{Work: sc.Work, Comm: sc.Comm, Overflow: sc.Overflow, Total: sc.Total,
			ParamsBytes: int64(sc.Params), Nodes: len(st), Bottleneck: i == bott})
	}
	for _, b := range plan.Bounds {
		o.Bounds = append(o.Bounds, boundJSON{Method: b.Method, LowerBound: b.Value})
	}
	o.AtMostSlower = atMostSlower(o.Objective, o.LowerBound)
	return o, nil
}

// atMostSlower is upper/lower − 1, how much slower than the best possible a plan can be; 0
// without a bound.
func atMostSlower(upper, lower float64) float64 {
	if lower <= 0 || upper <= lower {
		return 0
	}
	return upper/lower - 1
}

func planMoirai(ctx context.Context, path, solver string, limit time.Duration, seed int64) (*planJSON, error) {
	p, err := schedinst.ReadMoiraiFile(path)
	if err != nil {
		return nil, diag.Wrap(diag.KindInput, err)
	}
	if solver == "" {
		solver = "auto"
	}
	res, err := schedule.Solve(ctx, p, schedule.Options{Method: solver, TimeLimit: limit, Seed: uint64(seed)})
	if err != nil {
		return nil, planError(err)
	}
	o := &planJSON{Objective: res.Makespan, ObjectiveKind: "latency", LowerBound: res.LowerBound, Gap: res.Gap,
		LatencyS: res.Makespan, Algorithm: res.Method, Seconds: round3(res.Seconds), Devices: []string{},
		Bounds: []boundJSON{}, Notes: diag.NoteStrings(res.Notes), notes: res.Notes}
	for _, d := range p.Devices {
		o.Devices = append(o.Devices, d.Name)
	}
	// One stage per device: the tasks it runs, and its busy time as the stage's work.
	o.Stages = make([][]int, len(p.Devices))
	for i := range o.Stages {
		o.Stages[i] = []int{}
	}
	for _, np := range res.Nodes {
		if np.Device >= 0 {
			o.Stages[np.Device] = append(o.Stages[np.Device], np.Node)
		}
	}
	o.StageDeviceNames = o.Devices
	for i, dp := range res.Devices {
		o.StageCosts = append(o.StageCosts, stageCostJSON{Work: dp.Busy, Total: dp.Busy, Nodes: len(o.Stages[i])})
	}
	best := math.Inf(-1)
	for _, b := range res.Bounds {
		o.Bounds = append(o.Bounds, boundJSON{Method: b.Method, LowerBound: b.Value})
		if b.Value > best {
			best, o.BoundMethod = b.Value, b.Method
		}
	}
	o.AtMostSlower = atMostSlower(o.Objective, o.LowerBound)
	return o, nil
}

func printInstancePlan(w io.Writer, o *planJSON) {
	fmt.Fprintf(w, "instance   %s (%s)\n", o.Input, o.InputFormat)
	tw := newTable(w, tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tdevice\tnodes\tcost\t\t")
	for i, st := range o.Stages {
		dev, cost, mark := "", "", ""
		if i < len(o.StageDeviceNames) {
			dev = o.StageDeviceNames[i]
		}
		if i < len(o.StageCosts) {
			cost = fmt.Sprintf("%.6g", o.StageCosts[i].Total)
			if o.StageCosts[i].Bottleneck {
				mark = "◀ bottleneck"
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t\n", i, dev, len(st), cost, mark)
	}
	tw.Flush()
	fmt.Fprintf(w, "objective  %.9g (%s, %s, %.2fs)\n", o.Objective, o.ObjectiveKind, o.Algorithm, o.Seconds)
	if o.LowerBound > 0 {
		fmt.Fprintf(w, "bound      %.9g (%s): at most %.2f%% slower than the best possible (upper/lower − 1); gap 1 − lower/upper = %.2f%%\n",
			o.LowerBound, o.BoundMethod, 100*o.AtMostSlower, 100*o.Gap)
	} else {
		fmt.Fprintln(w, "bound      none")
	}
	notes := o.notes
	if notes == nil {
		notes = diag.Infos(o.Notes...)
	}
	printNotes(w, "note       ", "notes      ", notes)
}
