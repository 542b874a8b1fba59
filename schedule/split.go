package schedule

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/internal/milp"
)

// MILP-SPLIT (seed 003 §3.3).
//
// The graph is cut into modules (modules.go). Consecutive modules between two single-channel
// boundaries form a block. Latency mode: every block is solved for every device u of the cut
// node before it (a zero-time "ghost" pinned to u stands for it, ready at time 0) and every
// device v of the cut node that ends it (pinned to v); the DP
//
//	dp(b, v) = min_u dp(b−1, u) + OPT(block b | entry u, exit v)        (§3.3.1)
//
// stitches the blocks exactly: everything of a block precedes the next block's cut node, so
// the makespan is the sum of block makespans. A block of several multi-channel modules is
// solved by chaining (§3.3.2, digest-003 §4.3 option 2): module after module, the ghosts of
// its inputs pinned where the previous modules put them; the chained block is re-timed by the
// simulator and its exit device is whatever the chain chose. Batched mode chains all modules
// (ghosts carry their granule maps). All sub-solves of one stage are independent and run on
// the worker goroutines (HiGHS's branch and bound is serial, so this is how the cores are used).
//
// Lower bound: with single-channel blocks only, the same DP over the sub-solves' dual bounds
// (never incumbents) bounds the optimum. Otherwise the thesis's recursion (§3.3.2):
//
//	LB(G_s) = max( LB(M_s) + min_t LB(dep(I_t) ∩ M_{s+1}),  LB(G_{s+1}) + min_t LB(pre(O_t) ∩ M_s) )
//
// where I_t (O_t) are the heads (tails) of the edges from M_s to later modules, each term
// used only when its premise holds (every node of M_s reaches a later module; every node of
// G_{s+1} is reached from M_s), and LB(X) is the best of the critical-path and load bounds and
// the dual bound of X's MILP (in batched mode the dep/pre terms use one granule at the
// fastest batch time: only one granule is sure to follow the last batch of M_s).

type splitOptions struct {
	deadline    time.Time
	workers     int
	target      int
	maxChannels int
	relGap      float64
	symmetry    string
	seed        uint64
	lbShare     float64 // share of the time for the lower-bound sub-solves (multi-channel)
	// met, when set, reports whether a makespan meets the caller's best lower bound: the
	// search stops there (nothing better exists).
	met         func(ub float64) bool
	polishShare float64 // share of the time for annealing the stitched plan (when not optimal)
	progress    func(string)
	log         *subLog // sub-MILP outcomes worth reporting (nil: not recorded)
}

// subLog counts the sub-MILPs and records the ones that failed (a solver error, or a result
// that contradicts the model: see mipRun.fault) or ran out of time without an incumbent.
// Their sub-problems keep their heuristic plans and cheap bounds; split reports them in
// Result.Notes.
// splitMaxRows bounds the sub-MILPs split passes to HiGHS. Above it they only cost time and
// memory: on the families and the corpus at the default 30 s (RandWire ER and WS on two and
// three devices, Inception-v3, GoogLeNet, BERT, GPT-2), no sub-MILP above 1,891 rows reached
// a branch-and-bound node, none above 1,428 rows improved its start, and the 26 of RandWire ER
// on a100-80g,t4 (332,699–521,973 rows: 170–290-node blocks) ended at the root, with 24 s of
// the workers' time and most of the run's 3.6 GB peak. Their build stops past the limit too
// (the Go side of a 500,000-row model is a few hundred MB).
var splitMaxRows = 100_000

type subLog struct {
	mu       sync.Mutex
	milps    int      // sub-MILPs run
	failed   int      // solver errors and faults
	timedOut int      // stopped by their time limit with no incumbent of their own
	skipped  int      // not started: their set-up would have overrun the time left (mipRun.skipped)
	tooLarge int      // not started: above splitMaxRows rows
	first    []string // the first few failure messages
}

