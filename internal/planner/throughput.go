// Throughput pipelines (package partition): the problem, the solve, the pricing of the plan.

package planner

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/partition"
)

// pipeline is a throughput plan's partition problem and what pricing its plan needs.
type pipeline struct {
	problem *partition.Problem
	// groups are the cluster devices of each partition device (one group of identical
	// devices, or one per kind); tensorWork the work-graph tensor of each problem tensor.
	groups     [][]int
	tensorWork []int
	// workRe and fineRe mark the nodes of the work graph and of the model computed again in
	// every stage that reads them (recompute.go); nil when none are.
	workRe, fineRe []bool
	latBW          float64 // a transfer's latency in bytes of the link (Size/B = bytes/B + latency)
	folded         *foldedBoundary
	calls          float64     // calls per request: the workload's total weight, else 1
	notes          []diag.Note // what the problem changed of the options (MaxStages above the devices)
}

// cuts is how one solve of a pipeline differs from the run's options: CutAuto and CutBlocks
// plan twice, each with half the time, and the second keeps every block's nodes together.
type cuts struct {
	timeLimit time.Duration
	colocate  [][]int // work nodes that share a stage (block-boundary cuts)
	progress  func(Progress)
}

// pipelineProblem is the one adapter from a planned graph and its costs to partition's
// problem: node work per device (times, with the host's boundary terms folded in when
// measured), memory per node (weights and owned state), tensors at their link cost (weighted
// per workload phase; recomputed cones and weight-only nodes are no tensors; state read
// away from its owner is a cost-only tensor), identical devices as one kind with K stages or
// mixed ones as kinds with counts. A K above the device count plans one stage per device,
// with a note.
func (run *run) pipelineProblem(colocate [][]int) (*pipeline, error) {
	g, times, table, devs, identical, opt := run.work, run.times, run.table, run.devs, run.identical, run.opt
	var notes []diag.Note
	p := &partition.Problem{Name: g.Name, Params: make([]float64, len(g.Nodes))}
	p.NodeNames = make([]string, len(g.Nodes))
	for v := range g.Nodes {
		p.NodeNames[v] = g.Nodes[v].Label()
		p.Params[v] = float64(g.Nodes[v].ParamBytes)
		if len(run.nodeMem) == len(g.Nodes) {
			p.Params[v] = run.nodeMem[v] // weights and owned state (memory.go)
		}
	}
	// One link figure per pipeline: the slowest route between two of the devices used
	// (identical devices on a uniform interconnect have one figure anyway).
	bw, lat := math.Inf(1), 0.0
	for _, i := range devs {
		for _, j := range devs {
			if i != j {
				if b := table.Bandwidth[i][j]; b > 0 && b < bw {
					bw, lat = b, table.Latency[i][j]
				}
			}
		}
	}
	latBW := 0.0 // a transfer's latency in bytes: Size/B = bytes/B + latency
	if !math.IsInf(bw, 1) {
		latBW = lat * bw
	}
	bc := run.boundary
	var fb *foldedBoundary
	if bc != nil {
		// Host CPU stages with measured call costs: a cut tensor costs each end what
		// StageTime charges (CutTimes), in place of the host memory "link" (the hand-off is
		// the binding's copies out of one call and into the next, which the I/O term prices).
		// Sizes are then in nanoseconds of that cost, over a bandwidth of 1e9.
		bw, latBW = boundaryScale, 0
		fb = foldBoundary(g, run.g, run.coarse, bc)
	}
	// With a workload, a tensor's size per request is its bytes in each phase weighted by
	// the phase's calls, and it pays the latency once per call.
	calls := totalWeight(opt.Workload)
	size := func(t int) float64 {
		if fb != nil {
			return fb.size(t)
		}
		if len(run.phaseCosts) == 0 {
			return math.Max(float64(g.Tensors[t].Bytes), 0) + latBW
		}
		s := calls * latBW
		for i, pc := range run.phaseCosts {
			s += opt.Workload[i].Weight * math.Max(pc.bytes[t], 0)
		}
		return s
	}
	// Cheap cones every block reads (masks, rotary tables) are recomputed where they are
	// read when that costs less than receiving them (recompute.go).
	var workRe, fineRe []bool
	if run.g != nil {
		workRe, fineRe = chooseRecompute(recomputeInput{g: run.g, work: g, coarse: run.coarse, blocks: run.blocks,
			times: times[devs[0]], size: size, bw: bw, state: run.pairs})
	}
	var tensorWork []int // the work-graph tensor of each of p's tensors
	for t := range g.Tensors {
		tn := &g.Tensors[t]
		// Weight-only (static) nodes, Constants included, are emitted again in every stage
		// that reads them (emit's classify), so their outputs never cross a stage boundary;
		// so are recomputed cones.
		if tn.Producer < 0 || len(tn.Consumers) == 0 || g.Nodes[tn.Producer].Static || (workRe != nil && workRe[tn.Producer]) {
			continue
		}
		p.Tensors = append(p.Tensors, partition.Tensor{Name: tn.Name, Producer: tn.Producer, Consumers: tn.Consumers, Size: size(t)})
		tensorWork = append(tensorWork, t)
	}
	// State read away from the stage that keeps it crosses the link on every call.
	for _, sr := range run.stateReads {
		p.Tensors = append(p.Tensors, partition.Tensor{Name: g.Tensors[sr.tensor].Name, Producer: sr.owner, Consumers: sr.readers,
			Size: size(sr.tensor), Unordered: true})
		tensorWork = append(tensorWork, sr.tensor)
	}
	p.Bandwidth = bw
	p.Colocate = colocate
	k := len(devs)
	if opt.MaxStages > 0 {
		k = opt.MaxStages
	}
	var groups [][]int // cluster devices of each partition device
	work := func(d int) []float64 { return times[d] }
	if fb != nil {
		work = func(d int) []float64 { return fb.work(times[d]) }
	}
	if identical {
		p.Work = work(devs[0])
		if k > len(devs) {
			// Stages that share a device run in turn: the device is busy for the sum of their
			// times per inference, so the pipeline's period is the largest device load, not
			// the largest stage. One stage per device is what the model certifies.
			notes = append(notes, diag.Notef(diag.NoteCapped, "%s on %d devices: stages that share a device run in turn and add up their busy time per inference, so more stages than devices cannot be priced as a pipeline of separate stages; planned %d stages, one per device", opt.say("MaxStages", strconv.Itoa(k)), len(devs), len(devs)))
			k = len(devs)
		}
		p.K = k
		p.MemoryCap = usableCap(&run.c.Devices[devs[0]]) // less the workspace reserve
		groups = [][]int{devs}
	} else {
		// Group identical devices; each group is one partition device with a count.
		p.Work = work(devs[0])
		for _, d := range devs {
			placed := false
			for gi := range groups {
				if identicalDevices(run.c, []int{groups[gi][0], d}) {
					groups[gi] = append(groups[gi], d)
					placed = true
					break
				}
			}
			if !placed {
				groups = append(groups, []int{d})
			}
		}
		for _, grp := range groups {
			dev := &run.c.Devices[grp[0]]
			pd := partition.Device{Name: dev.Name, Count: len(grp), Work: work(grp[0])}
			pd.MemoryCap = usableCap(dev) // less the workspace reserve
			p.Devices = append(p.Devices, pd)
		}
		switch {
		case opt.MaxStages > 0 && opt.MaxStages < len(devs):
			return nil, diag.Usage("%s: a heterogeneous pipeline runs one stage on each of its %d devices; give %s (or leave %s out), name fewer devices, or use %s, which caps its stages at %s",
				opt.say("MaxStages", strconv.Itoa(opt.MaxStages)), len(devs), opt.say("MaxStages", strconv.Itoa(len(devs))), opt.name("MaxStages"), opt.say("Objective", string(Latency)), opt.name("MaxStages")).About(diag.Option, opt.name("MaxStages"))
		case opt.MaxStages > len(devs):
			notes = append(notes, diag.Notef(diag.NoteCapped, "%s on %d devices: stages that share a device run in turn and add up their busy time per inference, so more stages than devices cannot be priced as a pipeline of separate stages; planned %d stages, one per device", opt.say("MaxStages", strconv.Itoa(opt.MaxStages)), len(devs), len(devs)))
		}
	}
	return &pipeline{problem: p, groups: groups, tensorWork: tensorWork, workRe: workRe, fineRe: fineRe,
		latBW: latBW, folded: fb, calls: calls, notes: notes}, nil
}

