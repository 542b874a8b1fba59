// Command decoder measures how well package profile predicts the time of an LLM decoder on
// this machine's CPU (issue 32).
//
// What goes in: nothing but flags. It generates Llama-architecture decoders with package
// internal/llamagen (the Small preset, and 8 layers of width 512 with a vocabulary of 4000 in
// float32 and in float16), and for each a decode step (seq = 1) after 128 and after 1024
// cached positions and a prefill of 64 and of 256 tokens with an empty cache (past = 0).
//
// What comes out: a Markdown table on stdout, one row per model and phase: the whole-model
// time that package profile predicts for the host CPU device on one thread, as the main
// command prices a model (roofline costs, no calibration: the graph coarsened by the ort-cpu
// fusion rules, every group priced by CostModel.KernelTime, plus the device's run overhead),
// its measured time in ONNX Runtime (graph optimizations on, 1 intra-op thread), the error,
// and the predicted time split into terms by profile.KernelExplain's kinds (weight streaming
// and GEMMs of the projections, attention and KV-cache reads, elementwise and normalisation,
// data movement) and the fixed per-kernel and per-call overheads.
//
// Measured time is the median over runs of the calling thread's CPU time (hw.TimeCall,
// as bench/fidelity measures): with one intra-op thread ONNX Runtime computes on the calling
// thread, so this is the run's cost without the time other processes held the core. Inputs
// and outputs are bound once (ort.Session.Prepare): a run copies no tensor in Go, as a
// decoding loop that keeps its KV cache in place would not, and the prediction has no
// binding term either. Every row's session is open at once and the rows are timed
// round-robin, in blocks of consecutive calls (see measure), so that the load changes of a
// shared machine spread over all of them; a scan of 256 MiB between blocks reports the
// memory's read rate at the time, against the host microbenchmark's the predictions use.
//
// Flags: -micro first runs ortmeasure.MeasureKernels, the ONNX Runtime microbenchmarks behind
// the CPU defaults (GEMM and GEMV efficiency, one more kernel's cost in situ); -gpu prices
// TinyLlama-1.1B's decode step on catalog GPUs (no measurement); -trace profiles every phase
// in ONNX Runtime and prints its kernels per op type and the measured against predicted time
// per kernel kind (the profiler's cost per kernel is large next to a decoder's small kernels:
// for diagnosis only).
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/internal/stats"

	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/genaigen"
	"github.com/onnxpart/onnxpart/internal/llamagen"
	ortmeasure "github.com/onnxpart/onnxpart/internal/measure"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/profile"

	"github.com/x448/float16"
)

// phase is one call of a decoder: seq new tokens after past cached ones (batch 1).
type phase struct {
	name      string
	seq, past int64
}

var phases = []phase{
	{"decode", 1, 128},
	{"decode", 1, 1024},
	{"prefill", 64, 0},
	{"prefill", 256, 0},
}

// configs are the decoders: the Small preset, and a model of 8 layers of width 512 (8 heads
// over 2 KV heads, head_dim 64) with a vocabulary of 4000, in float32 and in float16.
func configs() []llamagen.Config {
	mid := llamagen.Config{Name: "llama-8x512", Layers: 8, Hidden: 512, Heads: 8, KVHeads: 2, Intermediate: 1408,
		Vocab: 4000, MaxPositions: 2048, DType: graph.Float, RMSEps: 1e-5, Seed: 1}
	mid16 := mid
	mid16.Name, mid16.DType = "llama-8x512-fp16", graph.Float16
	small := llamagen.Small
	small.MaxPositions = 2048
	return []llamagen.Config{small, mid, mid16}
}

// decoder is one generated model: its file, its inputs and outputs, and how to bind and feed
// a phase.
type decoder struct {
	name            string
	path            string
	inputs, outputs []string
	phases          []phase
	dims            func(phase) map[string]int64
	feeds           func(phase) (map[string]*ort.Tensor, map[string]ort.OutputHint)
}

