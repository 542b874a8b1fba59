// Command fidelity is the pipeline fidelity benchmark (make fidelity-pipeline): every corpus
// model is planned on the host CPU split into two one-thread devices (--devices cpu:2x1
// --costs measured), its stages are benched as a pipeline in ONNX Runtime (pipebench), and
// the measured throughput and latency are set against the plan's, and against one one-thread
// session of the whole model. It prints a Markdown table per run and a summary.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/onnxpart/onnxpart"
	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	ortmeasure "github.com/onnxpart/onnxpart/internal/measure"
	"github.com/onnxpart/onnxpart/internal/stats"
	"github.com/onnxpart/onnxpart/pipebench"
	"github.com/onnxpart/onnxpart/profile"
)

type row struct {
	model                       string
	nodes, groups               int
	predTP, measTP              float64
	predLat, measLat, loadedLat float64
	wholeTP                     float64
	stages                      []pipebench.StageReport
	steal                       float64   // wall / CPU time of the stage calls
	stageTime                   []float64 // profile.CostModel.StageTime of each stage, calibrated
	cpuTP                       float64   // 1 / the slowest stage's CPU time
	wholeCPU                    float64   // CPU time of one run of the whole model
	err                         string
}

func main() {
	models := flag.String("models", "testdata/models ../shared/models", "directories of .onnx models (space separated)")
	devices := flag.String("devices", "cpu:2x1", "the devices to plan for and run on")
	requests := flag.Int("requests", 200, "measured requests per bench")
	only := flag.String("only", "", "comma list of model base names to run (default: all)")
	spin := flag.Duration("spin", 0, "how long an idle worker polls its queue before it sleeps (pipebench.Options.Spin)")
	repeat := flag.Int("repeat", 3, "bench the pipeline and the whole model this many times in turn and keep the best run of each")
	flag.Parse()
	ctx := context.Background()
	paths := corpus(strings.Fields(*models), *only)
	if len(paths) == 0 {
		fmt.Fprintln(os.Stderr, "fidelity: no models found")
		os.Exit(1)
	}
	c, err := hw.Resolve(ctx, *devices, hw.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fidelity:", err)
		os.Exit(1)
	}
	load1, _ := os.ReadFile("/proc/loadavg")
	start := time.Now()
	var rows []row
	for _, p := range paths {
		fmt.Fprintf(os.Stderr, "fidelity: %s\n", p)
		r := one(ctx, p, c, *requests, *spin, *repeat)
		if r.err != "" {
			fmt.Fprintf(os.Stderr, "fidelity: %s: %s\n", p, r.err)
		}
		rows = append(rows, r)
	}
	load2, _ := os.ReadFile("/proc/loadavg")
	host := c.Host
	fmt.Printf("Host: %s, %d logical CPUs; devices %s (", host.Model, host.Cores, *devices)
	for i, d := range c.Devices {
		if i > 0 {
			fmt.Print(", ")
		}
		fmt.Printf("%s: %d thread on CPU %s", d.Name, d.Threads, hw.FormatCPUs(d.CPUs))
	}
	fmt.Printf("); ONNX Runtime optimizations on; %d requests per bench, 2 in flight, workers spin %v; best of %d runs.\n", *requests, *spin, *repeat)
	fmt.Printf("Load average before %s, after %s; %s in all.\n\n", strings.Fields(string(load1))[0], strings.Fields(string(load2))[0], time.Since(start).Round(time.Second))
	fmt.Println("| model | nodes → groups | predicted inf/s | measured inf/s | ratio | predicted latency | measured alone (p50) | ratio | p50 with 2 in flight | whole model, 1 thread, inf/s | pipeline speed-up | stage busy / plan | stage CPU / StageTime | 1 / slowest stage CPU, inf/s | CPU-time speed-up | wall/CPU |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|")
	var tpErr, latErr, cpuErr, speedup, cpuSpeedup, busyErr, stErr []float64
	for _, r := range rows {
		if r.err != "" {
			fmt.Printf("| %s | – | – | – | – | – | – | – | – | – | – | %s | – | – | – | – |\n", r.model, r.err)
			continue
		}
		var ratios, st []string
		for i, s := range r.stages {
			if s.Busy.Ratio != nil {
				ratios = append(ratios, fmt.Sprintf("%.2f", *s.Busy.Ratio))
			}
			if s.Busy.Ratio != nil {
				busyErr = append(busyErr, math.Abs(*s.Busy.Ratio-1))
			}
			if i < len(r.stageTime) && r.stageTime[i] > 0 {
				st = append(st, fmt.Sprintf("%.2f", s.CPU/r.stageTime[i]))
				stErr = append(stErr, math.Abs(s.CPU/r.stageTime[i]-1))
			}
		}
		tpR, latR := r.measTP/r.predTP, r.measLat/r.predLat
		tpErr = append(tpErr, math.Abs(tpR-1))
		latErr = append(latErr, math.Abs(latR-1))
		cpuErr = append(cpuErr, math.Abs(r.cpuTP/r.predTP-1))
		speedup = append(speedup, r.measTP/r.wholeTP)
		fmt.Printf("| %s | %d → %d | %.0f | %.0f | %.2f | %s | %s | %.2f | %s | %.0f | %.2f× | %s | %s | %.0f | %.2f× | %.2f |\n", r.model, r.nodes, r.groups,
			r.predTP, r.measTP, tpR, ms(r.predLat), ms(r.measLat), latR, ms(r.loadedLat), r.wholeTP, r.measTP/r.wholeTP,
			strings.Join(ratios, " / "), strings.Join(st, " / "), r.cpuTP, r.wholeCPU*r.cpuTP, r.steal)
		cpuSpeedup = append(cpuSpeedup, r.wholeCPU*r.cpuTP)
	}
	fmt.Printf("\nMedian |error| over %d models: throughput %.1f%%, latency of a lone request %.1f%%, throughput from the stages' CPU times (1 / slowest) %.1f%%; median pipeline speed-up %.2f×.\n",
		len(tpErr), 100*stats.Median(tpErr), 100*stats.Median(latErr), 100*stats.Median(cpuErr), stats.Median(speedup))
	fmt.Printf("Median CPU-time speed-up (whole model's CPU time / slowest stage's): %.2f×.\n", stats.Median(cpuSpeedup))
	fmt.Printf("Per stage (%d): median |busy / plan − 1| %.1f%%, median |CPU time / calibrated StageTime − 1| %.1f%%.\n", len(busyErr), 100*stats.Median(busyErr), 100*stats.Median(stErr))
}

