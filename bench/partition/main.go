// Command bench measures the partition package and prints the tables of issue 6:
//
//	dnn      every dnn-partitioning instance and k of the benchmark README, without and with
//	         the file's CPU: our objective against their DP optimum, the certified lower
//	         bound, the gap and the time;
//	regal    REGAL-like graphs (seed 000 §C.2): seed 000 Table 3's layout, geometric means of
//	         lower bound / best plan per k for each bound of the MIP hierarchy;
//	onnx     the shared ONNX corpus through package ingest: plan, bound, gap, and the ratio of
//	         each baseline's bottleneck to ours;
//	scaling  SliceGraph time and memory on layered DAGs with 1k–50k nodes, and BRKGA
//	         evaluations per second.
//
// Usage: go run ./bench/partition [-tables dnn,regal,onnx,scaling] [flags]
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/internal/stats"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/milp"
	"github.com/onnxpart/onnxpart/internal/planner"
	"github.com/onnxpart/onnxpart/partition"
	"github.com/onnxpart/onnxpart/partition/instances"
	"github.com/onnxpart/onnxpart/profile"
)

func main() {
	tables := flag.String("tables", "dnn,regal,onnx,scaling", "comma-separated tables to print")
	dnnDir := flag.String("dnn-dir", "../shared/benchmarks/dnn-partitioning", "dnn-partitioning benchmark directory")
	dnnTime := flag.Duration("dnn-time", 10*time.Second, "time limit per dnn-partitioning solve")
	regalGraphs := flag.Int("regal-graphs", 50, "number of REGAL-like graphs (seeds from..from+N-1)")
	regalFrom := flag.Int("regal-from", 0, "first REGAL-like graph seed (to run the table in parts; the per-instance lines on stderr carry every ratio)")
	regalKs := flag.String("regal-ks", "2,4,8,16,32,64", "k values for the REGAL table")
	regalBound := flag.Duration("regal-bound-time", 60*time.Second, "bound time per REGAL instance (wall, 2 MIPs at a time)")
	regalExactPar := flag.Int("regal-exact-par", 1, "MIPs the exact bound may run at a time (2: the warm-started MIP beside the probes; the table's layout gives it one core)")
	regalPolish := flag.String("regal-polish", "", "window polish of the REGAL plans as W,N: windows of up to W stages, N branch-and-bound nodes per sub-MIP (default: Solve's 4,300)")
	modelsDir := flag.String("models", "../shared/models", "ONNX corpus directory")
	onnxTime := flag.Duration("onnx-time", 20*time.Second, "time limit per ONNX solve")
	scalingNs := flag.String("scaling-ns", "1000,10000,50000", "node counts for the scaling table")
	seed := flag.Int64("seed", 1, "seed for every solve")
	flag.Parse()
	milp.SetThreads(1)
	fmt.Printf("# partition benchmarks — %s, GOMAXPROCS=%d, %s\n\n", runtime.Version(), runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339))
	for _, t := range strings.Split(*tables, ",") {
		switch strings.TrimSpace(t) {
		case "dnn":
			dnnTable(*dnnDir, *dnnTime, *seed)
		case "regal":
			var po partition.PolishOptions
			if *regalPolish != "" {
				if w := ints(*regalPolish); len(w) == 2 && w[0] >= 2 && w[1] > 0 {
					po = partition.PolishOptions{MaxWindow: w[0], MaxNodes: w[1]}
				} else {
					fmt.Fprintln(os.Stderr, "-regal-polish wants W,N with W ≥ 2 stages and N > 0 nodes")
					os.Exit(2)
				}
			}
			regalTable(*regalFrom, *regalGraphs, ints(*regalKs), *regalBound, *regalExactPar, po, *seed)
		case "onnx":
			onnxTable(*modelsDir, *onnxTime, *seed)
		case "scaling":
			scalingTable(ints(*scalingNs), *seed)
		case "":
		default:
			fmt.Fprintf(os.Stderr, "unknown table %q\n", t)
			os.Exit(2)
		}
	}
}

