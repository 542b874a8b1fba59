// Command fidelity measures how well package profile predicts pipeline stage times on this
// machine's CPU.
//
// What goes in: every model in -models (the shared corpus). What comes out: a table on
// stdout, one row per stage: the model split into k = 2, 4 and 8 stages of equal FLOPs
// (emit.EqualFLOPs, written by emit.Write), the stage's predicted time on the host CPU device
// (1 thread) and its measured median ONNX Runtime run time (stage file, graph optimizations on,
// 1 intra-op thread), and per split whether the bottleneck stage was predicted. Summaries
// follow for three ways of calibrating the CPU device:
//
//   - family: leave one model family out — the device is calibrated on the ONNX Runtime
//     profiles of the models of every other family (bert, efficientnet, …), then predicts
//     the held-out family's stages. This is the honest figure: no model, nor any variant of
//     it (fp16, opset 17, dynamic batch, a smaller copy), is seen in calibration.
//   - model: leave one model out — variants of the same architecture may be in calibration.
//   - measured: the model's own profile gives per-node times (`--costs measured`); stages
//     are new sessions over new files, so this still measures fusion and boundary effects.
//
// Measured time is the median over runs of the calling thread's CPU time: with one intra-op
// thread ONNX Runtime computes on that thread, so this equals the wall time on an idle machine
// and stays meaningful on a shared one (wall-time medians are printed beside it). Stages of a
// split are timed round-robin so that load changes affect them alike, each called twice per
// round: the first call is cold (the other stages' calls since its last one evicted its
// weights and activations from the cache) and gives the measured time of the table and the
// headline summary; the second is warm, a pipeline stage's steady state on a device that runs
// the same stage call after call (the whole-model profiles behind the calibration are timed
// that way), and gets a summary of its own. Warm calls ran 12–21% faster than cold ones
// (median over the stages of a run; 3–44% from the 10th to the 90th percentile) on the
// machine of results.txt.
//
// Whether a split's bottleneck was predicted is counted three ways. Exact: the stage with
// the largest predicted time is the one with the largest measured median. Within 5%: its
// measured median is at least 95% of the largest. Tied with the max: its measured time cannot
// be told apart from the slowest stage's by the measurement itself — the paired bootstrap 95%
// confidence interval of the difference of the two stages' medians (resampling the rounds of
// the round-robin, see slower) contains zero. Equal-FLOP splits often leave two or more
// stages within the run-to-run noise of each other; then the exact figure counts a coin
// toss, while the tied figure counts a prediction wrong only when the measurement shows a
// stage that is really slower. The summary also says in how many splits the slowest stage is
// determined at all (measurably slower than every other stage), and in how many of those each
// calibration predicts it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/internal/feeds"
	"github.com/onnxpart/onnxpart/internal/measure"
	"github.com/onnxpart/onnxpart/internal/stats"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/verify"
)

type model struct {
	name, path, family string
	m                  *ingest.Model
	meas               *profile.Measurement
}

type stageResult struct {
	Model    string             `json:"model"`
	K        int                `json:"k"`
	Stage    int                `json:"stage"`
	Nodes    int                `json:"nodes"`
	InBytes  int64              `json:"input_bytes"`
	OutBytes int64              `json:"output_bytes"`
	Measured float64            `json:"measured_cpu_s"`
	Wall     float64            `json:"measured_wall_s"`
	Pred     map[string]float64 `json:"predicted_s"` // by calibration mode
	// Drift is how much slower the whole model ran, timed with the stages, than when it was
	// profiled: the machine's load changing in between (not used by any prediction).
	Drift float64 `json:"whole_model_drift"`
	// Runs are the per-run CPU times behind Measured, in timing order; run r of every stage of
	// a split belongs to the same round of the round-robin.
	Runs []float64 `json:"measured_cpu_runs_s"`
	// Warm is the median CPU time of a call made right after a call of the same stage (its
	// weights and input still in cache: a pipeline stage's steady state); WarmRuns are its
	// runs, WarmDrift the whole model's drift timed the same way.
	Warm      float64   `json:"measured_warm_cpu_s"`
	WarmRuns  []float64 `json:"measured_warm_cpu_runs_s"`
	WarmDrift float64   `json:"whole_model_warm_drift"`
	// ParamBytes are the bytes of the weights the stage's nodes read; Classes its predicted
	// node times summed per op class, by calibration mode (for diagnosis; not used by the
	// summaries).
	ParamBytes int64                         `json:"param_bytes"`
	Tensors    [2]int                        `json:"boundary_tensors"` // inputs, outputs
	Classes    map[string]map[string]float64 `json:"predicted_class_s"`
}