func (l *subLog) record(err error, run *mipRun) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.milps++
	msg := ""
	switch {
	case err != nil:
		msg = err.Error()
	case run.fault != "":
		msg = run.fault
	case run.tooLarge:
		l.tooLarge++
		return
	case run.skipped != "":
		l.skipped++
		return
	case run.pl == nil && (run.status == milp.TimeLimit || run.status == milp.Interrupted):
		l.timedOut++
		return
	default:
		return
	}
	l.failed++
	if len(l.first) < 3 {
		l.first = append(l.first, msg)
	}
}

// notes are the log's lines for Result.Notes (none when nothing went wrong).
func (l *subLog) notes() []diag.Note {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []diag.Note
	if l.failed > 0 {
		out = append(out, diag.Notef(diag.NoteFault, "split: %d of %d sub-MILPs failed and kept their heuristic plans and cheap bounds (%s)",
			l.failed, l.milps, strings.Join(l.first, "; ")))
	}
	if l.skipped > 0 {
		out = append(out, diag.Notef(diag.NoteSkipped, "split: %d of %d sub-MILPs not started: too little time left for their set-up (heuristic plans kept)", l.skipped, l.milps))
	}
	if l.timedOut > 0 {
		out = append(out, diag.Notef(diag.NoteCapped, "split: %d of %d sub-MILPs stopped at their time limit without an incumbent (heuristic plans kept)", l.timedOut, l.milps))
	}
	if l.tooLarge > 0 {
		out = append(out, diag.Notef(diag.NoteSkipped, "split: %d of %d sub-MILPs not started: above %d rows, where HiGHS does not reach branching in split's time (heuristic plans kept)", l.tooLarge, l.milps, splitMaxRows))
	}
	return out
}

type splitOutcome struct {
	pl      *Placement
	sc      *Schedule
	bound   float64
	boundBy string
	modules int
	blocks  int
	solves  int
	optimal bool // every sub-solve optimal and all boundaries single-channel (latency)
	note    string
}

// subProblem is a module (plus ghosts) as a problem of its own.
type subProblem struct {
	in     *inst
	global []int // sub node → global node (−1 for blockers)
	ghosts int   // the first ghosts nodes are ghosts
	real   int   // nodes [ghosts, real) are the module's; blockers follow
}

// makeSub builds the problem on nodes (global, topological order) with ghosts for their
// outside predecessors listed in ghostDev / ghostG (pinned at time 0 with no cost), exit
// pinned to exitDev (−1: free), and per-device memory capacities mem (nil: unlimited).
func (in *inst) makeSub(nodes []int, ghostDev map[int]int, ghostG map[int][]int, exit, exitDev int, mem []float64) (*subProblem, error) {
	return in.makeSubBlocked(nodes, ghostDev, ghostG, exit, exitDev, mem, nil)
}