// llamaDecoder is a llamagen model written to path.
func llamaDecoder(c llamagen.Config, path string) *decoder {
	return &decoder{name: c.Name, path: path, inputs: c.Inputs(), outputs: c.Outputs(), phases: phases, dims: dims,
		feeds: func(p phase) (map[string]*ort.Tensor, map[string]ort.OutputHint) { return feedsFor(c, p) }}
}

// row is one model and phase: its prediction, its session and its measured times.
type row struct {
	model      string
	ph         phase
	pred, meas float64
	runs       []float64
	terms      map[profile.KernelKind]float64
	overhead   float64
	kernels    int
	s          *ort.Session
	b          *ort.Bound
}

func main() {
	runs := flag.Int("runs", 100, "timed runs per model and phase (in blocks of 4 after 6 untimed calls, round-robin over every row)")
	only := flag.String("only", "", "comma list of model names (all by default)")
	micro := flag.Bool("micro", false, "run the ONNX Runtime kernel microbenchmarks behind the CPU defaults (ortmeasure.MeasureKernels) first")
	trace := flag.Bool("trace", false, "also profile every phase in ONNX Runtime and print its kernels per op type")
	gpu := flag.String("gpu", "", "also predict TinyLlama-1.1B's decode step (past=1024) on these catalog devices, e.g. a100-80g (no measurement: no GPU here)")
	gpuModel := flag.String("gpu-model", "", "with -gpu: the TinyLlama-1.1B model to use (default: generate it, 2 GiB, in the work directory)")
	set := flag.String("set", "llama", "the decoders: llama (plain-op exports, internal/llamagen), genai (the GenAI model builder's format, internal/genaigen: contrib ops, int4 MatMulNBits) or all")
	dir := flag.String("dir", "", "directory for the generated models (default: a temporary one, removed after)")
	flag.Parse()
	ctx := context.Background()
	if err := ort.Init(); err != nil {
		fail(err)
	}
	host, err := hw.ProbeHost(ctx, hw.HostOptions{})
	if err != nil {
		fail(err)
	}
	dev := hw.HostDevice(host, "cpu", 1)
	fmt.Printf("host: %s, %d logical CPUs; CPU device for 1 thread:\n", host.Model, host.Cores)
	for _, f := range []struct {
		name string
		f    profile.Figure
		u    profile.Unit
	}{{"fp32 peak", dev.Peak[profile.FP32], profile.FLOPRate}, {"bandwidth", dev.Bandwidth, profile.Rate},
		{"read bandwidth", dev.ReadBandwidth, profile.Rate}, {"cache", dev.Cache, profile.Bytes},
		{"cache bandwidth", dev.CacheBandwidth, profile.Rate}, {"launch", dev.Launch, profile.Seconds}} {
		fmt.Printf("  %-16s %-12s %-8s %s\n", f.name, profile.FormatQuantity(f.f.Value, f.u), f.f.Source, f.f.Note)
	}
	for _, f := range dev.Facts {
		if f.Key == "read sweep" {
			fmt.Printf("  read sweep: %s\n", f.Value)
		}
	}
	if *micro {
		kb, err := ortmeasure.MeasureKernels(ctx, 1, 50)
		if err != nil {
			fail(err)
		}
		peak := dev.Peak[profile.FP32].Value
		fmt.Printf("ONNX Runtime kernels, 1 thread (ortmeasure.MeasureKernels):\n")
		fmt.Printf("  GEMM 64×512·512×1408   %s = %.2f of the fp32 peak\n", profile.FormatQuantity(kb.GEMM64, profile.FLOPRate), kb.GEMM64/peak)
		fmt.Printf("  GEMM 256×512·512×1408  %s = %.2f of the fp32 peak\n", profile.FormatQuantity(kb.GEMM256, profile.FLOPRate), kb.GEMM256/peak)
		fmt.Printf("  GEMV over 184 MB       %s of weights, a scan of as many bytes %s: %.2f of it\n", profile.FormatQuantity(kb.GEMV, profile.Rate),
			profile.FormatQuantity(kb.Read, profile.Rate), kb.GEMV/kb.Read)
		fmt.Printf("  one more kernel in situ: view %s, shape arithmetic %s, elementwise %s\n", profile.FormatQuantity(kb.View, profile.Seconds),
			profile.FormatQuantity(kb.Shape, profile.Seconds), profile.FormatQuantity(kb.Elementwise, profile.Seconds))
	}
	cl := &profile.Cluster{Devices: []profile.Device{dev}, Links: [][]profile.Link{{{Kind: profile.LinkSelf}}}}
	cm := profile.NewCostModel(cl, profile.CostOptions{})
	rs, err := fusion.Builtin("ort-cpu")
	if err != nil {
		fail(err)
	}
	work := *dir
	if work == "" {
		if work, err = os.MkdirTemp("", "decoder-*"); err != nil {
			fail(err)
		}
		defer os.RemoveAll(work)
	}
	selected := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			selected[s] = true
		}
	}
	if *set != "llama" && *set != "genai" && *set != "all" {
		fail(fmt.Errorf("-set %q: want llama, genai or all", *set))
	}
	var decs []*decoder
	if *set != "genai" {
		for _, c := range configs() {
			if len(selected) > 0 && !selected[c.Name] {
				continue
			}
			path, err := llamagen.Write(work, c)
			if err != nil {
				fail(err)
			}
			decs = append(decs, llamaDecoder(c, path))
		}
	}
	if *set != "llama" {
		for _, c := range genaiConfigs() {
			if len(selected) > 0 && !selected[c.Name] {
				continue
			}
			sub := filepath.Join(work, c.Name) // genai_config.json beside each
			if err := os.MkdirAll(sub, 0o755); err != nil {
				fail(err)
			}
			path, err := genaigen.Write(sub, c)
			if err != nil {
				fail(err)
			}
			decs = append(decs, genaiDecoder(c, path))
		}
	}
	var rows []*row
	for _, d := range decs {
		for _, p := range d.phases {
			r, err := prepare(d, p, cm, rs)
			if err != nil {
				fail(fmt.Errorf("%s %s: %w", d.name, phaseName(p), err))
			}
			defer r.close()
			rows = append(rows, r)
		}
		if *trace {
			for _, p := range d.phases {
				if err := traceKernels(d, p, 10); err != nil {
					fail(err)
				}
				if err := attribute(ctx, d, p, cm, rs); err != nil {
					fail(err)
				}
			}
		}
	}
	if *gpu != "" {
		if err := predictGPU(ctx, *gpu, *gpuModel, work); err != nil {
			fail(err)
		}
		if len(rows) == 0 {
			return
		}
	}
	reads, err := measure(ctx, rows, *runs)
	if err != nil {
		fail(err)
	}
	report(rows)
	fmt.Printf("memory read rate while timing (a scan of 256 MiB between blocks): median %s, %s–%s; the host microbenchmark's: %s\n",
		profile.FormatQuantity(stats.Median(reads), profile.Rate), profile.FormatQuantity(minOf(reads), profile.Rate),
		profile.FormatQuantity(maxOf(reads), profile.Rate), profile.FormatQuantity(dev.ReadBandwidth.Value, profile.Rate))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "decoder:", err)
	os.Exit(1)
}