var modes = []string{"family", "model", "measured"}

func main() {
	modelsDir := flag.String("models", "../shared/models", "directory of .onnx models")
	ks := flag.String("k", "2,4,8", "stage counts")
	runs := flag.Int("runs", 30, "timed runs per stage (after 3 warm-up runs)")
	profRuns := flag.Int("profile-runs", 30, "profiled runs per model for calibration")
	only := flag.String("only", "", "comma list of model names to evaluate (all by default; calibration always uses all)")
	jsonOut := flag.String("json", "", "also write the rows as JSON to this file")
	flag.Parse()
	ctx := context.Background()
	if err := ort.Init(); err != nil {
		fail(err)
	}
	var kList []int
	for _, s := range strings.Split(*ks, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || k < 1 {
			fail(fmt.Errorf("-k %q", *ks))
		}
		kList = append(kList, k)
	}
	paths, _ := filepath.Glob(filepath.Join(*modelsDir, "*.onnx"))
	sort.Strings(paths)
	if len(paths) == 0 {
		fail(fmt.Errorf("no models in %s", *modelsDir))
	}
	host, err := devices.ProbeHost(ctx, devices.HostOptions{})
	if err != nil {
		fail(err)
	}
	base := hw.HostDevice(host, "cpu", 1)
	fmt.Printf("host: %s, %d logical CPUs; CPU device for 1 thread: fp32 peak %s (%s), bandwidth %s (%s)\n",
		host.Model, host.Cores, profile.FormatQuantity(base.Peak[profile.FP32].Value, profile.FLOPRate), base.Peak[profile.FP32].Source,
		profile.FormatQuantity(base.Bandwidth.Value, profile.Rate), base.Bandwidth.Source)

	// 1. Calibration data: the cost of a call's inputs and outputs, and an ONNX Runtime
	// profile of every whole model.
	io, err := measure.MeasureIO(ctx, 1, 30, base.Bandwidth.Value)
	if err != nil {
		fail(err)
	}
	fmt.Printf("call I/O: %s fixed, %s per KiB in and out (%s), layout conversion %s per KiB (%s); NCHWc block %d channels, alignment %d\n", profile.FormatQuantity(io.Fixed, profile.Seconds),
		profile.FormatQuantity(io.PerByte*1024, profile.Seconds), profile.FormatQuantity(1/io.PerByte, profile.Rate),
		profile.FormatQuantity(io.LayoutPerByte*1024, profile.Seconds), profile.FormatQuantity(1/io.LayoutPerByte, profile.Rate), io.ChannelBlock, io.ChannelAlign)
	var models []*model
	for _, p := range paths {
		name := filepath.Base(p)
		m, err := loadBound(p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "skip %s: %v\n", name, err)
			continue
		}
		feeds, err := feeds.Random(m.Graph, 1, verify.DefaultMaxTensorBytes, nil, nil)
		if err != nil {
			fmt.Fprintf(os.Stderr, "skip %s: %v\n", name, err)
			continue
		}
		t0 := time.Now()
		meas, err := measure.MeasureORT(ctx, p, m.Graph, measure.MeasureOptions{Threads: 1, Runs: *profRuns, Feeds: feeds, IO: &io})
		if err != nil {
			fmt.Fprintf(os.Stderr, "skip %s: %v\n", name, err)
			continue
		}
		fmt.Fprintf(os.Stderr, "profiled %-34s %4d nodes → %3d kernels, %s per run, %d/%d clean runs, profiler %s per kernel removed (%.1fs)\n", name, len(m.Graph.Nodes),
			meas.Optimized, profile.FormatQuantity(meas.Call, profile.Seconds), meas.Clean, meas.Runs,
			profile.FormatQuantity(meas.ProfilerOverhead, profile.Seconds), time.Since(t0).Seconds())
		models = append(models, &model{name: name, path: p, family: family(name), m: m, meas: meas})
	}

	// 2. One calibrated device per (model, mode).
	devFor := func(target *model, mode string) profile.Device {
		d := base
		d.Efficiency, d.MemEfficiency, d.Overhead = nil, nil, nil
		var samples []profile.Sample
		for _, o := range models {
			switch mode {
			case "family":
				if o.family == target.family {
					continue
				}
			case "model":
				if o == target {
					continue
				}
			case "measured":
				if o != target {
					continue
				}
			}
			samples = append(samples, profile.Sample{Graph: o.m.Graph, Measured: o.meas})
		}
		profile.Calibrate(&d, samples).Apply(&d)
		return d
	}

	// 3. Stages.
	selected := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			selected[s] = true
		}
	}
	var rows []stageResult
	for _, md := range models {
		if len(selected) > 0 && !selected[md.name] && !selected[strings.TrimSuffix(md.name, ".onnx")] {
			continue
		}
		cms := map[string]*profile.CostModel{}
		for _, mode := range modes {
			d := devFor(md, mode)
			var opts profile.CostOptions
			if mode == "measured" {
				opts.Measured = [][]float64{md.meas.NodeTimes()}
			}
			cms[mode] = profile.NewCostModel(&profile.Cluster{Devices: []profile.Device{d}, Links: [][]profile.Link{{{Kind: profile.LinkSelf}}}}, opts)
		}
		for _, k := range kList {
			res, err := evalSplit(ctx, md, k, *runs, cms)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s k=%d: %v\n", md.name, k, err)
				continue
			}
			rows = append(rows, res...)
		}
	}
	report(rows)
	if *jsonOut != "" {
		data, _ := json.MarshalIndent(rows, "", "  ")
		if err := os.WriteFile(*jsonOut, append(data, '\n'), 0o644); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fidelity:", err)
	os.Exit(1)
}

