// Command bench measures package schedule on the benchmarks of issue 7 and prints Markdown
// tables:
//
//   - moirai: Moirai's example-1 (makespan 30, proved optimal) and GoogLeNet (a plan with a
//     bound and a gap within the GoogLeNet budget), every method;
//   - latency, throughput: RandWire ER(0.2) stacks of 10 modules with 1–4 channels, strongly
//     (sd) and weakly (wd) dependent, on a CPU, a T4 and an A100 with seed 003's relative
//     speeds and PCIe-class links, every method at the same time budget, like seed 003's
//     Tables 4.1 and 4.4 (throughput with a batch of B inputs in four granules);
//   - capped: RandWire ER and WS stacks on a T4 and an A100 under the planner's default cap of
//     2 stages per device (20 µs calls), auto's plan against the best bound of the uncapped
//     problem (before) and the capped module DP's (after);
//   - timing: the solve time of the full MILP against MILP-SPLIT's on single-channel stacks
//     of 5, 10 and 20 modules (seed 003 Table 4.3), both run to optimality (the MILP within
//     a cap).
//
// Run it from the repository root: go run ./bench/schedule [-tables …] [-budget …].
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/planner"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/schedule"
	"github.com/onnxpart/onnxpart/schedule/instances"
)

func main() {
	tables := flag.String("tables", "moirai,latency,throughput,timing,corpus", "comma list of tables: moirai, latency, throughput, timing, corpus, capped")
	models := flag.String("models", "../shared/models", "directory of the corpus ONNX models")
	devices := flag.String("devices", "cpu,t4,a100-80g", "--devices of the corpus table")
	moiraiDir := flag.String("moirai", "../shared/benchmarks/moirai", "directory of the Moirai CSV instances")
	budget := flag.Duration("budget", 30*time.Second, "time budget of every search method per RandWire instance")
	gBudget := flag.Duration("googlenet-budget", 60*time.Second, "time budget of every search method on GoogLeNet")
	batch := flag.Int("batch", 16, "batch of inputs for the throughput table (split into 4 granules)")
	nodes := flag.Int("n", 10, "random-graph nodes per RandWire module")
	modules := flag.Int("modules", 10, "modules per RandWire stack (latency and throughput tables)")
	capT := flag.Duration("cap", 180*time.Second, "time cap of the full MILP in the timing table")
	timingMods := flag.String("timing-modules", "5,10,20", "comma list of stack sizes (modules) of the timing table")
	seed := flag.Uint64("seed", 1, "seed of the instances and of EA/SA")
	cases := flag.String("cases", "", "comma list of RandWire cases to run (e.g. \"1-ch,wd, 4-ch\" is ambiguous: use 1-ch, sd2, sd3, sd4, wd2, wd3, wd4); empty: all")
	only := flag.String("methods", "", "comma list of methods for the RandWire tables; empty: all")
	flag.Parse()
	selectCases(*cases)
	selectMethods(*only)
	fmt.Printf("# onnxpart schedule benchmarks\n\nGo %s, %s/%s, GOMAXPROCS %d, %s\n\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), time.Now().Format("2006-01-02 15:04"))
	for _, t := range strings.Split(*tables, ",") {
		switch strings.TrimSpace(t) {
		case "moirai":
			moirai(*moiraiDir, *gBudget, *seed)
		case "latency":
			randwire(false, *nodes, *modules, *batch, *budget, *seed)
		case "throughput":
			randwire(true, *nodes, *modules, *batch, *budget, *seed)
		case "timing":
			timing(*nodes, *capT, *seed, *timingMods)
		case "corpus":
			corpus(*models, *devices, *budget, *seed)
		case "capped":
			capped(*nodes, *modules, *budget, *seed)
		case "":
		default:
			fmt.Fprintf(os.Stderr, "bench: unknown table %q\n", t)
			os.Exit(2)
		}
	}
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func solve(p *schedule.Problem, o schedule.Options) *schedule.Result {
	r, err := schedule.Solve(context.Background(), p, o)
	if err != nil {
		logf("  %s: %v", o.Method, err)
		return nil
	}
	logf("  %-11s makespan %.6g bound %.6g (%.1fs) %s", o.Method, r.Makespan, r.LowerBound, r.Seconds, strings.Join(diag.NoteStrings(r.Notes), "; "))
	return r
}

var heuristics = []string{schedule.BestDevice, schedule.MET, schedule.Greedy, schedule.HEFT}

func moirai(dir string, budget time.Duration, seed uint64) {
	fmt.Printf("## Moirai instances (latency, congestion on)\n\n")
	fmt.Printf("Search methods (EA, SA, MILP, SPLIT) get %v each on GoogLeNet; example-1's MILP runs to optimality.\n\n", budget)
	fmt.Printf("| instance | nodes | method | makespan | lower bound | gap | optimal | seconds | note |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, name := range []string{"example-1", "GoogLeNet"} {
		p, err := instances.ReadMoiraiFile(filepath.Join(dir, name+".csv"))
		if err != nil {
			fmt.Printf("| %s | | | | | | | | %v |\n", name, err)
			continue
		}
		logf("moirai %s", name)
		methods := append(append([]string(nil), heuristics...), schedule.EA, schedule.SA, schedule.MILP, schedule.Split)
		for _, m := range methods {
			o := schedule.Options{Method: m, Seed: seed}
			if name != "example-1" || m == schedule.EA || m == schedule.SA {
				o.TimeLimit = budget
			}
			if name == "example-1" && (m == schedule.EA || m == schedule.SA) {
				o.TimeLimit = 5 * time.Second
			}
			r := solve(p, o)
			if r == nil {
				note := "no plan fits in memory"
				fmt.Printf("| %s | %d | %s | – | | | | | %s |\n", name, len(p.Nodes), m, note)
				continue
			}
			note := ""
			if r.Method != m {
				note = "kept " + r.Method + "'s plan"
			}
			for _, c := range r.Candidates {
				if c.Method == m && !c.Feasible && c.Makespan > 0 {
					note = joinNote(note, fmt.Sprintf("%s's own plan (%.4g) overflows memory", m, c.Makespan))
				}
			}
			fmt.Printf("| %s | %d | %s | %.6g | %.6g | %.1f%% | %v | %.1f | %s |\n", name, len(p.Nodes), m, r.Makespan, r.LowerBound, 100*r.Gap, r.Optimal, r.Seconds, note)
		}
	}
	fmt.Println()
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

type stackCase struct {
	name     string
	channels int
	strong   bool
}

var stackCases = []stackCase{{"1-ch", 1, true}, {"sd, 2-ch", 2, true}, {"sd, 3-ch", 3, true}, {"sd, 4-ch", 4, true}, {"wd, 2-ch", 2, false}, {"wd, 3-ch", 3, false}, {"wd, 4-ch", 4, false}}

// selectCases keeps the cases named in list (1-ch, sd2 … wd4).
func selectCases(list string) {
	if list == "" {
		return
	}
	want := map[string]bool{}
	for _, c := range strings.Split(list, ",") {
		want[strings.TrimSpace(c)] = true
	}
	var kept []stackCase
	for _, c := range stackCases {
		short := c.name
		if c.channels > 1 {
			short = fmt.Sprintf("%s%d", c.name[:2], c.channels)
		}
		if want[short] {
			kept = append(kept, c)
		}
	}
	stackCases = kept
}

var randwireMethods = []string{schedule.BestDevice, schedule.MET, schedule.Greedy, schedule.HEFT, schedule.EA, schedule.SA, schedule.MILP, schedule.Split}

// selectMethods keeps the RandWire methods named in list.
func selectMethods(list string) {
	if list == "" {
		return
	}
	want := map[string]bool{}
	for _, m := range strings.Split(list, ",") {
		want[strings.TrimSpace(m)] = true
	}
	var kept []string
	for _, m := range randwireMethods {
		if want[m] {
			kept = append(kept, m)
		}
	}
	randwireMethods = kept
}

func makeStack(c stackCase, n, modules, batch int, seed uint64) *schedule.Problem {
	s, err := instances.NewStack(instances.StackConfig{Model: instances.ER, P: 0.2, N: n, Modules: modules, Channels: c.channels, Strong: c.strong, Seed: seed})
	if err != nil {
		panic(err)
	}
	cc := instances.ThesisCosts()
	cc.Seed = seed
	if batch > 1 {
		cc.Batch, cc.Granules = batch, 4
	}
	p, err := s.Problem(instances.ThesisPlatform(), cc)
	if err != nil {
		panic(err)
	}
	return p
}

func randwire(throughput bool, n, modules, batch int, budget time.Duration, seed uint64) {
	what, unit := "Latency (ms)", "ms"
	b := 1
	if throughput {
		what, unit, b = fmt.Sprintf("Throughput (inputs/s, batch of %d in 4 granules)", batch), "inputs/s", batch
	}
	fmt.Printf("## RandWire ER(0.2), %d modules of %d nodes: %s\n\n", modules, n, what)
	fmt.Printf("CPU/T4/A100 at 7.10/1.26/1 (seed 003 Table 4.2), 12 GB/s + 10 µs links, 1 MB tensors per input. EA, SA, MILP and SPLIT get %v each; Bound is the best proved lower bound (on the makespan; as a throughput it is an upper bound). Ratio = best of MET/Greedy/HEFT/EA/SA ÷ SPLIT (latency) or SPLIT ÷ best (throughput).\n\n", budget)
	cols := []string{"BD", "MET", "Greedy", "HEFT", "EA", "SA", "MILP", "SPLIT", "Bound", "ratio", "SPLIT gap"}
	fmt.Printf("| model | nodes | %s |\n|---|---|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
	methods := randwireMethods
	for _, c := range stackCases {
		p := makeStack(c, n, modules, b, seed)
		logf("randwire %s %s", c.name, unit)
		vals := map[string]float64{}
		bound := 0.0
		var splitGap float64
		for _, m := range methods {
			o := schedule.Options{Method: m, Seed: seed}
			if m == schedule.EA || m == schedule.SA || m == schedule.MILP || m == schedule.Split {
				o.TimeLimit = budget
			}
			r := solve(p, o)
			if r == nil {
				vals[m] = math.NaN()
				continue
			}
			own := math.NaN()
			for _, cd := range r.Candidates {
				if cd.Method == m && cd.Feasible {
					own = cd.Makespan
				}
			}
			vals[m] = own
			bound = math.Max(bound, r.LowerBound)
			if m == schedule.Split {
				splitGap = 1 - r.LowerBound/math.Max(own, 1e-300)
			}
		}
		conv := func(mk float64) float64 {
			if !throughput {
				return mk
			}
			return float64(batch) / mk * 1000 // inputs per second (times are in ms)
		}
		row := []string{c.name, fmt.Sprint(len(p.Nodes))}
		for _, m := range methods {
			row = append(row, fmt.Sprintf("%.4g", conv(vals[m])))
		}
		row = append(row, fmt.Sprintf("%.4g", conv(bound)))
		best := math.Inf(1)
		for _, m := range []string{schedule.MET, schedule.Greedy, schedule.HEFT, schedule.EA, schedule.SA} {
			if !math.IsNaN(vals[m]) {
				best = math.Min(best, vals[m])
			}
		}
		row = append(row, fmt.Sprintf("%.3f", best/vals[schedule.Split]), fmt.Sprintf("%.1f%%", 100*splitGap))
		fmt.Printf("| %s |\n", strings.Join(row, " | "))
	}
	fmt.Println()
}

func timing(n int, capT time.Duration, seed uint64, modsList string) {
	fmt.Printf("## Solve time: full MILP vs MILP-SPLIT (single-channel ER(0.2) stacks, N = %d, latency)\n\n", n)
	fmt.Printf("Both run to optimality (relative gap 1e-4); the full MILP is capped at %v. Ratio = MILP seconds ÷ SPLIT seconds (a lower bound on it when the MILP hits the cap).\n\n", capT)
	fmt.Printf("| modules | nodes | SPLIT makespan | SPLIT s | SPLIT gap | MILP makespan | MILP s | MILP gap | ratio |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, ms := range strings.Split(modsList, ",") {
		var mods int
		if _, err := fmt.Sscan(strings.TrimSpace(ms), &mods); err != nil || mods < 1 {
			fmt.Fprintf(os.Stderr, "bench: bad -timing-modules entry %q\n", ms)
			os.Exit(2)
		}
		p := makeStack(stackCase{"1-ch", 1, true}, n, mods, 1, seed)
		logf("timing %d modules", mods)
		sp := solve(p, schedule.Options{Method: schedule.Split, Seed: seed})
		full := solve(p, schedule.Options{Method: schedule.MILP, TimeLimit: capT, Seed: seed})
		if sp == nil || full == nil {
			continue
		}
		ratio := fmt.Sprintf("%.0f×", full.Seconds/sp.Seconds)
		if !full.Optimal {
			ratio = "> " + ratio
		}
		fmt.Printf("| %d | %d | %.5g | %.2f | %.2f%% | %.5g | %.1f | %.2f%% | %s |\n", mods, len(p.Nodes), sp.Makespan, sp.Seconds, 100*sp.Gap, full.Makespan, full.Seconds, 100*full.Gap, ratio)
	}
	fmt.Println()
}

var corpusModels = []string{"squeezenet1_1_small", "vgg16_small", "resnet50_small", "googlenet_small", "mobilenet_v2_small", "efficientnet_b0_small", "randwire_ws_small_small", "bert_base_like_small_op17"}

func corpus(dir, devices string, budget time.Duration, seed uint64) {
	fmt.Printf("## Corpus ONNX models on --devices %s (latency, roofline cost model, no fusion)\n\n", devices)
	fmt.Println("Problems are the planner's own (internal/planner.PlacementProblem): every node (weight-only ones with free outputs), each stage's runtime call, congested transfers, capacities less the devices' reserves.")
	fmt.Println()
	cl, err := hw.Resolve(context.Background(), devices, hw.Options{})
	if err != nil {
		fmt.Printf("not run: %v\n\n", err)
		return
	}
	cm := profile.NewCostModel(cl, profile.CostOptions{})
	var names []string
	var devs []int
	for d, dev := range cl.Devices {
		names = append(names, dev.Name+" ("+dev.Model+")")
		devs = append(devs, d)
	}
	fmt.Printf("Devices: %s. Auto gets %v. Speedup = best single device ÷ auto's plan.\n\n", strings.Join(names, ", "), budget)
	fmt.Printf("| model | nodes | best device (ms) | HEFT (ms) | auto (ms) | method | bound (ms) | gap | speedup |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, name := range corpusModels {
		m, err := ingest.Load(filepath.Join(dir, name+".onnx"), ingest.Options{})
		if err != nil {
			fmt.Printf("| %s | | | | | | | | %v |\n", name, err)
			continue
		}
		p := planner.PlacementProblem(m.Graph, cl, planner.Price(m.Graph, cm), devs, 1, 1)
		logf("corpus %s (%d nodes)", name, len(p.Nodes))
		bd := solve(p, schedule.Options{Method: schedule.BestDevice})
		heft := solve(p, schedule.Options{Method: schedule.HEFT})
		auto := solve(p, schedule.Options{Method: schedule.Auto, TimeLimit: budget, Seed: seed})
		if bd == nil || heft == nil || auto == nil {
			fmt.Printf("| %s | %d | | | | | | | failed |\n", name, len(p.Nodes))
			continue
		}
		const ms = 1e3 // the problem's seconds, printed in milliseconds
		fmt.Printf("| %s | %d | %.4g | %.4g | %.4g | %s | %.4g | %.1f%% | %.2f× |\n", name, len(p.Nodes), bd.Makespan*ms, heft.Makespan*ms, auto.Makespan*ms, auto.Method, auto.LowerBound*ms, 100*auto.Gap, bd.Makespan/auto.Makespan)
	}
	fmt.Println()
}

// capped plans RandWire ER(0.2) and WS(4, 0.75) stacks on the T4 and the A100 of seed 003's
// platform, every stage call 20 µs, under the planner's default cap of 2 stages per device,
// and compares auto's plan with the best bound of the uncapped problem (what the certificate
// said before the capped module DP) and with the best bound including it.
func capped(n, modules int, budget time.Duration, seed uint64) {
	pf := instances.ThesisPlatform()
	pf.Names, pf.Slowdown, pf.BatchExp, pf.Memory = pf.Names[1:], pf.Slowdown[1:], pf.BatchExp[1:], pf.Memory[1:]
	const perDevice = 2
	fmt.Printf("## RandWire stacks on a T4 and an A100, at most %d stages per device (latency, ms)\n\n", perDevice)
	fmt.Printf("%d modules of %d nodes, seed 003's T4/A100 speeds (1.26/1) and links, stage calls of 20 µs; auto gets %v. Before: the best bound of the uncapped problem; after: with module-dp-capped (bounds_cap.go).\n\n", modules, n, budget)
	fmt.Printf("| model | case | nodes | plan | stages | bound before | gap before | bound after | gap after | by | s |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, model := range []string{instances.ER, instances.WS} {
		for _, c := range stackCases {
			st, err := instances.NewStack(instances.StackConfig{Model: model, N: n, Modules: modules, Channels: c.channels, Strong: c.strong, Seed: seed})
			if err != nil {
				panic(err)
			}
			cc := instances.ThesisCosts()
			cc.Seed = seed
			p, err := st.Problem(pf, cc)
			if err != nil {
				panic(err)
			}
			for u := range p.Devices {
				p.Devices[u].CallCost = 0.02
			}
			logf("capped %s %s", model, c.name)
			r := solve(p, schedule.Options{Method: schedule.Auto, TimeLimit: budget, Seed: seed, MaxStagesPerDevice: perDevice})
			if r == nil {
				continue
			}
			before, by := 0.0, ""
			for _, b := range r.Bounds {
				if !schedule.CappedBound(b.Method) {
					before = math.Max(before, b.Value)
				}
				if b.Value >= r.LowerBound && by == "" {
					by = b.Method
				}
			}
			stages := 0
			for _, k := range r.Schedule.Stages {
				stages += k
			}
			fmt.Printf("| %s | %s | %d | %.4g | %d | %.4g | %.1f%% | %.4g | %.1f%% | %s | %.1f |\n", model, c.name, len(p.Nodes), r.Makespan, stages, before, 100*(1-before/r.Makespan), r.LowerBound, 100*r.Gap, by, r.Seconds)
		}
	}
	fmt.Println()
}