// dims binds the model's symbolic dimensions for a phase.
func dims(p phase) map[string]int64 {
	return map[string]int64{"batch": 1, "seq": p.seq, "past": p.past, "total": p.past + p.seq}
}

// predict is the whole-model time of g on the cost model's device 0 as the main command
// prices it (profile.CostModel.PriceGraph: the graph coarsened by rs, each group priced by
// KernelTime, plus the run overhead); with the terms of that time by kernel kind.
func predict(g *graph.Graph, cm *profile.CostModel, rs *fusion.RuleSet) (total float64, terms map[profile.KernelKind]float64, overhead float64, kernels int, err error) {
	// The total is the one cost path's (PriceGraph: what the planner charges a one-stage
	// plan, and what `onnxpart profile` prints); the terms split it by kernel kind.
	pr, err := cm.PriceGraph(g, rs, 0)
	if err != nil {
		return 0, nil, 0, 0, err
	}
	co, err := fusion.Coarsen(g, rs)
	if err != nil {
		return 0, nil, 0, 0, err
	}
	terms = map[profile.KernelKind]float64{}
	sum := 0.0
	co.Times(func(_ int, members []int, kernel *graph.Node) float64 {
		b := cm.KernelExplain(g, members, kernel, 0)
		if b.Time > 0 {
			kernels++
		}
		terms[b.Kind] += b.Time - b.Overhead
		overhead += b.Overhead
		sum += b.Time
		return b.Time
	}, nil)
	if math.Abs(sum-pr.Compute) > 1e-9*pr.Compute {
		return 0, nil, 0, 0, fmt.Errorf("the kernels' terms sum to %g s, PriceGraph's compute is %g s", sum, pr.Compute)
	}
	return pr.Total(), terms, overhead + pr.Call, kernels, nil
}