// loadBound loads a model, binding every symbolic dimension to 1.
func loadBound(p string) (*ingest.Model, error) {
	m, err := ingest.Load(p, ingest.Options{})
	if err != nil || len(m.SymbolicDims) == 0 {
		return m, err
	}
	dims := map[string]int64{}
	for _, d := range m.SymbolicDims {
		dims[d] = 1
	}
	return ingest.Load(p, ingest.Options{Dims: dims})
}

// family is the architecture a model belongs to: its name up to the first underscore
// (bert_base_like_small_op17 → bert, squeezenet1_1_small → squeezenet1).
func family(name string) string {
	name = strings.TrimSuffix(name, ".onnx")
	if i := strings.IndexByte(name, '_'); i > 0 {
		return name[:i]
	}
	return name
}

// session opens a whole model with inputs from pool.
func session(md *model, pool map[string]*ort.Tensor) (*ort.Session, map[string]*ort.Tensor, map[string]ort.OutputHint, error) {
	g := md.m.Graph
	var ins, outs []string
	feeds := map[string]*ort.Tensor{}
	for _, id := range g.Inputs {
		ins = append(ins, g.Tensors[id].Name)
		feeds[g.Tensors[id].Name] = pool[g.Tensors[id].Name]
	}
	hints := map[string]ort.OutputHint{}
	for _, id := range g.Outputs {
		t := &g.Tensors[id]
		outs = append(outs, t.Name)
		if t.Shape.Known() && (len(t.Shape) == 0 || t.DType == graph.Float16 || t.DType == graph.BFloat16) {
			hints[t.Name] = ort.OutputHint{DType: t.DType, Shape: t.Shape.Dims()}
		}
	}
	s, err := ort.NewSession(md.path, ins, outs, ort.Options{Optimize: true, Threads: 1})
	return s, feeds, hints, err
}

