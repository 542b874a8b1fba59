package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/pipebench"
)

func init() {
	register(&command{
		name:    "bench",
		summary: "run the stage files as a pipeline in ONNX Runtime and measure it against the plan",
		usage: `Usage: onnxpart bench DIR [--requests N | --duration D] [--warmup N] [--in-flight N]
                      [--devices SPEC] [--input NAME=FILE.npy]... [--dim NAME=SIZE]...
                      [--opt all|disabled] [--spin D] [--json] [--update-report]

Runs the stage files in DIR (written by the planner or 'onnxpart split') as the deployed
pipeline: one ONNX Runtime session per stage with its device's execution provider, one
worker per device on its own OS thread pinned to the device's cores, bounded queues between
stages; stages that share a device run in turn. A batched plan runs every route as priced:
a request to a route is its whole share of the batch, which each stage call runs as one
batch, the routes take requests in turn, and the throughput counts inputs.

First --warmup requests run one at a time (their latency, less the first, is the latency of
a lone request, which the plan's latency predicts); then --requests requests are measured
(or as many as --duration allows) with at most --in-flight in the pipeline (default: the
number of stages), after as many have filled it.

Prints the measured throughput and p50/p90/p99 latency, and each stage's busy time (its ONNX
Runtime call) and waiting time (the rest of the cycle), each against the manifest's
prediction as a ratio (measured / predicted).

--devices gives the devices the plan was made for, so that each worker gets the plan's
threads and cores (cpu:2x1: one thread each on disjoint cores). Without it, one CPU device
gets every core and several share the cores equally, each pinned to its own.

Inputs are random and seeded as 'onnxpart verify' makes them, or real data (--input).
Symbolic dimensions the stages kept take --dim, else the sizes the manifest records; a
dimension the model ties to others follows them (a decoder's total = past + seq), so
--dim past=0 alone runs a prefill and --dim seq=1,past=16 a decode step. The sizes it
derives are noted.
Ctrl-C prints what was measured so far (exit 130). A stage that fails at run time stops the
bench with a message naming the stage (exit 1).

Examples:
  onnxpart model.onnx --devices cpu:2x1 --costs measured -o out
  onnxpart bench out --devices cpu:2x1
  onnxpart bench out --duration 30s --in-flight 4 --json > bench.json
  onnxpart bench decoder_out --dim seq=1,past=1024
`,
		run: runBench,
	})
}

// benchFlags are the flags that set pipebench.Options, by field, for its errors to name.
var benchFlags = diag.Names{"ModelPath": "--model", "Inputs": "--input", "Dims": "--dim"}

func runBench(ctx context.Context, e *env, args []string) error {
	c := commands["bench"]
	fs := newFlags(e, c)
	requests := fs.Int("requests", pipebench.DefaultRequests, "measured requests")
	duration := fs.Duration("duration", 0, "measure for this long instead of --requests (e.g. 30s)")
	warmup := fs.Int("warmup", pipebench.DefaultWarmup, "requests run one at a time before measuring")
	inflight := fs.Int("in-flight", 0, "most requests in the pipeline at once (default: the number of stages)")
	devices := fs.String("devices", "", "the devices the plan was made for (threads and cores per device), e.g. cpu:2x1")
	model := fs.String("model", "", "original model, for inputs made as verify makes them (default: the manifest's)")
	inputs := fs.StringArray("input", nil, "real data for a model input, NAME=FILE.npy (repeatable)")
	dimFlags := fs.StringArray("dim", nil, "size of a symbolic dimension the stages kept, NAME=SIZE (repeatable; dims tied to others, such as total = past + seq, follow them)")
	seed := fs.Int64("seed", 1, "seed of the random inputs")
	optLevel := fs.String("opt", "all", "ONNX Runtime graph optimizations: all (as deployed) or disabled")
	spin := fs.Duration("spin", 0, "how long an idle worker polls its queue before it sleeps (e.g. 200us; 0: sleep at once)")
	asJSON := fs.Bool("json", false, "print the report as JSON (schema bench.v1)")
	update := fs.Bool("update-report", false, "add the measured-vs-predicted section to DIR/report.html")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return diag.Usage("bench takes one directory, got %d arguments", fs.NArg())
	}
	if *requests <= 0 && !fs.Changed("duration") {
		return diag.Usage("--requests %d: want at least 1", *requests).About(diag.Flag, "--requests")
	}
	if fs.Changed("duration") && *duration <= 0 {
		return diag.Usage("--duration must be positive").About(diag.Flag, "--duration")
	}
	if *inflight < 0 {
		return diag.Usage("--in-flight %d: want at least 1", *inflight).About(diag.Flag, "--in-flight")
	}
	if *spin < 0 {
		return diag.Usage("--spin must not be negative").About(diag.Flag, "--spin")
	}
	if *warmup < 0 {
		return diag.Usage("--warmup %d: want 0 or more", *warmup).About(diag.Flag, "--warmup")
	}
	if *optLevel != "all" && *optLevel != "disabled" {
		return diag.Usage("--opt %q: want all or disabled", *optLevel).About(diag.Flag, "--opt")
	}
	dims, err := parseDims(*dimFlags)
	if err != nil {
		return err
	}
	opt := pipebench.Options{Requests: *requests, Warmup: *warmup, InFlight: *inflight, Seed: *seed, Dims: dims,
		ModelPath: *model, NoOptimize: *optLevel == "disabled", Spin: *spin, Names: benchFlags}
	if fs.Changed("duration") {
		opt.Duration = *duration
		if !fs.Changed("requests") {
			opt.Requests = 0
		}
	}
	if *warmup == 0 {
		opt.Warmup = -1
	}
	if len(*inputs) > 0 {
		opt.Inputs = map[string]string{}
		for _, s := range *inputs {
			name, file, ok := strings.Cut(s, "=")
			if !ok || name == "" || file == "" {
				return diag.Usage("--input %q: want NAME=FILE.npy", s).About(diag.Flag, "--input")
			}
			opt.Inputs[name] = file
		}
	}
	if *devices != "" {
		cl, err := hw.Resolve(ctx, *devices, hw.Options{Host: hw.HostOptions{NoBench: true}, Names: profileFlags})
		if err != nil {
			return err
		}
		opt.Devices = pipebench.DevicesFrom(cl)
	}
	if !*quiet {
		opt.Phase = func(s string) { fmt.Fprintf(e.stderr, "bench: %s\n", s) }
	}
	dir := fs.Arg(0)
	rep, err := pipebench.Run(ctx, dir, opt)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printBench(e.stdout, rep)
	}
	if *update {
		if err := pipebench.UpdateReport(filepath.Join(dir, "report.html"), rep); err != nil {
			return diag.Input("--update-report: %v", err)
		}
		if !*asJSON {
			fmt.Fprintf(e.stdout, "updated    %s\n", filepath.Join(dir, "report.html"))
		}
	}
	if rep.Interrupted {
		return diag.Interrupted("interrupted: printed what was measured so far")
	}
	return nil
}