// Calls per block of the round-robin (see measure).
const (
	warmCalls  = 6
	timedCalls = 4
)

// prepare predicts a phase of a model and opens its ONNX Runtime session, inputs and outputs
// bound once.
func prepare(d *decoder, p phase, cm *profile.CostModel, rs *fusion.RuleSet) (*row, error) {
	m, err := ingest.Load(d.path, ingest.Options{Dims: d.dims(p)})
	if err != nil {
		return nil, err
	}
	pred, terms, over, k, err := predict(m.Graph, cm, rs)
	if err != nil {
		return nil, err
	}
	r := &row{model: d.name, ph: p, pred: pred, terms: terms, overhead: over, kernels: k}
	s, err := ort.NewSession(d.path, d.inputs, d.outputs, ort.Options{Optimize: true, Threads: 1})
	if err != nil {
		return nil, err
	}
	feeds, hints := d.feeds(p)
	b, err := s.Prepare(feeds, hints)
	if err != nil {
		s.Close()
		return nil, err
	}
	r.s, r.b = s, b
	return r, nil
}

func (r *row) close() {
	r.b.Close()
	r.s.Close()
}

// measure times every row: round-robin over all of them (every model and phase), in blocks:
// a row's session is called warmCalls times untimed, then timedCalls times timed,
// consecutively. That is the steady state of a decoding loop, which calls the same session
// token after token: after other sessions ran, the weights of a model that fits in the cache
// take several calls to settle there again (llama-small's decode step took 1.2 ms on the first
// call, 0.84 on the second, 0.5 from the fifth on, on the machine of
// docs/benchmarks-decoder.md). The round-robin spreads load changes of a shared machine over
// every row alike. Between blocks, a scan of 256 MiB gives the memory's read rate at the time
// (returned, one per block).
func measure(ctx context.Context, rows []*row, runs int) ([]float64, error) {
	buf := make([]byte, 256<<20)
	for i := range buf {
		buf[i] = 1
	}
	var reads []float64
	for range (runs + timedCalls - 1) / timedCalls {
		for _, r := range rows {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			_, c, _ := hw.TimeCall(func() error {
				if bytes.IndexByte(buf, 0) >= 0 {
					return fmt.Errorf("scan buffer holds a zero")
				}
				return nil
			})
			reads = append(reads, float64(len(buf))/c)
			for range warmCalls {
				if err := r.b.Run(); err != nil {
					return nil, fmt.Errorf("%s %s: %w", r.model, phaseName(r.ph), err)
				}
			}
			for range timedCalls {
				_, cpu, err := hw.TimeCall(r.b.Run)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", r.model, phaseName(r.ph), err)
				}
				r.runs = append(r.runs, cpu)
			}
		}
	}
	for _, r := range rows {
		r.meas = stats.Median(r.runs)
	}
	return reads, nil
}