// makeSubBlocked is makeSub with blockers: blocked[u] > 0 adds a node pinned to device u
// that keeps it busy for that long from time 0 (the device is still finishing earlier work).
func (in *inst) makeSubBlocked(nodes []int, ghostDev map[int]int, ghostG map[int][]int, exit, exitDev int, mem, blocked []float64) (*subProblem, error) {
	p := in.problem
	var ghosts []int
	for g := range ghostDev {
		ghosts = append(ghosts, g)
	}
	for g := range ghostG {
		if _, ok := ghostDev[g]; !ok {
			ghosts = append(ghosts, g)
		}
	}
	sort.Slice(ghosts, func(a, b int) bool { return in.topoPos[ghosts[a]] < in.topoPos[ghosts[b]] })
	sp := &subProblem{ghosts: len(ghosts)}
	local := map[int]int{}
	q := &Problem{Devices: append([]Device(nil), p.Devices...), Links: p.Links, Batch: p.Batch, GranuleSize: p.GranuleSize, Congestion: p.Congestion}
	for u := range q.Devices {
		q.Devices[u].Memory = 0
		if mem != nil && !math.IsInf(mem[u], 1) {
			q.Devices[u].Memory = math.Max(mem[u], 1e-300)
		}
	}
	for _, g := range ghosts {
		local[g] = len(q.Nodes)
		sp.global = append(sp.global, g)
		nd := Node{Name: "ghost:" + p.Nodes[g].Name, Time: make([]float64, in.numDevices)}
		if u, ok := ghostDev[g]; ok {
			for v := range nd.Time {
				if v != u {
					nd.Time[v] = math.Inf(1)
				}
			}
		} else if in.numGranules > 1 {
			nd.BatchTime = make([][]float64, in.numDevices)
			for v := range nd.BatchTime {
				nd.BatchTime[v] = make([]float64, in.numGranules)
			}
		}
		q.Nodes = append(q.Nodes, nd)
	}
	for _, i := range nodes {
		local[i] = len(q.Nodes)
		sp.global = append(sp.global, i)
		nd := p.Nodes[i]
		nd.Time = append([]float64(nil), in.granuleTime[i]...)
		if i == exit && exitDev >= 0 {
			for v := range nd.Time {
				if v != exitDev {
					nd.Time[v] = math.Inf(1)
				}
			}
		}
		q.Nodes = append(q.Nodes, nd)
	}
	sp.real = len(q.Nodes)
	var blockG [][2]int // (sub node, device) of batched blockers
	for u, b := range blocked {
		if b <= 0 || (in.numGranules > 1 && !in.sizeOK[u][in.numGranules]) {
			continue
		}
		nd := Node{Name: fmt.Sprintf("busy:%s", p.Devices[u].Name), Time: make([]float64, in.numDevices)}
		for v := range nd.Time {
			nd.Time[v] = math.Inf(1)
		}
		nd.Time[u] = b
		if in.numGranules > 1 {
			nd.Time[u] = b / float64(in.numGranules)
			nd.BatchTime = make([][]float64, in.numDevices)
			for v := range nd.BatchTime {
				nd.BatchTime[v] = make([]float64, in.numGranules)
				for c := range nd.BatchTime[v] {
					nd.BatchTime[v][c] = math.Inf(1)
				}
			}
			nd.BatchTime[u][in.numGranules-1] = b
			blockG = append(blockG, [2]int{len(q.Nodes), u})
		}
		sp.global = append(sp.global, -1)
		q.Nodes = append(q.Nodes, nd)
	}
	for _, ed := range p.Edges {
		a, okA := local[ed.From]
		b, okB := local[ed.To]
		if okA && okB && b >= len(ghosts) {
			e := ed
			e.From, e.To = a, b
			q.Edges = append(q.Edges, e)
		}
	}
	sub, err := prepare(q)
	if err != nil {
		return nil, err
	}
	// Stage calls: a sub-problem prices the calls of its nodes that read a non-free edge from
	// another device — its ghosts sit where the real inputs run, so these are exactly the
	// real plan's calls of the module's nodes — but not a source's first-task call: its
	// ghosts and blockers are sources that pay nothing, and a device the module uses first
	// may have run an earlier module's work, so its first task pays only if it reads from
	// another device. Each sub-plan's nodes thus pay, in the real plan, at least the calls
	// the sub-problem prices, and a sub-problem's bounds stay bounds of its part of every
	// real plan (the real part, its durations cut to the priced ones, is a schedule of the
	// sub-problem); the stitched plan is priced in full by the problem's simulator.
	sub.sourceCalls = false
	if len(ghostG) > 0 || len(blockG) > 0 {
		sub.pinnedGranules = make([][]int, sub.numNodes)
		for g, gm := range ghostG {
			sub.pinnedGranules[local[g]] = gm
		}
		for _, bg := range blockG {
			g := make([]int, in.numGranules)
			for l := range g {
				g[l] = bg[1]
			}
			sub.pinnedGranules[bg[0]] = g
		}
	}
	sp.in = sub
	return sp, nil
}

// subResult is the outcome of one sub-solve (sub indices).
type subResult struct {
	pl      *Placement
	sc      *Schedule
	mk      float64
	bound   float64
	cheap   float64 // the cheap bounds alone: they ignore memory (prepare only)
	optimal bool
	err     error
	fault   string // the sub-MILP failed (its error or fault); the plan and bound are the heuristics'
}