// planThroughput plans a pipeline of the work graph on the run's devices (identical devices,
// or groups of identical ones) with package partition, cut as c says, and prices each
// stage's call: stages, objective, bounds, and a workload's per-phase figures.
func (run *run) planThroughput(ctx context.Context, c cuts) (*solution, error) {
	g, times, table, opt := run.work, run.times, run.table, run.opt
	pp, err := run.pipelineProblem(c.colocate)
	if err != nil {
		return nil, err
	}
	p, groups, workRe, fineRe, fb, calls := pp.problem, pp.groups, pp.workRe, pp.fineRe, pp.folded, pp.calls
	sol := &solution{notes: pp.notes}
	bounds, _ := partition.ParseBounds(string(opt.Bounds)) // checked with the options
	po := partition.Options{Seed: opt.Seed, TimeLimit: c.timeLimit, Gap: opt.Gap, Bounds: bounds,
		Polish: partition.PolishOptions{MaxWindow: opt.PolishWindow}}
	// Solve's window polish stops at its share of the clock; reproducible plans run it apart
	// (reproduciblePolish) and keep it only when it ends.
	po.NoPolish = opt.Reproducible
	mipBounds := opt.Reproducible && (bounds == partition.BoundsFast || bounds == partition.BoundsFull)
	if mipBounds {
		// Solve's MIP bounds run on the clock; they are run below, and kept when they finish.
		po.Bounds = partition.BoundsSimple
	}
	switch opt.Solver { // one of pipelineSolvers (options)
	case "", SolverAuto, SolverBRKGA:
		po.Search = partition.SearchBRKGA
	case SolverRandom:
		po.Search = partition.SearchRandom
	case SolverMLA:
		po.Search = partition.SearchMLAWeighted
	}
	// Every stage is one runtime call per inference (session run, synchronisation, the
	// hand-off through the host): a non-empty stage on device d also costs the device's run
	// overhead c_d. The partition is solved without it, then priced: each stage's total and
	// the objective include c_d, and every bound rises by c_min = min_d c_d over the devices
	// the pipeline may use, which stays a lower bound: for any plan, max over non-empty stages
	// of (f_s + c_s) ≥ max_s f_s + c_min ≥ OPT_unpriced + c_min. With identical devices the
	// shift is exact, so a proved optimum stays proved for the priced objective.
	callOf := make([]float64, len(groups))
	callMin := math.Inf(1)
	for gi, grp := range groups {
		callOf[gi] = calls * table.RunOverhead[grp[0]] // one call per phase call
		callMin = math.Min(callMin, callOf[gi])
	}
	if math.IsInf(callMin, 1) {
		callMin = 0
	}
	if c.progress != nil {
		po.Progress = func(pr partition.Progress) {
			obj, lb := pr.Objective+callMin, pr.LowerBound+callMin
			c.progress(Progress{Phase: pr.Phase, Objective: obj, LowerBound: lb, Gap: partition.Gap(lb, obj), Elapsed: pr.Elapsed})
		}
	}
	plan, err := partition.Solve(ctx, p, po)
	if err != nil {
		return nil, err
	}
	if opt.Reproducible && ctx.Err() != nil {
		sol.notes = append(sol.notes, clockCutNote(&opt))
	}
	if opt.Reproducible && ctx.Err() == nil {
		plan = reproduciblePolish(ctx, p, plan, po, &sol.notes)
	}
	if mipBounds {
		plan = reproducibleMIPBounds(ctx, p, plan, bounds, opt.Gap)
	}
	for _, b := range plan.Bounds {
		if b.Status == "error" { // partition keeps going without saying so
			plan.Notes = append(plan.Notes, diag.Notef(diag.NoteFault, "solver fault: HiGHS failed on the %s MIP; the plan is the heuristics' and the bound the best of the others", b.Method))
		}
	}
	sol.partition = plan
	sol.algorithm = "mtpp-" + po.Search
	// Stage labels are pipeline positions; each gets a cluster device.
	used := make([]int, len(groups))
	labelDevice := make([]int, len(plan.Stages))
	upper := 0.0
	for s := range plan.Stages {
		gi := 0
		if s < len(plan.StageDevice) {
			gi = plan.StageDevice[s]
		}
		grp := groups[gi]
		labelDevice[s] = grp[used[gi]%len(grp)]
		used[gi]++
		sc := plan.StageCosts[s]
		ops := len(plan.Stages[s])
		call := 0.0
		if ops > 0 {
			call = callOf[gi]
		}
		dt := times[labelDevice[s]]
		extra := recomputeExtra(g, workRe, plan.Assignment, s, func(w int) float64 { return dt[w] })
		io := 0.0 // graph inputs and outputs folded into the work: shown as communication
		if fb != nil {
			for w, st := range plan.Assignment {
				if st == s {
					io += fb.folded[w]
				}
			}
		}
		sol.stages = append(sol.stages, StageSummary{Stage: s, Device: run.c.Devices[labelDevice[s]].Name, Ops: ops,
			ParamBytes: int64(sc.Params), ComputeS: sc.Work - io + extra, CommS: sc.Comm + sc.Overflow + io, CallS: call, TotalS: sc.Total + call + extra})
		sol.latencyS += sc.Total + call + extra
		upper = math.Max(upper, sc.Total+call+extra)
	}
	sol.upper, sol.lower, sol.boundMethod = upper, math.Min(plan.LowerBound+callMin, upper), plan.BoundMethod
	for _, b := range plan.Bounds {
		v := b.Value
		if v > 0 {
			v += callMin
		}
		sol.bounds = append(sol.bounds, emit.BoundValue{Method: b.Method, LowerBoundS: v, Seconds: round6(b.Seconds)})
	}
	sol.notes = append(sol.notes, plan.Notes...)
	if upper > 0 {
		sol.throughputPerS = 1 / upper
	}
	markBottleneck(sol.stages)
	if len(run.phaseCosts) > 0 {
		one := make([]float64, len(callOf))
		for gi, grp := range groups {
			one[gi] = table.RunOverhead[grp[0]]
		}
		figs, err := run.phaseFigures(pp, plan, one, labelDevice)
		if err != nil {
			return nil, err
		}
		sol.workload = figs
		// A request's calls run one after another (each decode step needs the previous one):
		// its latency is the sum of its calls'.
		sol.latencyS = 0
		for _, f := range figs {
			sol.latencyS += f.Weight * f.LatencyS
		}
	}
	sol.recompute = fineRe
	if fineRe != nil {
		n := 0
		for _, x := range fineRe {
			if x {
				n++
			}
		}
		sol.notes = append(sol.notes, diag.Notef(diag.NoteInfo, "%d nodes computing tensors every block reads from the model's inputs (masks, rotary tables) are computed again in each stage that reads them, which costs less than sending their outputs", n))
	}
	sol.workStage, sol.labelDevice = plan.Assignment, labelDevice
	return sol, nil
}