// feedsFor makes the inputs of a phase: random token ids, positions past … past+seq−1, a
// mask of ones and a random KV cache of past positions; and the output shapes.
func feedsFor(c llamagen.Config, p phase) (map[string]*ort.Tensor, map[string]ort.OutputHint) {
	rng := rand.New(rand.NewSource(p.seq*7919 + p.past))
	total := p.past + p.seq
	ids := make([]int64, p.seq)
	pos := make([]int64, p.seq)
	for i := range ids {
		ids[i] = rng.Int63n(int64(c.Vocab))
		pos[i] = p.past + int64(i)
	}
	mask := make([]int64, total)
	for i := range mask {
		mask[i] = 1
	}
	feeds := map[string]*ort.Tensor{
		"input_ids":      int64s(ids, 1, p.seq),
		"position_ids":   int64s(pos, 1, p.seq),
		"attention_mask": int64s(mask, 1, total),
	}
	hints := map[string]ort.OutputHint{"logits": {DType: graph.Float, Shape: []int64{1, p.seq, int64(c.Vocab)}}}
	kv := []int64{1, int64(c.KVHeads), p.past, int64(c.HeadDim())}
	kvTotal := []int64{1, int64(c.KVHeads), total, int64(c.HeadDim())}
	for i := range c.Layers {
		feeds[llamagen.PastKey(i)] = randomKV(rng, c.DType, kv)
		feeds[llamagen.PastValue(i)] = randomKV(rng, c.DType, kv)
		hints[llamagen.PresentKey(i)] = ort.OutputHint{DType: c.DType, Shape: kvTotal}
		hints[llamagen.PresentValue(i)] = ort.OutputHint{DType: c.DType, Shape: kvTotal}
	}
	return feeds, hints
}

func int64s(v []int64, shape ...int64) *ort.Tensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return &ort.Tensor{DType: graph.Int64, Shape: shape, Data: b}
}