// prepare runs the constructive heuristics and the cheap bounds.
func (sp *subProblem) prepare(ctx context.Context) subResult {
	in := sp.in
	r := subResult{mk: math.Inf(1), bound: maxBound(in.simpleBounds(ctx))}
	r.cheap = r.bound
	best, sc := in.bestConstructive()
	if best == nil {
		r.err = fmt.Errorf("no heuristic plan fits")
		return r
	}
	r.pl, r.sc, r.mk = best, sc, sc.Makespan
	if r.mk <= r.bound*(1+1e-9)+1e-12 {
		r.optimal, r.bound = true, r.mk
		return r
	}
	{
		// A short local search from the best heuristic tightens the MILP's horizon.
		spc := newSpace(in)
		genes, f := spc.ea(spc.genesOf(best), 1, &budget{ctx: ctx, iters: 100 * in.numNodes}, nil)
		if f < r.mk {
			pl := spc.placement(genes)
			if sc, err := in.simulate(pl); err == nil && sc.Feasible && sc.Makespan < r.mk {
				r.pl, r.sc, r.mk = pl, sc, sc.Makespan
			}
		}
	}
	return r
}

// improve runs the MILP warm-started from start (nil: none) within limit.
func (sp *subProblem) improve(ctx context.Context, start *Placement, startMk, lb float64, limit time.Duration, o splitOptions) subResult {
	in := sp.in
	r := subResult{pl: start, mk: startMk, bound: lb}
	if start != nil {
		r.sc, _ = in.simulate(start)
	}
	if limit <= 0 || ctx.Err() != nil {
		return r
	}
	if start == nil {
		start = in.safeStart()
		r.mk = math.Inf(1)
	}
	run, err := in.solveMILP(ctx, start, lb, mipOptions{timeLimit: limit, relGap: o.relGap, symmetry: o.symmetry, seed: int(o.seed), maxRows: splitMaxRows})
	o.log.record(err, run)
	if err != nil {
		r.fault = err.Error()
		if r.pl == nil {
			r.err = fmt.Errorf("no plan found (MILP: %v)", err)
		}
		return r
	}
	r.fault = run.fault
	if run.fault == "" {
		r.bound = math.Max(r.bound, run.bound)
	}
	if run.pl != nil && run.fault == "" && run.sc.Makespan < r.mk {
		r.pl, r.sc, r.mk = run.pl, run.sc, run.sc.Makespan
	}
	if r.pl == nil {
		r.err = fmt.Errorf("no plan found (MILP status %v)", run.status)
		return r
	}
	r.bound = math.Min(r.bound, r.mk)
	r.optimal = (run.optimal && run.fault == "") || r.mk <= r.bound*(1+1e-9)
	return r
}

// solve is prepare, then improve when the heuristics are not provably optimal.
func (sp *subProblem) solve(ctx context.Context, limit time.Duration, o splitOptions) subResult {
	r := sp.prepare(ctx)
	if r.optimal {
		return r
	}
	if r.pl != nil && limit > 0 && limit < time.Duration(math.MaxInt64/2) && saShare > 0 {
		// Part of the time goes to annealing from the heuristic plan: a better start and a
		// tighter horizon for the MILP.
		began := time.Now()
		spc := newSpace(sp.in)
		b := &budget{ctx: ctx, start: began, deadline: began.Add(time.Duration(float64(limit) * saShare))}
		genes, f := spc.sa(spc.genesOf(r.pl), o.seed+1, b, nil)
		if f < r.mk {
			pl := spc.placement(genes)
			if sc, err := sp.in.simulate(pl); err == nil && sc.Feasible && sc.Makespan < r.mk {
				r.pl, r.sc, r.mk = pl, sc, sc.Makespan
			}
		}
		limit -= time.Since(began)
	}
	r2 := sp.improve(ctx, r.pl, r.mk, r.bound, limit, o)
	if r2.pl == nil {
		if r.pl == nil {
			r.err = r2.err
		}
		return r
	}
	return r2
}

// bestConstructive runs the constructive heuristics and returns the best feasible plan.
func (in *inst) bestConstructive() (*Placement, *Schedule) {
	var best *Placement
	var bestSc *Schedule
	for _, pl := range in.constructive() {
		if pl.pl == nil {
			continue
		}
		sc, err := in.simulate(pl.pl)
		if err != nil || !sc.Feasible {
			continue
		}
		if bestSc == nil || sc.Makespan < bestSc.Makespan {
			best, bestSc = pl.pl, sc
		}
	}
	return best, bestSc
}