// polishNote describes a polish effort other than Solve's default.
func polishNote(po partition.PolishOptions) string {
	if po == (partition.PolishOptions{}) {
		return ""
	}
	return fmt.Sprintf("; windows of up to %d stages, %d branch-and-bound nodes per sub-MIP", po.MaxWindow, po.MaxNodes)
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// cpuSeconds is the process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscallRusage
	getrusage(&ru)
	return ru.seconds()
}

// --- dnn-partitioning -------------------------------------------------------------------

func dnnTable(dir string, limit time.Duration, seed int64) {
	fmt.Printf("## dnn-partitioning (Tarnawski et al.): objective vs their DP optimum, %v limit per solve\n\n", limit)
	fmt.Println("Options: Gap 0 (the search runs on), BoundGap 0.01, Restarts −1; `first opt` is when the plan first reached the optimum.")
	fmt.Println()
	fmt.Println("| instance | k | CPU | optimum | ours | match | lower bound | method | gap | first opt s | wall s | cpu s |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	all, ok := 0, 0
	for _, r := range instances.DNNReferences {
		for _, cpus := range []int{0, 1} {
			d, err := instances.LoadDNN(filepath.Join(dir, r.Instance), r.K, cpus)
			if err != nil {
				fmt.Printf("| %s | %d | %d | load error: %v |\n", r.Instance, r.K, cpus, err)
				continue
			}
			ref := r.NoCPU
			if cpus > 0 {
				ref = r.WithCPU
			}
			var first float64 = -1
			var mu sync.Mutex
			opts := partition.Options{Seed: seed, TimeLimit: limit, Restarts: -1, BoundGap: 0.01,
				Progress: func(pr partition.Progress) {
					mu.Lock()
					if first < 0 && instances.MatchesReference(pr.Objective, ref) {
						first = pr.Elapsed.Seconds()
					}
					mu.Unlock()
				}}
			c0 := cpuSeconds()
			t0 := time.Now()
			pl, err := partition.Solve(context.Background(), d.Problem, opts)
			wall := time.Since(t0).Seconds()
			cpu := cpuSeconds() - c0
			if err != nil {
				fmt.Printf("| %s | %d | %d | solve error: %v |\n", r.Instance, r.K, cpus, err)
				continue
			}
			match := instances.MatchesReference(pl.Objective, ref)
			all++
			if match && pl.Gap <= 0.01 && wall <= limit.Seconds()+0.5 {
				ok++
			}
			fmt.Printf("| %s | %d | %d | %.9g | %.9g | %v | %.9g | %s | %.2g | %.2f | %.2f | %.2f |\n",
				strings.TrimSuffix(r.Instance, "_inference.json"), r.K, cpus, ref, pl.Objective, yes(match), pl.LowerBound, pl.BoundMethod, pl.Gap, first, wall, cpu)
		}
	}
	fmt.Printf("\n%d of %d cells: objective = optimum (9 printed digits), gap ≤ 1%%, within the limit.\n\n", ok, all)
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "**no**"
}

// --- REGAL-like --------------------------------------------------------------------------

type regalRow struct {
	name   string
	ratios map[int][]float64
}

func regalTable(from, graphs int, ks []int, budget time.Duration, exactPar int, po partition.PolishOptions, seed int64) {
	fmt.Printf("## REGAL-like graphs (seed 000 §C.2): geometric mean of lower bound / best plan, %d graphs (seeds %d–%d)\n\n", graphs, from, from+graphs-1)
	fmt.Printf("Bound time per instance: %v wall on 2 cores — the exact bound with %d MIP(s) at a time; bottleneck (¼), bottleneck-guess (¼) and the superblock bound (what the two leave, at least ½) beside it; HiGHS 1.10, one thread per MIP. The best plan is BRKGA-10000 + refinement + window polish (lns.go%s), improved by any plan a MIP finds.\n\n", budget, exactPar, polishNote(po))
	rows := []string{"simple (Lemma 3.3)", "bottleneck", "bottleneck-guess", "exact", "comm-aware (ours)", "superblock (ours)", "best of all"}
	ratio := map[string]map[int][]float64{}
	for _, r := range rows {
		ratio[r] = map[int][]float64{}
	}
	solvedExact := map[int]int{}
	certified := map[int]int{}
	heurGap := map[int][]float64{}
	t0 := time.Now()
	for g := from; g < from+graphs; g++ {
		for _, k := range ks {
			p := instances.Regal(int64(g), k, instances.RegalOptions{})
			pl, err := partition.Solve(context.Background(), p, partition.Options{Seed: seed, Bounds: partition.BoundsSimple, Polish: po})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				continue
			}
			ub := pl.Objective
			comb := map[string]float64{}
			for _, b := range pl.Bounds {
				comb[b.Method] = b.Value
			}
			ours := math.Max(comb[partition.BoundNode], math.Max(comb[partition.BoundMinBlock], comb[partition.BoundCut]))
			var exact, bott, guess, super partition.BoundInfo
			var wg sync.WaitGroup
			var mu sync.Mutex
			better := func(b *partition.Plan) {
				if b != nil {
					mu.Lock()
					if b.Objective < ub {
						ub = b.Objective
					}
					mu.Unlock()
				}
			}
			wg.Add(2)
			go func() {
				defer wg.Done()
				info, b, _ := partition.LowerBound(context.Background(), p, pl, partition.BoundExact, partition.BoundOptions{TimeLimit: budget, Parallel: exactPar})
				exact = info
				better(b)
			}()
			go func() {
				defer wg.Done()
				chain := time.Now()
				info, b, _ := partition.LowerBound(context.Background(), p, pl, partition.BoundBottleneck, partition.BoundOptions{TimeLimit: budget / 4})
				bott = info
				better(b)
				info, b, _ = partition.LowerBound(context.Background(), p, pl, partition.BoundBottleneckGuess, partition.BoundOptions{TimeLimit: budget / 4, Parallel: 1})
				guess = info
				better(b)
				// The superblock bound gets what the other two leave of the budget (at least half).
				info, b, _ = partition.LowerBound(context.Background(), p, pl, partition.BoundSuperblock, partition.BoundOptions{TimeLimit: max(budget-time.Since(chain), budget/2)})
				super = info
				better(b)
			}()
			wg.Wait()
			simple := comb[partition.BoundSimple]
			// "Best available" down the paper's hierarchy, as in Table 3.
			b1 := simple
			b2 := math.Max(b1, bott.Value)
			b3 := math.Max(b2, guess.Value)
			b4 := math.Max(b3, exact.Value)
			best := math.Max(math.Max(b4, ours), super.Value)
			for name, v := range map[string]float64{rows[0]: b1, rows[1]: b2, rows[2]: b3, rows[3]: b4, rows[4]: math.Max(simple, ours),
				rows[5]: math.Max(simple, super.Value), rows[6]: best} {
				ratio[name][k] = append(ratio[name][k], math.Min(1, v/ub))
			}
			if exact.Status == "optimal" {
				solvedExact[k]++
			}
			if best >= ub*(1-1e-9) {
				certified[k]++
			}
			heurGap[k] = append(heurGap[k], pl.Objective/ub)
			fmt.Fprintf(os.Stderr, "%s k=%d ub=%.1f (brkga %.1f) simple=%.4f bott=%.4f(%s) guess=%.4f(%s) exact=%.4f(%s) ours=%.4f super=%.4f(%s) [%.0fs]\n",
				p.Name, k, ub, pl.Objective, simple/ub, bott.Value/ub, bott.Status, guess.Value/ub, guess.Status, exact.Value/ub, exact.Status, ours/ub, super.Value/ub, super.Status, time.Since(t0).Seconds())
		}
	}
	fmt.Print("| lower bound |")
	for _, k := range ks {
		fmt.Printf(" k=%d |", k)
	}
	fmt.Print("\n|---|")
	for range ks {
		fmt.Print("---|")
	}
	fmt.Println()
	for _, r := range rows {
		fmt.Printf("| %s |", r)
		for _, k := range ks {
			fmt.Printf(" %.4f |", stats.GeoMean(ratio[r][k]))
		}
		fmt.Println()
	}
	fmt.Print("| seed 000 Table 3, exact |")
	paper := map[int]float64{2: 0.9804, 4: 0.9579, 8: 0.9407, 16: 0.8929, 32: 0.5910, 64: 0.3810}
	for _, k := range ks {
		fmt.Printf(" %.4f |", paper[k])
	}
	fmt.Print("\n| exact MIP proved optimal |")
	for _, k := range ks {
		fmt.Printf(" %d/%d |", solvedExact[k], len(ratio[rows[0]][k]))
	}
	fmt.Print("\n| certified optimal (best of all) |")
	for _, k := range ks {
		fmt.Printf(" %d/%d |", certified[k], len(ratio[rows[0]][k]))
	}
	fmt.Print("\n| Solve plan (BRKGA+refine+polish) / best plan |")
	for _, k := range ks {
		fmt.Printf(" %.4f |", stats.GeoMean(heurGap[k]))
	}
	fmt.Printf("\n\nTotal %.0f s.\n\n", time.Since(t0).Seconds())
}