// reproducibleMIPBounds adds partition's MIP bounds to plan (the exact MIP; with BoundsFull
// first the bottleneck MIPs, as Solve orders them) and keeps each one only if it finished:
// a finished MIP's bound and plan are functions of its input, one the deadline stopped are
// not. A finished exact MIP may also bring a better plan.
func reproducibleMIPBounds(ctx context.Context, p *partition.Problem, plan *partition.Plan, effort partition.BoundEffort, gap float64) *partition.Plan {
	if p.NumNodes()*p.NumStages() > 400000 { // Solve's own limit (on contracted nodes)
		plan.Notes = append(plan.Notes, diag.Notef(diag.NoteSkipped, "MIP bounds skipped: %d nodes × %d stages is too large", p.NumNodes(), p.NumStages()))
		return plan
	}
	methods := []string{partition.BoundExact}
	if effort == partition.BoundsFull && len(p.Devices) <= 1 {
		methods = []string{partition.BoundBottleneck, partition.BoundBottleneckGuess, partition.BoundExact}
	}
	for _, method := range methods {
		if partition.Gap(plan.LowerBound, plan.Objective) <= gap+1e-9 || ctx.Err() != nil {
			break
		}
		limit := time.Duration(0) // LowerBound's default (60 s), or what the deadline leaves
		if d, ok := ctx.Deadline(); ok {
			limit = time.Until(d)
			if limit <= 0 {
				break
			}
		}
		// Gap 0 would make LowerBound's exact MIP target twice the incumbent with no warm
		// start (its internal Gap of −1 leaks into the target): twice as slow on BERT as
		// Solve's. A 1e-9 target cuts off at the incumbent and proves it within 1e-9.
		info, better, err := partition.LowerBound(ctx, p, plan, method, partition.BoundOptions{TimeLimit: limit, Gap: math.Max(gap, 1e-9), Parallel: 1})
		switch {
		case err != nil:
			plan.Notes = append(plan.Notes, diag.Notef(diag.NoteFault, "%s bound: %v", method, err))
			continue
		case info.Status == "fault":
			plan.Bounds = append(plan.Bounds, info)
			plan.Notes = append(plan.Notes, diag.Notef(diag.NoteFault, "solver fault: the %s bound exceeds the plan's value; bound discarded", method))
			continue
		case info.Status == "error":
			plan.Bounds = append(plan.Bounds, info) // noted by the caller, as for Solve's own MIPs
			continue
		case info.Status != "optimal" && info.Status != "infeasible" && info.Status != "fixings-infeasible":
			plan.Notes = append(plan.Notes, diag.Notef(diag.NoteCapped, "%s bound: the MIP did not finish (%s); left out so that the output is reproducible", method, info.Status))
			continue
		}
		info.Seconds = 0 // not reproducible, and the manifest leaves timings out anyway
		plan.Bounds = append(plan.Bounds, info)
		if better != nil && better.Objective < plan.Objective {
			better.Bounds, better.Notes = plan.Bounds, plan.Notes
			better.LowerBound, better.BoundMethod = plan.LowerBound, plan.BoundMethod
			plan = better
		}
		if info.Value > plan.LowerBound {
			plan.LowerBound, plan.BoundMethod = math.Min(info.Value, plan.Objective), method
		}
	}
	plan.Gap = partition.Gap(plan.LowerBound, plan.Objective)
	return plan
}