type named struct {
	method string
	pl     *Placement
}

// constructive returns the plans of the constructive heuristics (nil where none exists).
func (in *inst) constructive() []named {
	if in.latency() {
		return []named{{BestDevice, in.bestDevice()}, {MET, in.met()}, {Greedy, in.greedy()}, {HEFT, in.heft()}}
	}
	ss := in.splits()
	out := []named{{BestDevice, in.bBestDevice()}, {MET, in.bMET(ss)}, {Greedy, in.bGreedy(ss)}, {HEFT, in.bHEFT(ss)}}
	for x := range out {
		out[x].pl = in.applyPins(out[x].pl)
	}
	return out
}

// applyPins forces the pinned granule maps (ghosts of batched sub-problems) into a plan.
func (in *inst) applyPins(pl *Placement) *Placement {
	if pl == nil || in.pinnedGranules == nil {
		return pl
	}
	for i, g := range in.pinnedGranules {
		if g != nil {
			pl.Granules[i] = append([]int(nil), g...)
		}
	}
	return pl
}

// pool runs n independent jobs on the workers; job x gets a time limit of its fair share of
// what is left before the deadline.
func pool(ctx context.Context, n, workers int, deadline time.Time, job func(ctx context.Context, x int, limit time.Duration)) {
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range max(1, min(workers, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				x := int(next.Add(1) - 1)
				if x >= n || ctx.Err() != nil {
					return
				}
				left := n - int(done.Load())
				limit := time.Duration(math.MaxInt64)
				if !deadline.IsZero() {
					rem := time.Until(deadline)
					limit = time.Duration(float64(rem) * float64(min(workers, left)) / float64(left))
					limit = min(limit, rem)
				}
				job(ctx, x, limit)
				done.Add(1)
			}
		}()
	}
	wg.Wait()
}

// split runs MILP-SPLIT.
func (in *inst) split(ctx context.Context, o splitOptions) (*splitOutcome, error) {
	if o.workers < 1 {
		o.workers = 1
	}
	ms := in.detectModules(o.target, o.maxChannels)
	out := &splitOutcome{modules: len(ms.modules)}
	// Memory shares when memory can bind: each module gets capacity in proportion to its demand.
	var share func(nodes []int) []float64
	total := 0.0
	for i := range in.numNodes {
		total += in.problem.Nodes[i].Weight + float64(in.numGranules)*in.problem.Nodes[i].Act
	}
	binding := false
	for u := range in.numDevices {
		if in.capacity[u] < total {
			binding = true
		}
	}
	if binding {
		share = func(nodes []int) []float64 {
			d := 0.0
			for _, i := range nodes {
				d += in.problem.Nodes[i].Weight + float64(in.numGranules)*in.problem.Nodes[i].Act
			}
			s := make([]float64, in.numDevices)
			for u := range s {
				s[u] = in.capacity[u] * d / math.Max(total, 1e-300)
			}
			return s
		}
		out.note = "memory is shared among modules in proportion to their demand"
	} else {
		share = func([]int) []float64 { return nil }
	}
	planDeadline := o.deadline
	multi := false
	for m := range ms.modules {
		if m < len(ms.modules)-1 && ms.cut[m] < 0 {
			multi = true
		}
	}
	lbDeadline := time.Time{}
	var polishAt time.Time
	if !o.deadline.IsZero() {
		total := time.Until(o.deadline)
		lbShare := 0.0
		if multi || !in.latency() {
			lbShare = o.lbShare
		}
		planShare := 1 - lbShare - o.polishShare
		polishAt = time.Now().Add(time.Duration(float64(total) * (1 - lbShare)))
		planDeadline = time.Now().Add(time.Duration(float64(total) * planShare))
		if multi {
			lbDeadline = o.deadline
		}
	}
	var err error
	if in.latency() {
		err = in.splitLatency(ctx, ms, o, planDeadline, share, out)
	} else {
		err = in.splitBatched(ctx, ms, o, planDeadline, share, out)
	}
	if err != nil {
		return nil, err
	}
	if o.met != nil && out.sc != nil && o.met(out.sc.Makespan) {
		return out, nil // the stitched plan meets the caller's bound: no polish, no bound
	}
	if !out.optimal && !polishAt.IsZero() && ctx.Err() == nil {
		in.polish(ctx, out, polishAt, o)
	}
	if multi || !in.latency() {
		if lbDeadline.IsZero() {
			lbDeadline = o.deadline
		}
		lb := in.recursiveBound(ctx, ms, o, lbDeadline)
		if lb > out.bound {
			out.bound, out.boundBy = lb, "split-recursion"
		}
	}
	return out, nil
}