// evalSplit writes the k-stage split, times every stage and predicts it in every mode.
func evalSplit(ctx context.Context, md *model, k, runs int, cms map[string]*profile.CostModel) ([]stageResult, error) {
	g := md.m.Graph
	labels, err := emit.EqualFLOPs(g, k)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fidelity-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "split")
	man, err := emit.Write(md.m, &emit.Assignment{Stage: labels, Split: emit.SplitInfo{Method: "stages", RequestedStages: k}}, out, emit.Options{})
	if err != nil {
		return nil, err
	}
	byLabel := map[string]int{}
	for v := range g.Nodes {
		byLabel[g.Nodes[v].Label()] = v
	}
	// Sessions, and the stage inputs computed by running the chain once.
	pool, err := feeds.Random(g, 1, verify.DefaultMaxTensorBytes, nil, nil)
	if err != nil {
		return nil, err
	}
	type stageRun struct {
		s     *ort.Session
		feeds map[string]*ort.Tensor
		hints map[string]ort.OutputHint
	}
	sr := make([]stageRun, len(man.Stages))
	defer func() {
		for _, x := range sr {
			if x.s != nil {
				x.s.Close()
			}
		}
	}()
	for i, st := range man.Stages {
		var ins, outs []string
		feeds := map[string]*ort.Tensor{}
		for _, t := range st.Inputs {
			ins = append(ins, t.Name)
			v, ok := pool[t.Name]
			if !ok {
				return nil, fmt.Errorf("stage %d input %s not computed", i, t.Name)
			}
			feeds[t.Name] = v
		}
		hints := map[string]ort.OutputHint{}
		for _, t := range st.Outputs {
			outs = append(outs, t.Name)
			dt, _ := graph.ParseDType(t.DType)
			sh := graph.Shape(t.Shape)
			if sh.Known() && (len(sh) == 0 || dt == graph.Float16 || dt == graph.BFloat16) {
				hints[t.Name] = ort.OutputHint{DType: dt, Shape: sh.Dims()}
			}
		}
		s, err := ort.NewSession(filepath.Join(out, st.File), ins, outs, ort.Options{Optimize: true, Threads: 1})
		if err != nil {
			return nil, err
		}
		res, err := s.Run(feeds, hints)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("stage %d: %w", i, err)
		}
		for name, v := range res {
			pool[name] = v
		}
		sr[i] = stageRun{s, feeds, hints}
	}
	// The whole model joins the round-robin as a reference: its time now against its time
	// when it was profiled shows how the machine's load drifted in between.
	{
		s, feeds, hints, err := session(md, pool)
		if err != nil {
			return nil, err
		}
		sr = append(sr, stageRun{s, feeds, hints})
	}
	// Timing: round-robin over the stages; each stage is called twice in a row, the first
	// call cold (the other stages ran since its last call), the second warm.
	cpu := make([][]float64, len(sr))
	wall := make([][]float64, len(sr))
	warm := make([][]float64, len(sr))
	for r := range 3 + runs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i, x := range sr {
			call := func() error { _, err := x.s.Run(x.feeds, x.hints); return err }
			w, c, err := devices.TimeCall(call)
			if err != nil {
				return nil, err
			}
			_, cw, err := devices.TimeCall(call)
			if err != nil {
				return nil, err
			}
			if r >= 3 {
				cpu[i] = append(cpu[i], c)
				wall[i] = append(wall[i], w)
				warm[i] = append(warm[i], cw)
			}
		}
	}
	whole := stats.Median(cpu[len(man.Stages)])
	drift := whole / md.meas.Call
	warmDrift := stats.Median(warm[len(man.Stages)]) / md.meas.Call
	fmt.Fprintf(os.Stderr, "%s k=%d: whole model %s ms now (%s ms warm), %s ms when profiled (%+.0f%%, warm %+.0f%%)\n", md.name, k, ms(whole),
		ms(stats.Median(warm[len(man.Stages)])), ms(md.meas.Call), (drift-1)*100, (warmDrift-1)*100)
	var rows []stageResult
	for i, st := range man.Stages {
		row := stageResult{Model: md.name, K: k, Stage: i, Nodes: len(st.Nodes), Measured: stats.Median(cpu[i]), Wall: stats.Median(wall[i]),
			Pred: map[string]float64{}, Drift: drift, Runs: cpu[i], Warm: stats.Median(warm[i]), WarmRuns: warm[i], WarmDrift: warmDrift}
		for _, t := range st.Inputs {
			row.InBytes += max(t.Bytes, 0)
		}
		for _, t := range st.Outputs {
			row.OutBytes += max(t.Bytes, 0)
		}
		row.Tensors = [2]int{len(st.Inputs), len(st.Outputs)}
		var nodes []int
		for _, name := range st.Nodes {
			v, ok := byLabel[name]
			if !ok {
				return nil, fmt.Errorf("stage %d: node %q not in the graph", i, name)
			}
			nodes = append(nodes, v)
		}
		row.Classes = map[string]map[string]float64{}
		for mode, cm := range cms {
			row.Pred[mode] = cm.StageTime(g, nodes, 0)
			cl := map[string]float64{}
			for _, v := range nodes {
				cl[string(profile.ClassOn(&cm.Cluster().Devices[0], g, &g.Nodes[v]))] += cm.NodeTime(g, v, 0)
			}
			row.Classes[mode] = cl
		}
		for _, v := range nodes {
			row.ParamBytes += max(g.Nodes[v].ParamBytes, 0)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func ms(s float64) string { return strconv.FormatFloat(s*1e3, 'f', 3, 64) }

func report(rows []stageResult) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\tk\tstage\tnodes\tin KB\tout KB\tmeasured ms\twall ms\twarm ms\tpred family\terr\tpred model\terr\tpred measured\terr\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t", strings.TrimSuffix(r.Model, ".onnx"), r.K, r.Stage, r.Nodes, r.InBytes>>10, r.OutBytes>>10,
			ms(r.Measured), ms(r.Wall), ms(r.Warm))
		for _, mode := range modes {
			p := r.Pred[mode]
			fmt.Fprintf(tw, "%s\t%+.0f%%\t", ms(p), (p/r.Measured-1)*100)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()

	// Splits: rows grouped by (model, k).
	var splits [][]stageResult
	for i, r := range rows {
		if i == 0 || rows[i-1].Model != r.Model || rows[i-1].K != r.K {
			splits = append(splits, nil)
		}
		splits[len(splits)-1] = append(splits[len(splits)-1], r)
	}
	fmt.Printf("\n%d stages in %d splits of %d models\n", len(rows), len(splits), countModels(rows))
	fmt.Println("\ntimed cold (the headline: every call after the other stages' calls, as in the table above):")
	summary(rows, splits, func(r stageResult) (float64, []float64) { return r.Measured, r.Runs })
	fmt.Println("\ntimed warm (each call right after a call of the same stage: a pipeline stage's steady state):")
	summary(rows, splits, func(r stageResult) (float64, []float64) { return r.Warm, r.WarmRuns })
	var drifts, warmDrifts []float64
	for _, sp := range splits {
		drifts = append(drifts, math.Abs(sp[0].Drift-1))
		warmDrifts = append(warmDrifts, math.Abs(sp[0].WarmDrift-1))
	}
	fmt.Printf("\nnoise floor: the whole model, timed with its stages, differed from its time when profiled by %.1f%% cold, %.1f%% warm (median over splits)\n",
		stats.Median(drifts)*100, stats.Median(warmDrifts)*100)
}

// summary prints the error and bottleneck figures of every calibration mode against the
// measured times that measure gives (median and per-run CPU times), and how many splits have a
// determined slowest stage.
func summary(rows []stageResult, splits [][]stageResult, measure func(stageResult) (float64, []float64)) {
	at := func(r stageResult) float64 { m, _ := measure(r); return m }
	runs := func(r stageResult) []float64 { _, v := measure(r); return v }
	multi := 0
	for _, sp := range splits {
		if len(sp) >= 2 {
			multi++
		}
	}
	pct := func(n int) float64 { return 100 * float64(n) / float64(max(multi, 1)) }
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "calibration\tmedian |err| per stage\tstages within 20%\tbottleneck predicted (exact)\t(within 5% of the true max)\t(tied with the max, 95% CI)\tmedian |err|, k=2/4/8")
	for _, mode := range modes {
		var errs []float64
		within := 0
		byK := map[int][]float64{}
		for _, r := range rows {
			e := math.Abs(r.Pred[mode]/at(r) - 1)
			errs = append(errs, e)
			byK[r.K] = append(byK[r.K], e)
			if e <= 0.2 {
				within++
			}
		}
		exact, near, tied := 0, 0, 0
		for _, sp := range splits {
			if len(sp) < 2 {
				continue
			}
			trueB, predB := 0, 0
			for i, r := range sp {
				if at(r) > at(sp[trueB]) {
					trueB = i
				}
				if r.Pred[mode] > sp[predB].Pred[mode] {
					predB = i
				}
			}
			if trueB == predB {
				exact++
			}
			if at(sp[predB]) >= 0.95*at(sp[trueB]) {
				near++
			}
			if trueB == predB || !slower(runs(sp[trueB]), runs(sp[predB])) {
				tied++
			}
		}
		var ks []string
		for _, k := range slices.Sorted(maps.Keys(byK)) {
			ks = append(ks, fmt.Sprintf("%.1f%%", stats.Median(byK[k])*100))
		}
		fmt.Fprintf(tw, "%s\t%.1f%%\t%d/%d\t%d/%d (%.0f%%)\t%d/%d (%.0f%%)\t%d/%d (%.0f%%)\t%s\n", mode, stats.Median(errs)*100, within, len(rows),
			exact, multi, pct(exact), near, multi, pct(near), tied, multi, pct(tied), strings.Join(ks, " / "))
	}
	tw.Flush()
	determined := 0
	hits := map[string]int{} // determined splits whose bottleneck a mode predicted
	for _, sp := range splits {
		if len(sp) < 2 {
			continue
		}
		b := 0
		for i, r := range sp {
			if at(r) > at(sp[b]) {
				b = i
			}
		}
		alone := true
		for i, r := range sp {
			if i != b && !slower(runs(sp[b]), runs(r)) {
				alone = false
			}
		}
		if !alone {
			continue
		}
		determined++
		for _, mode := range modes {
			p := 0
			for i, r := range sp {
				if r.Pred[mode] > sp[p].Pred[mode] {
					p = i
				}
			}
			if p == b {
				hits[mode]++
			}
		}
	}
	fmt.Printf("splits whose slowest stage the measurement determines (every other stage measurably faster, 95%% CI): %d/%d;", determined, multi)
	for _, mode := range modes {
		fmt.Printf(" %s predicts it in %d/%d", mode, hits[mode], determined)
	}
	fmt.Println()
}

// Bootstrap settings for slower.
const (
	bootstrapResamples = 2000
	bootstrapSeed      = 1
)

// slower reports whether a stage timed at runs a is measurably slower than one timed at runs
// b: the paired bootstrap 95% percentile confidence interval of stats.Median(a) − stats.Median(b) lies
// above zero. Runs are paired by round (the round-robin times run r of every stage of a split
// back to back, so a load change hits both alike); each resample draws rounds with
// replacement. Fewer than 5 paired runs prove nothing (false).
func slower(a, b []float64) bool {
	n := min(len(a), len(b))
	if n < 5 {
		return false
	}
	rng := rand.New(rand.NewSource(bootstrapSeed))
	diffs := make([]float64, bootstrapResamples)
	ra, rb := make([]float64, n), make([]float64, n)
	for k := range diffs {
		for i := range n {
			r := rng.Intn(n)
			ra[i], rb[i] = a[r], b[r]
		}
		diffs[k] = stats.Median(ra) - stats.Median(rb)
	}
	sort.Float64s(diffs)
	return diffs[int(0.025*float64(len(diffs)))] > 0
}

func countModels(rows []stageResult) int {
	s := map[string]bool{}
	for _, r := range rows {
		s[r.Model] = true
	}
	return len(s)
}