// randomKV is a cache tensor of values in [-1, 1) (float32 or float16).
func randomKV(rng *rand.Rand, dt graph.DType, shape []int64) *ort.Tensor {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	size := int64(dt.Bits() / 8)
	b := make([]byte, n*size)
	for i := range n {
		x := float32(rng.Float64()*2 - 1)
		if dt == graph.Float16 {
			binary.LittleEndian.PutUint16(b[2*i:], float16.Fromfloat32(x).Bits())
		} else {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
	}
	return &ort.Tensor{DType: dt, Shape: shape, Data: b}
}

func phaseName(p phase) string {
	if p.name == "decode" {
		return fmt.Sprintf("decode past=%d", p.past)
	}
	return fmt.Sprintf("prefill seq=%d", p.seq)
}

func ms(s float64) string { return strconv.FormatFloat(s*1e3, 'f', 2, 64) }

// report prints the table in Markdown.
func report(rows []*row) {
	kinds := profile.KernelKinds()
	fmt.Print("\n| model | phase | predicted ms | measured ms (p25–p75) | error |")
	for _, k := range kinds {
		if k != profile.KindOther {
			fmt.Printf(" %s |", k)
		}
	}
	fmt.Println(" overheads | kernels |")
	fmt.Print("| --- | --- | ---: | ---: | ---: |")
	for _, k := range kinds {
		if k != profile.KindOther {
			fmt.Print(" ---: |")
		}
	}
	fmt.Println(" ---: | ---: |")
	var errs []float64
	within := 0
	for _, r := range rows {
		e := r.pred/r.meas - 1
		errs = append(errs, math.Abs(e))
		if math.Abs(e) <= 0.2 {
			within++
		}
		fmt.Printf("| %s | %s | %s | %s (%s–%s) | %+.0f%% |", r.model, phaseName(r.ph), ms(r.pred), ms(r.meas),
			ms(quantile(r.runs, 0.25)), ms(quantile(r.runs, 0.75)), e*100)
		for _, k := range kinds {
			if k != profile.KindOther {
				fmt.Printf(" %s |", ms(r.terms[k]))
			}
		}
		fmt.Printf(" %s | %d |\n", ms(r.overhead), r.kernels)
	}
	fmt.Printf("\n%d/%d rows within 20%%; median |error| %.1f%%, max %.1f%%\n", within, len(rows), stats.Median(errs)*100, maxOf(errs)*100)
}

// quantile is the q-quantile of v (nearest rank).
func quantile(v []float64, q float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return math.NaN()
	}
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func minOf(v []float64) float64 {
	m := math.Inf(1)
	for _, x := range v {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

// traceKernels runs a phase under ONNX Runtime's profiler and prints, per kernel op type of
// the graph ORT ran, the kernels per run and their median time per run (sum of durations and
// the gaps before them).
func traceKernels(d *decoder, p phase, runs int) error {
	dir, err := os.MkdirTemp("", "decoder-trace-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	prefix := filepath.Join(dir, "trace")
	s, err := ort.NewSession(d.path, d.inputs, d.outputs, ort.Options{Optimize: true, Threads: 1, ProfilePrefix: prefix})
	if err != nil {
		return err
	}
	feeds, hints := d.feeds(p)
	b, err := s.Prepare(feeds, hints)
	if err != nil {
		s.Close()
		return err
	}
	for range 3 + runs {
		if err := b.Run(); err != nil {
			b.Close()
			s.Close()
			return err
		}
	}
	b.Close()
	s.Close()
	traces, _ := filepath.Glob(prefix + "*.json")
	if len(traces) != 1 {
		return fmt.Errorf("%d traces", len(traces))
	}
	f, err := os.Open(traces[0])
	if err != nil {
		return err
	}
	prof, err := ortmeasure.ParseORTProfile(f)
	f.Close()
	if err != nil {
		return err
	}
	type agg struct {
		n     int
		times []float64
		gaps  []float64
	}
	by := map[string]*agg{}
	rs := prof.Runs[len(prof.Runs)-runs:]
	for _, r := range rs {
		per := map[string][2]float64{}
		cnt := map[string]int{}
		for _, k := range r.Kernels {
			x := per[k.Op]
			x[0] += k.Dur
			x[1] += k.Gap
			per[k.Op] = x
			cnt[k.Op]++
		}
		for op, x := range per {
			a := by[op]
			if a == nil {
				a = &agg{}
				by[op] = a
			}
			a.n = cnt[op]
			a.times = append(a.times, x[0])
			a.gaps = append(a.gaps, x[1])
		}
	}
	var ops []string
	for op := range by {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return stats.Median(by[ops[i]].times) > stats.Median(by[ops[j]].times) })
	fmt.Printf("\n%s %s: ORT kernels per run (median over %d profiled runs)\n", d.name, phaseName(p), runs)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tkernels\tdur ms\tgaps ms\tper kernel µs\t")
	var tot float64
	for _, op := range ops {
		a := by[op]
		d := stats.Median(a.times)
		tot += d + stats.Median(a.gaps)
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.1f\t\n", op, a.n, d*1e3, stats.Median(a.gaps)*1e3, d/float64(a.n)*1e6)
	}
	fmt.Fprintf(tw, "total\t\t%.3f\t\t\t\n", tot*1e3)
	tw.Flush()
	return nil
}

// attribute profiles a phase with ortmeasure.MeasureORT (kernel times attributed to the original
// nodes, the profiler's own cost taken off) and prints, per kernel kind of the coarse graph,
// the measured and the predicted time.
func attribute(ctx context.Context, d *decoder, p phase, cm *profile.CostModel, rs *fusion.RuleSet) error {
	m, err := ingest.Load(d.path, ingest.Options{Dims: d.dims(p)})
	if err != nil {
		return err
	}
	g := m.Graph
	feeds, _ := d.feeds(p)
	meas, err := ortmeasure.MeasureORT(ctx, d.path, g, ortmeasure.MeasureOptions{Threads: 1, Runs: 20, Feeds: feeds})
	if err != nil {
		return err
	}
	co, err := fusion.Coarsen(g, rs)
	if err != nil {
		return err
	}
	type agg struct {
		n          int
		meas, pred float64
	}
	by := map[profile.KernelKind]*agg{}
	nt := meas.NodeTimes()
	mt := co.Times(nil, fusion.MeasuredShares(nt))
	for i := range co.Groups {
		members := co.Members(i)
		b := cm.KernelExplain(g, members, &co.Graph.Nodes[i], 0)
		a := by[b.Kind]
		if a == nil {
			a = &agg{}
			by[b.Kind] = a
		}
		a.n++
		a.meas += mt[i]
		a.pred += b.Time
	}
	fmt.Printf("%s %s: call %s ms (fixed %s ms), kernels %s ms, %d ORT kernels, executor %.2f µs per kernel\n", d.name, phaseName(p), ms(meas.Call), ms(meas.Overhead), ms(meas.NodeSum), meas.Optimized, meas.KernelOverhead*1e6)
	for _, k := range profile.KernelKinds() {
		if a := by[k]; a != nil {
			fmt.Printf("  %-12s %4d groups: measured %s ms, predicted %s ms\n", k, a.n, ms(a.meas), ms(a.pred))
		}
	}
	return nil
}

// predictGPU prints TinyLlama-1.1B's predicted decode step (one token after 1024) on each
// catalog device of spec: unfused (every node priced alone, as `onnxpart profile` does) and
// coarsened by the ort-cuda and tensorrt rule sets (as `onnxpart plan` prices a stage), with
// the terms, against the weight-streaming floor (weight bytes / the device's bandwidth).
func predictGPU(ctx context.Context, spec, path, work string) error {
	c := llamagen.TinyLlama1B
	if path == "" {
		var err error
		if path, err = llamagen.Write(work, c); err != nil {
			return err
		}
		defer os.Remove(path)
		defer os.Remove(path + ".data")
	}
	p := phase{"decode", 1, 1024}
	m, err := ingest.Load(path, ingest.Options{Dims: dims(p)})
	if err != nil {
		return err
	}
	g := m.Graph
	cl, err := hw.Resolve(ctx, spec, hw.Options{Host: hw.HostOptions{NoBench: true}})
	if err != nil {
		return err
	}
	cm := profile.NewCostModel(cl, profile.CostOptions{})
	weights := float64(c.WeightBytes())
	fmt.Printf("\n%s, decode step after 1024 tokens: %d nodes, %s of weights\n", c.Name, len(g.Nodes), profile.FormatQuantity(weights, profile.Bytes))
	kinds := profile.KernelKinds()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "device\tpriced as\tkernels\tpredicted ms\tfloor ms\t")
	for _, k := range kinds {
		fmt.Fprintf(tw, "%s\t", k)
	}
	fmt.Fprintln(tw, "overheads\t")
	for d := range cl.Devices {
		dev := &cl.Devices[d]
		floor := weights / dev.Bandwidth.Value
		// Every node alone.
		terms := map[profile.KernelKind]float64{}
		var total, over float64
		k := 0
		for v := range g.Nodes {
			b := cm.Explain(g, v, d)
			if b.Time > 0 {
				k++
			}
			kb := cm.KernelExplain(g, []int{v}, &g.Nodes[v], d)
			terms[kb.Kind] += b.Time - b.Overhead
			over += b.Overhead
			total += b.Time
		}
		total += dev.RunOverhead.Value
		over += dev.RunOverhead.Value
		row := func(how string, k int, total float64, terms map[profile.KernelKind]float64, over float64) {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t", dev.Name+" ("+dev.Catalog+")", how, k, ms(total), ms(floor))
			for _, kind := range kinds {
				fmt.Fprintf(tw, "%s\t", ms(terms[kind]))
			}
			fmt.Fprintf(tw, "%s\t\n", ms(over))
		}
		row("every node", k, total, terms, over)
		for _, rules := range []string{"ort-cuda", "tensorrt"} {
			rs, err := fusion.Builtin(rules)
			if err != nil {
				return err
			}
			one := profile.NewCostModel(&profile.Cluster{Devices: []profile.Device{*dev}, Links: [][]profile.Link{{{Kind: profile.LinkSelf}}}}, profile.CostOptions{})
			total, terms, over, k, err := predict(g, one, rs)
			if err != nil {
				return err
			}
			row(rules+" groups", k, total, terms, over)
		}
	}
	tw.Flush()
	return nil
}