// blocks groups modules between single-channel boundaries.
func (ms *moduleSet) blocks() [][]int {
	var out [][]int
	var cur []int
	for m := range ms.modules {
		cur = append(cur, m)
		if ms.cut[m] >= 0 || m == len(ms.modules)-1 {
			out = append(out, cur)
			cur = nil
		}
	}
	return out
}

func edgeKey(from, to int) int { return from<<32 | to }

// recursiveBound is the thesis's lower bound over the module sequence (see the file comment).
func (in *inst) recursiveBound(ctx context.Context, ms *moduleSet, o splitOptions, deadline time.Time) float64 {
	q := len(ms.modules)
	if q < 2 {
		return 0
	}
	// later[s]: nodes of modules after s.
	inMod := ms.of
	type lbJob struct {
		nodes   []int
		latency bool // one granule at the fastest batch (batched dep/pre terms)
	}
	var jobs []lbJob
	modJob := make([]int, q)
	depJobs := make([][]int, q)
	preJobs := make([][]int, q)
	for s := range q {
		modJob[s] = len(jobs)
		jobs = append(jobs, lbJob{nodes: ms.modules[s]})
	}
	premA := make([]bool, q)
	premB := make([]bool, q)
	for s := 0; s+1 < q; s++ {
		heads, tails := map[int]bool{}, map[int]bool{}
		for _, ed := range in.problem.Edges {
			if inMod[ed.From] == s && inMod[ed.To] > s {
				heads[ed.To], tails[ed.From] = true, true
			}
		}
		// Premise A: every node of M_s reaches a later module.
		premA[s] = true
		for _, i := range ms.modules[s] {
			ok := tails[i]
			for t := range tails {
				if in.reaches(i, t) {
					ok = true
					break
				}
			}
			if !ok {
				premA[s] = false
				break
			}
		}
		// Premise B: every node of later modules is reached from M_s.
		premB[s] = true
		for j := range in.numNodes {
			if inMod[j] <= s {
				continue
			}
			ok := false
			for _, i := range ms.modules[s] {
				if in.reaches(i, j) {
					ok = true
					break
				}
			}
			if !ok {
				premB[s] = false
				break
			}
		}
		for _, h := range slices.Sorted(maps.Keys(heads)) {
			var set []int
			for _, j := range ms.modules[s+1] {
				if j == h || in.reaches(h, j) {
					set = append(set, j)
				}
			}
			depJobs[s] = append(depJobs[s], len(jobs))
			jobs = append(jobs, lbJob{nodes: set, latency: !in.latency()})
		}
		for _, t := range slices.Sorted(maps.Keys(tails)) {
			var set []int
			for _, i := range ms.modules[s] {
				if i == t || in.reaches(i, t) {
					set = append(set, i)
				}
			}
			preJobs[s] = append(preJobs[s], len(jobs))
			jobs = append(jobs, lbJob{nodes: set, latency: !in.latency()})
		}
	}
	val := make([]float64, len(jobs))
	pool(ctx, len(jobs), o.workers, deadline, func(ctx context.Context, x int, limit time.Duration) {
		j := jobs[x]
		if len(j.nodes) == 0 {
			return
		}
		sp, err := in.boundSub(j.nodes, j.latency)
		if err != nil {
			return
		}
		r := sp.solve(ctx, limit, o)
		val[x] = r.bound
	})
	minOf := func(ids []int) float64 {
		if len(ids) == 0 {
			return 0
		}
		v := math.Inf(1)
		for _, x := range ids {
			v = math.Min(v, val[x])
		}
		return v
	}
	lb := val[modJob[q-1]]
	for s := q - 2; s >= 0; s-- {
		a := val[modJob[s]]
		if premA[s] {
			a += minOf(depJobs[s])
		}
		b := lb
		if premB[s] {
			b += minOf(preJobs[s])
		}
		lb = math.Max(a, b)
	}
	return lb
}