func markBottleneck(st []StageSummary) {
	b := -1
	for i := range st {
		if st[i].Ops > 0 && (b < 0 || st[i].TotalS > st[b].TotalS) {
			b = i
		}
	}
	if b >= 0 {
		st[b].Bottleneck = true
	}
}

// --- latency: heterogeneous placement ---------------------------------------------------

// reproduciblePolish runs the window polish on a reproducible plan with a third of the time
// left and keeps its plan only when it ran to its end (its effort is capped by work, so the
// plan is then a function of the inputs); otherwise it says so in a note.
func reproduciblePolish(ctx context.Context, p *partition.Problem, plan *partition.Plan, po partition.Options, notes *[]diag.Note) *partition.Plan {
	if plan.Gap <= po.Gap+1e-9 {
		return plan
	}
	pctx, cancel := ctx, context.CancelFunc(func() {})
	if d, ok := ctx.Deadline(); ok {
		pctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(d)/3))
	}
	defer cancel()
	polished, done, err := partition.Polish(pctx, p, plan, po)
	switch {
	case err != nil:
		*notes = append(*notes, diag.Notef(diag.NoteFault, "window polish failed (%v); the plan is the search's", err))
	case !done:
		*notes = append(*notes, diag.Notef(diag.NoteCapped, "window polish: did not finish within its share of the time limit; left out so that the output is reproducible"))
	default:
		return polished
	}
	return plan
}