// --- ONNX corpus -------------------------------------------------------------------------

func onnxTable(dir string, limit time.Duration, seed int64) {
	fmt.Printf("## ONNX corpus (%s): plan, bound, gap, baseline bottleneck / ours, %v limit per solve\n\n", dir, limit)
	fmt.Println("Costs: roofline work = max(FLOPs / 1 TFLOP/s, bytes / 100 GB/s), link B = 10 GB/s, activation bytes from ingest; bounds fast, BoundGap 0.01.")
	fmt.Println("Problems are the planner's own (internal/planner.PipelineProblem) on k A100-80GB: memory per node is its weights and state, capped at the device's capacity less its reserve.")
	fmt.Println()
	cl, err := devices.Resolve(context.Background(), "8xA100-80G", devices.Options{})
	if err != nil {
		fmt.Printf("not run: %v\n\n", err)
		return
	}
	fmt.Println("| model | nodes | k | ours (ms) | lower bound (ms) | method | gap | uniform | parameters | time | pipedream | s |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	files, _ := filepath.Glob(filepath.Join(dir, "*.onnx"))
	sort.Strings(files)
	for _, f := range files {
		opt := ingest.Options{}
		if strings.Contains(f, "dynbatch") {
			opt.Dims = map[string]int64{"batch": 1}
		}
		m, err := ingest.Load(f, opt)
		if err != nil {
			fmt.Printf("| %s | ingest error: %v |\n", filepath.Base(f), err)
			continue
		}
		for _, k := range []int{2, 4, 8} {
			p, err := rooflineProblem(m.Graph, cl, k)
			if err != nil {
				fmt.Printf("| %s | %d | %v |\n", filepath.Base(f), k, err)
				continue
			}
			t0 := time.Now()
			pl, err := partition.Solve(context.Background(), p, partition.Options{Seed: seed, TimeLimit: limit, BoundGap: 0.01})
			if err != nil {
				fmt.Printf("| %s | %d | %v |\n", filepath.Base(f), k, err)
				continue
			}
			wall := time.Since(t0).Seconds()
			fmt.Printf("| %s | %d | %d | %.4f | %.4f | %s | %.3f |", strings.TrimSuffix(filepath.Base(f), ".onnx"), len(m.Graph.Nodes), k,
				pl.Objective*1e3, pl.LowerBound*1e3, pl.BoundMethod, pl.Gap)
			for _, b := range partition.Baselines {
				bp, err := partition.Baseline(p, b)
				if err != nil {
					fmt.Print(" – |")
					continue
				}
				fmt.Printf(" %.2f |", bp.Objective/pl.Objective)
			}
			fmt.Printf(" %.1f |\n", wall)
		}
	}
	fmt.Println()
}

// rooflineProblem is the planner's pipeline problem of g on the first k devices of c, priced
// by the table's roofline: work = max(FLOPs / 1 TFLOP/s, (input + param + output bytes) /
// 100 GB/s) on every device, links of 10 GB/s with no latency, no call costs.
func rooflineProblem(g *graph.Graph, c *profile.Cluster, k int) (*partition.Problem, error) {
	n := len(c.Devices)
	work := make([]float64, len(g.Nodes))
	for v := range g.Nodes {
		nd := &g.Nodes[v]
		bytes := float64(max(nd.InputBytes, 0) + max(nd.ParamBytes, 0) + max(nd.OutputBytes, 0))
		work[v] = math.Max(float64(max(nd.FLOPs, 0))/1e12, bytes/1e11)
	}
	pr := planner.Prices{Times: make([][]float64, n), Table: &profile.CostTable{Bandwidth: make([][]float64, n), Latency: make([][]float64, n), RunOverhead: make([]float64, n)}}
	for i := range n {
		pr.Times[i] = work
		pr.Table.Bandwidth[i] = make([]float64, n)
		pr.Table.Latency[i] = make([]float64, n)
		for j := range n {
			pr.Table.Bandwidth[i][j] = 1e10
		}
		pr.Table.Bandwidth[i][i] = math.Inf(1)
	}
	devs := make([]int, k)
	for i := range devs {
		devs[i] = i
	}
	return planner.PipelineProblem(g, c, pr, devs, k)
}

// --- scaling -----------------------------------------------------------------------------

func scalingTable(ns []int, seed int64) {
	fmt.Println("## Scaling: layered DAGs (width 32), k = 16")
	fmt.Println()
	fmt.Println("| nodes | tensors | SliceGraph wall s | SliceGraph cpu s | heap peak MB | allocated MB | BRKGA evals/s (pop 20) |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, n := range ns {
		p := instances.Layered(seed, n, 32, 16)
		runtime.GC()
		var m0 runtime.MemStats
		runtime.ReadMemStats(&m0)
		stop := make(chan struct{})
		peak := make(chan uint64)
		go func() {
			var mx uint64
			var ms runtime.MemStats
			tk := time.NewTicker(5 * time.Millisecond)
			defer tk.Stop()
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > mx {
					mx = ms.HeapAlloc
				}
				select {
				case <-stop:
					peak <- mx
					return
				case <-tk.C:
				}
			}
		}()
		c0 := cpuSeconds()
		t0 := time.Now()
		_, _, _, err := partition.SliceGraph(p, nil)
		el := time.Since(t0).Seconds()
		cpu := cpuSeconds() - c0
		close(stop)
		pk := <-peak
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		if err != nil {
			fmt.Printf("| %d | error %v |\n", n, err)
			continue
		}
		// BRKGA throughput: a short run, no bounds, no refinement, no polish.
		gens := 3
		if n >= 50000 {
			gens = 2
		}
		t1 := time.Now()
		pl, err := partition.Solve(context.Background(), p, partition.Options{Seed: seed, Bounds: partition.BoundsNone, NoRefine: true, NoPolish: true,
			BRKGA: partition.BRKGAOptions{Population: 20, Generations: gens}})
		rate := math.NaN()
		if err == nil {
			rate = float64(pl.Evaluations) / time.Since(t1).Seconds()
		}
		fmt.Printf("| %d | %d | %.3f | %.3f | %.1f | %.1f | %.1f |\n", n, len(p.Tensors), el, cpu, float64(pk)/1e6, float64(m1.TotalAlloc-m0.TotalAlloc)/1e6, rate)
	}
	fmt.Println()
}