func printBench(w io.Writer, r *pipebench.Report) {
	opt := "on"
	if !r.Optimize {
		opt = "off"
	}
	var devs []string
	for _, d := range r.Devices {
		s := fmt.Sprintf("%s (%d thread", d.Name, d.Threads)
		if d.Threads != 1 {
			s += "s"
		}
		if len(d.CPUs) > 0 {
			s += " on CPU " + hw.FormatCPUs(d.CPUs)
		}
		devs = append(devs, s+")")
	}
	routes := ""
	if r.Routes > 1 {
		routes = fmt.Sprintf(" in %d routes", r.Routes)
	}
	fmt.Fprintf(w, "bench      %s: %d stages%s on %s\n", r.Dir, r.Stages, routes, strings.Join(devs, ", "))
	fmt.Fprintf(w, "runtime    ONNX Runtime %s, graph optimizations %s\n", r.ORTVersion, opt)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note       %s\n", n)
	}
	what := ""
	if r.Interrupted {
		what = " (interrupted: what was measured so far)"
	}
	fmt.Fprintf(w, "requests   %d measured in %.3gs after %d warm-up, %d in flight%s\n", r.Requests, r.Seconds, r.Warmup, r.InFlight, what)
	fmt.Fprintf(w, "throughput %.1f inferences/s%s\n", r.Throughput.Measured, vsPlan(r.Throughput, func(x float64) string { return fmt.Sprintf("%.1f", x) }))
	if r.Latency.Count > 0 {
		fmt.Fprintf(w, "latency    p50 %s  p90 %s  p99 %s  (%d in flight)\n", timeStr(r.Latency.P50), timeStr(r.Latency.P90), timeStr(r.Latency.P99), r.InFlight)
	}
	if r.LatencySingle != nil {
		fmt.Fprintf(w, "alone      p50 %s  p90 %s  (one request at a time)%s\n", timeStr(r.LatencySingle.P50), timeStr(r.LatencySingle.P90), vsPlan(r.LatencyVsPlan, timeStr))
	}
	if r.Batch != nil {
		fmt.Fprintf(w, "batch      %d inputs in %s%s\n", r.Batch.Inputs, timeStr(r.Batch.TimeS.Measured), vsPlan(r.Batch.TimeS, timeStr))
	}
	if len(r.StageTimes) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := newTable(w, tabwriter.AlignRight)
	route := r.Routes > 1
	if route {
		fmt.Fprint(tw, "route\t")
	}
	fmt.Fprintln(tw, "stage\tdevice\truns\tbusy\tplan\tratio\tcpu\twait\tplan\tratio\tqueue\t")
	for _, s := range r.StageTimes {
		if route {
			fmt.Fprintf(tw, "%d\t", s.Route)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.Stage, s.Device, s.Runs,
			timeStr(s.Busy.Measured), predStr(s.Busy.Planned), ratioStr(s.Busy.Ratio), timeStr(s.CPU),
			timeStr(s.Wait.Measured), predStr(s.Wait.Planned), ratioStr(s.Wait.Ratio), timeStr(s.Queue))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nbusy: the stage's ONNX Runtime call per request (cpu: its thread's CPU time); wait: the rest of")
	fmt.Fprintln(w, "the cycle (measured: window / requests; plan: its bottleneck); queue: ready input waiting for the device")
}

func vsPlan(c pipebench.Compared, f func(float64) string) string {
	if c.Planned == nil {
		return "  (no prediction in the manifest)"
	}
	s := "  predicted " + f(*c.Planned)
	if c.Ratio != nil {
		s += fmt.Sprintf("  ratio %.3f", *c.Ratio)
	}
	return s
}

func predStr(p *float64) string {
	if p == nil {
		return "-"
	}
	return timeStr(*p)
}

func ratioStr(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *p)
}