func ms(s float64) string { return fmt.Sprintf("%.2f ms", 1e3*s) }

// corpus lists the models of dirs, one per content (the shared corpus repeats the bundled
// ResNet-50), leaving out models with symbolic dimensions.
func corpus(dirs []string, only string) []string {
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		if n != "" {
			want[strings.TrimSuffix(n, ".onnx")] = true
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		ps, _ := filepath.Glob(filepath.Join(d, "*.onnx"))
		sort.Strings(ps)
		for _, p := range ps {
			base := strings.TrimSuffix(filepath.Base(p), ".onnx")
			if len(want) > 0 && !want[base] {
				continue
			}
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			h := sha256.Sum256(b)
			k := hex.EncodeToString(h[:])
			if seen[k] || strings.Contains(base, "dynbatch") {
				continue
			}
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

// one plans, writes and benches one model, and benches the whole model on one thread.
func one(ctx context.Context, path string, c *profile.Cluster, requests int, spin time.Duration, repeat int) row {
	r := row{model: strings.TrimSuffix(filepath.Base(path), ".onnx")}
	fail := func(err error) row { r.err = err.Error(); return r }
	m, err := ingest.Load(path, ingest.Options{})
	if err != nil {
		return fail(err)
	}
	r.nodes = len(m.Graph.Nodes)
	// As `onnxpart MODEL --devices cpu:2x1 --costs measured` does: the host devices
	// calibrated on this model's profile (on a copy of the cluster, which serves every model).
	cc := *c
	cc.Devices = make([]profile.Device, len(c.Devices))
	copy(cc.Devices, c.Devices) // Calibration.Apply copies the figure maps it writes
	h, err := ortmeasure.CalibrateHost(ctx, &cc, path, m.Graph, c.Devices[0].Threads)
	if err != nil {
		return fail(err)
	}
	measured := h.Measured
	res, err := onnxpart.Plan(ctx, m, &cc, onnxpart.Options{Measured: measured, Seed: 1, Reproducible: true, TimeLimit: time.Minute})
	if err != nil {
		return fail(err)
	}
	r.groups = res.CoarseNodes
	lay, err := onnxpart.Prepare(m, res, emit.Options{}, 1)
	if err != nil {
		return fail(err)
	}
	tmp, err := os.MkdirTemp("", "fidelity-pipeline-*")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "plan")
	if err := lay.WriteDir(dir); err != nil {
		return fail(err)
	}
	// The whole model as one stage, one thread, on the first device's CPU.
	whole := make([]int, len(m.Graph.Nodes))
	wdir := filepath.Join(tmp, "whole")
	if _, err := emit.Write(m, &emit.Assignment{Stage: whole, Split: emit.SplitInfo{Method: "stages", RequestedStages: 1}}, wdir, emit.Options{}); err != nil {
		return fail(err)
	}
	d0 := c.Devices[0]
	// The pipeline and the whole model in turn, repeat times; the best run of each is kept
	// (on a shared machine the best run is the least disturbed one).
	var rep, wrep *pipebench.Report
	for range max(repeat, 1) {
		p, err := pipebench.Run(ctx, dir, pipebench.Options{Requests: requests, Warmup: 12, ModelPath: path, Devices: pipebench.DevicesFrom(c), Spin: spin})
		if err != nil {
			return fail(err)
		}
		if rep == nil || p.Throughput.Measured > rep.Throughput.Measured {
			rep = p
		}
		w, err := pipebench.Run(ctx, wdir, pipebench.Options{Requests: requests, Warmup: 12, InFlight: 1, ModelPath: path, Spin: spin,
			Devices: []pipebench.Device{{Name: "cpu", Threads: max(d0.Threads, 1), CPUs: d0.CPUs}}})
		if err != nil {
			return fail(fmt.Errorf("whole model: %w", err))
		}
		if wrep == nil || w.Throughput.Measured > wrep.Throughput.Measured {
			wrep = w
		}
	}
	if rep.Throughput.Planned == nil || rep.LatencyVsPlan.Planned == nil {
		return fail(fmt.Errorf("the manifest has no prediction"))
	}
	r.predTP, r.measTP = *rep.Throughput.Planned, rep.Throughput.Measured
	r.predLat, r.measLat, r.loadedLat = *rep.LatencyVsPlan.Planned, rep.LatencyVsPlan.Measured, rep.Latency.P50
	r.stages = rep.StageTimes
	var wall, cpu, slowest float64
	for _, s := range rep.StageTimes {
		wall += s.Busy.Measured
		cpu += s.CPU
		slowest = math.Max(slowest, s.CPU)
	}
	if cpu > 0 {
		r.steal = wall / cpu
	}
	if slowest > 0 {
		r.cpuTP = 1 / slowest
	}
	// What the cost model's StageTime (the stage's nodes, its call's fixed cost, its boundary
	// bytes through the runtime's binding and layout conversions), calibrated on this model's
	// profile as `onnxpart profile --costs measured` does, predicts for each stage: the
	// plan's own stage time now, for every stage whose cuts a per-tensor cost prices exactly.
	cm := profile.NewCostModel(&cc, profile.CostOptions{Measured: measured})
	man := lay.Manifest
	for _, st := range man.Stages {
		var nodes []int
		for v, l := range res.Assignment.Stage {
			if l == st.Label {
				nodes = append(nodes, v)
			}
		}
		d := cc.Index(st.Device)
		if d < 0 {
			r.stageTime = append(r.stageTime, 0)
			continue
		}
		r.stageTime = append(r.stageTime, cm.StageTime(m.Graph, nodes, d))
	}
	r.wholeTP = wrep.Throughput.Measured
	if len(wrep.StageTimes) == 1 {
		r.wholeCPU = wrep.StageTimes[0].CPU
	}
	return r
}