// boundSub is the standalone sub-problem on nodes for a lower bound: no ghosts, no memory;
// with oneGranule, a latency problem whose times are the fastest batch of each device.
func (in *inst) boundSub(nodes []int, oneGranule bool) (*subProblem, error) {
	if !oneGranule {
		return in.makeSub(nodes, nil, nil, -1, -1, nil)
	}
	p := in.problem
	local := map[int]int{}
	q := &Problem{Devices: append([]Device(nil), p.Devices...), Links: p.Links, Congestion: p.Congestion}
	for u := range q.Devices {
		q.Devices[u].CallCost = 0 // the one-granule proxy leaves calls out: a smaller bound, still one
		q.Devices[u].Memory, q.Devices[u].BatchSizes = 0, nil
	}
	sp := &subProblem{}
	for _, i := range nodes {
		local[i] = len(q.Nodes)
		sp.global = append(sp.global, i)
		nd := Node{Name: p.Nodes[i].Name, Time: make([]float64, in.numDevices)}
		for u := range in.numDevices {
			nd.Time[u] = math.Inf(1)
			for c := 1; c <= in.numGranules; c++ {
				if in.sizeOK[u][c] {
					nd.Time[u] = math.Min(nd.Time[u], in.batchTime[i][u][c])
				}
			}
		}
		q.Nodes = append(q.Nodes, nd)
	}
	for _, ed := range p.Edges {
		a, okA := local[ed.From]
		b, okB := local[ed.To]
		if okA && okB {
			e := ed
			e.From, e.To = a, b
			q.Edges = append(q.Edges, e)
		}
	}
	sub, err := prepare(q)
	if err != nil {
		return nil, err
	}
	sp.in = sub
	sp.real = sub.numNodes
	return sp, nil
}

// saShare is the part of a sub-solve's time given to annealing before the MILP.
const saShare = 0.3

// polish anneals the stitched plan until the deadline (digest-003 §4.3's re-timing only
// reorders; this also moves nodes across the seams the module solves could not see). The
// annealing schedules in the order of the stitched plan's start times, so it starts from the
// stitched makespan; the better of the two plans is kept.
func (in *inst) polish(ctx context.Context, out *splitOutcome, deadline time.Time, o splitOptions) {
	sp := newSpace(in)
	sp.order = in.startOrder(out.sc)
	if in.latency() && in.numDevices > 1 {
		// Region moves first, for half of the time (moves.go), in the stitched plan's order.
		half := time.Now().Add(time.Until(deadline) / 2)
		dev := append([]int(nil), out.pl.Device...)
		work := 0
		stop := func() bool {
			return work&15 == 0 && (ctx.Err() != nil || (!deadline.IsZero() && !time.Now().Before(half)))
		}
		if f := in.regionSearch(dev, sp.order, stageCap{}, stop, &work); f < out.sc.Makespan {
			pl := &Placement{Device: dev, Order: positions(sp.order)}
			if sc, err := in.simulate(pl); err == nil && sc.Feasible && sc.Makespan < out.sc.Makespan {
				out.pl, out.sc = pl, sc
				out.note = joinNote(out.note, "stitched plan improved by region moves")
			}
		}
	}
	sp.heat = 0.01 // polish, do not restart
	genes, f := sp.sa(sp.genesOf(out.pl), o.seed+7, &budget{ctx: ctx, start: time.Now(), deadline: deadline}, nil)
	if f >= out.sc.Makespan {
		return
	}
	pl := sp.placement(genes)
	if sc, err := in.simulate(pl); err == nil && sc.Feasible && sc.Makespan < out.sc.Makespan {
		out.pl, out.sc = pl, sc
		out.note = joinNote(out.note, "stitched plan annealed")
	}
}
