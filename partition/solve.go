package partition

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"sync"
	"time"

	"github.com/onnxpart/onnxpart/diag"
)

// Solve partitions p into pipeline stages: SliceGraph over orders found by the chosen search,
// refinement beyond slicing, and lower bounds up to opts.Bounds. It returns the best plan
// found (also when ctx is cancelled or the time limit expires, as long as one plan exists)
// with its certified lower bound and gap.
func Solve(ctx context.Context, p *Problem, opts Options) (*Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := opts.Polish.Validate(); err != nil {
		return nil, fmt.Errorf("partition: %w", err)
	}
	t0 := time.Now()
	if opts.TimeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.TimeLimit)
		defer cancel()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := compile(p)
	st := &solveState{p: p, c: c, t0: t0, opts: opts, cancel: cancel, best: math.Inf(1)}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	rng := rand.New(rand.NewSource(opts.Seed))
	e := newEngine(c, workers)
	r := &solveRun{st: st, e: e, rng: rng, workers: workers}
	for _, ph := range solvePhases {
		if ph.when != nil && !ph.when(r) {
			continue
		}
		t := time.Now()
		if !math.IsInf(st.best, 1) && ctx.Err() == nil { // the phase shows in the progress
			st.mu.Lock()
			st.report(ph.name)
			st.mu.Unlock()
			st.flush()
		}
		err := ph.run(ctx, r)
		st.mu.Lock()
		st.phases = append(st.phases, PhaseTime{Name: ph.name, Seconds: time.Since(t).Seconds()})
		st.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	return st.plan(time.Since(t0)), nil
}

// solveRun is what the phases of Solve share.
type solveRun struct {
	st      *solveState
	e       *engine
	rng     *rand.Rand
	workers int
	proved  bool // the exact DP over ideals completed: the plan is optimal
}

// done reports that nothing is left to gain: the DP proved the plan optimal, the context
// ended, or the gap is closed.
func (r *solveRun) done(ctx context.Context) bool {
	return r.proved || ctx.Err() != nil || r.st.gapLocked() <= r.st.opts.Gap+1e-9
}

// solvePhase is one step of Solve, in the manner of a compiler's pass list: a name (used in
// progress reports and in Plan.Phases with its time), a condition and the work.
type solvePhase struct {
	name string
	when func(*solveRun) bool
	run  func(context.Context, *solveRun) error
}

// solvePhases is Solve, in order. Bounds come first (microseconds, and they may close the
// gap at once), then plans: start orders, a proved infeasibility or a first plan, refinement,
// the exact DP on narrow graphs, the order search, the window polish, and last the MIP bounds
// beside further searches.
var solvePhases = []solvePhase{
	{name: "combinatorial-bounds", when: func(r *solveRun) bool { return r.st.opts.Bounds != BoundsNone }, run: phaseCombinatorial},
	{name: "start-orders", run: phaseStartOrders},
	{name: "first-plan", when: func(r *solveRun) bool { return math.IsInf(r.st.best, 1) }, run: func(ctx context.Context, r *solveRun) error {
		return r.e.findFirstPlan(ctx, r.st, r.rng)
	}},
	{name: "refine", when: func(r *solveRun) bool { return !r.st.opts.NoRefine }, run: func(ctx context.Context, r *solveRun) error {
		r.e.refineIncumbent(ctx, r.st, "refine")
		return nil
	}},
	// Too many device kinds for the count lattice: improve the fixed device order.
	{name: "device-order", when: func(r *solveRun) bool { return r.e.a.order != nil }, run: func(ctx context.Context, r *solveRun) error {
		if ctx.Err() == nil {
			r.e.improveDeviceOrder(ctx, r.st)
		}
		return nil
	}},
	// Exact DP over ideals, for narrow graphs (gives up quickly on wide ones).
	{name: BoundIdealDP, run: func(ctx context.Context, r *solveRun) error {
		if ctx.Err() == nil && r.st.gapLocked() > r.st.opts.Gap+1e-9 {
			r.proved = r.e.exactIdeals(ctx, r.st)
		}
		return nil
	}},
	// Order search: the first run gets every worker.
	{name: "search", run: func(ctx context.Context, r *solveRun) error {
		if !r.done(ctx) {
			r.e.search(ctx, r.st, r.rng, r.workers, r.st.opts.BRKGA)
		}
		return nil
	}},
	// Window polish of the search's plan, before the MIP bounds (whose variable fixings and
	// warm start profit from a better incumbent), with at most a third of the time left.
	{name: "polish", when: func(r *solveRun) bool { return !r.st.opts.NoPolish && r.e.c.directionalBoundsSound() }, run: phasePolish},
	{name: "mip-bounds", run: phaseMIPBounds},
}

// phaseCombinatorial computes Lemma 3.3 and the communication-aware bounds.
func phaseCombinatorial(ctx context.Context, r *solveRun) error {
	st := r.st
	for _, b := range r.e.c.combinatorialBounds(ctx) {
		if b.Status == "partial" {
			st.notes = append(st.notes, diag.Notef(diag.NoteCapped, "%s bound stopped early by its time or work budget (%.2f s); its value %.6g is valid but may be weaker than the full bound", b.Method, b.Seconds, b.Value))
		}
		st.bounds = append(st.bounds, b)
		if b.Value > st.lb {
			st.lb, st.lbMethod = b.Value, b.Method
		}
	}
	return nil
}

// phaseStartOrders slices the deterministic starting orders.
func phaseStartOrders(ctx context.Context, r *solveRun) error {
	for _, h := range r.e.c.startOrders() {
		if ctx.Err() != nil && !math.IsInf(r.st.best, 1) {
			break
		}
		stage, dev, val := r.e.sliceFull(0, h.order)
		if math.IsInf(val, 1) {
			continue
		}
		r.st.offerPlan(stage, dev, h.order, h.name)
	}
	return nil
}

// phasePolish runs the window polish within a third of the time left.
func phasePolish(ctx context.Context, r *solveRun) error {
	if r.done(ctx) {
		return nil
	}
	pctx, pcancel := ctx, context.CancelFunc(func() {})
	if d, ok := ctx.Deadline(); ok {
		pctx, pcancel = context.WithDeadline(ctx, time.Now().Add(time.Until(d)/3))
	}
	r.e.polishIncumbent(pctx, r.st)
	pcancel()
	return nil
}

// phaseMIPBounds runs the MIP bounds (HiGHS's branch and bound is serial) next to further
// order searches on the remaining workers.
func phaseMIPBounds(ctx context.Context, r *solveRun) error {
	st, e, opts := r.st, r.e, r.st.opts
	var wg sync.WaitGroup
	mipDone := make(chan struct{})
	mips := opts.Bounds == BoundsFast || opts.Bounds == BoundsFull
	if !e.c.directionalBoundsSound() && mips {
		st.note(diag.NoteSkipped, "cost-only (backward) tensors: the MIP bounds and the window polish assume every tensor orders its stages, so they were not run; the bound is Lemma 3.3 or the exact DP over ideals")
	}
	if !r.done(ctx) && mips && e.c.directionalBoundsSound() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(mipDone)
			e.mipBounds(ctx, st)
		}()
	} else {
		close(mipDone)
	}
	restarts := opts.Restarts
	if restarts < 0 && opts.TimeLimit <= 0 {
		restarts = 0
	}
	for run := 1; (restarts < 0 || run <= restarts) && !r.done(ctx); run++ {
		w := r.workers
		select {
		case <-mipDone:
		default:
			w = max(1, r.workers-1)
		}
		e.search(ctx, st, rand.New(rand.NewSource(opts.Seed+int64(run)*7919)), w, opts.BRKGA)
	}
	wg.Wait()
	return nil
}

// plan assembles the result.
func (s *solveState) plan(elapsed time.Duration) *Plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.p
	assign := s.c.expand(s.stage)
	costs, obj, _ := p.Evaluate(assign, s.device)
	K := len(s.device)
	pl := &Plan{Objective: obj, LowerBound: s.lb, BoundMethod: s.lbMethod, Assignment: assign,
		StageDevice: append([]int(nil), s.device...), StageCosts: costs, Bounds: append([]BoundInfo(nil), s.bounds...),
		Seconds: elapsed.Seconds(), Algorithm: s.algorithm(), Seed: s.opts.Seed, Evaluations: s.evals,
		Notes: append([]diag.Note(nil), s.notes...), Phases: append([]PhaseTime(nil), s.phases...)}
	if s.opts.Bounds == BoundsNone {
		pl.BoundMethod = "none"
	}
	if pl.LowerBound > obj {
		pl.LowerBound = obj
	}
	pl.Gap = Gap(pl.LowerBound, obj)
	pl.Stages = make([][]int, K)
	for v, sidx := range assign {
		pl.Stages[sidx] = append(pl.Stages[sidx], v)
	}
	for i := range pl.Stages {
		if pl.Stages[i] == nil {
			pl.Stages[i] = []int{}
		}
	}
	devs := p.devices()
	for _, d := range s.device {
		pl.StageDeviceNames = append(pl.StageDeviceNames, devs[d].Name)
	}
	if len(p.NodeNames) > 0 {
		pl.StageNodeNames = make([][]string, K)
		for i, nodes := range pl.Stages {
			pl.StageNodeNames[i] = []string{}
			for _, v := range nodes {
				pl.StageNodeNames[i] = append(pl.StageNodeNames[i], p.NodeNames[v])
			}
		}
	}
	return pl
}

func (s *solveState) algorithm() string {
	search := s.opts.Search
	if search == "" {
		search = SearchBRKGA
	}
	a := "slicegraph+" + search
	if !s.opts.NoRefine {
		a += "+refine"
	}
	if !s.opts.NoPolish && s.c.directionalBoundsSound() {
		a += "+lns"
	}
	return a + " (best from " + s.source + ")"
}

// minBlockOps caps the arc scans of one min-block computation (a few seconds at most), so
// that it stays cheap and deterministic on long chains, where each minimum cut needs many
// Dinic phases.
const minBlockOps = 300_000_000

// minBlockCtx gives min-block at most a tenth of the time left before ctx's deadline.
func minBlockCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithTimeout(ctx, time.Until(d)/10)
	}
	return context.WithCancel(ctx)
}

// combinatorialBounds computes Lemma 3.3 and the communication-aware bounds. min-block is
// the only one that can take long; it stops at its budget (minBlockCtx, minBlockOps) with
// Status "partial" and a value that is still proved.
func (c *core) combinatorialBounds(ctx context.Context) []BoundInfo {
	t := time.Now()
	simple := c.simpleBound()
	out := []BoundInfo{{Method: BoundSimple, Value: simple, Status: "proved", Seconds: time.Since(t).Seconds()}}
	if !c.directionalBoundsSound() {
		return out
	}
	t = time.Now()
	node := c.nodeBound()
	out = append(out, BoundInfo{Method: BoundNode, Value: node, Status: "proved", Seconds: time.Since(t).Seconds()})
	t = time.Now()
	mctx, cancel := minBlockCtx(ctx)
	mb, complete := c.minBlockBound(mctx, node, 64, minBlockOps)
	cancel()
	mb *= 1 - 1e-12
	status := "proved"
	if !complete {
		status = "partial"
	}
	out = append(out, BoundInfo{Method: BoundMinBlock, Value: mb, Status: status, Seconds: time.Since(t).Seconds()})
	t = time.Now()
	cut := c.cutBound(math.Max(simple, math.Max(node, mb)))
	out = append(out, BoundInfo{Method: BoundCut, Value: cut, Status: "proved", Seconds: time.Since(t).Seconds()})
	return out
}

// namedOrder is a starting order for the search.
type namedOrder struct {
	name  string
	order []int32
}

// startOrders returns deterministic topological orders: the model order (Kahn, ties by node
// id), a depth-first order (finish a branch before starting the next, which keeps producers
// near their consumers) and a breadth-first (level) order.
func (c *core) startOrders() []namedOrder {
	var ks kahnScratch
	model := c.kahn(make([]float64, c.n), &ks, make([]int32, 0, c.n))
	// Depth-first: a stack of ready nodes, most recently readied first.
	indeg := make([]int32, c.n)
	var stack []int32
	for v := c.n - 1; v >= 0; v-- {
		indeg[v] = c.predS[v+1] - c.predS[v]
		if indeg[v] == 0 {
			stack = append(stack, int32(v))
		}
	}
	dfs := make([]int32, 0, c.n)
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		dfs = append(dfs, v)
		succ := c.succOf(int(v))
		for i := len(succ) - 1; i >= 0; i-- {
			w := succ[i]
			indeg[w]--
			if indeg[w] == 0 {
				stack = append(stack, w)
			}
		}
	}
	// Level order: priority −(longest path from a source).
	level := make([]float64, c.n)
	for _, v := range model {
		for _, w := range c.succOf(int(v)) {
			if level[w] < level[v]+1 {
				level[w] = level[v] + 1
			}
		}
	}
	for v := range level {
		level[v] = -level[v]
	}
	bfs := c.kahn(level, &ks, make([]int32, 0, c.n))
	return []namedOrder{{"model-order", model}, {"dfs-order", dfs}, {"level-order", bfs}}
}

// SliceGraph is seed 000's SliceGraph(G, k, x) (Algorithms 1 and 3): Kahn's algorithm with
// the node priorities x (highest first, ties by node index; len = number of nodes; nil:
// model order) gives a topological order of p's nodes (colocation groups contracted), which is
// cut optimally into at most K contiguous stages. It returns the stage of every node, the
// device of every stage and the objective recomputed by Evaluate.
func SliceGraph(p *Problem, x []float64) (stage, device []int, value float64, err error) {
	if err := p.Validate(); err != nil {
		return nil, nil, 0, err
	}
	if x != nil && len(x) != p.NumNodes() {
		return nil, nil, 0, fmt.Errorf("partition: %d priorities for %d nodes", len(x), p.NumNodes())
	}
	c := compile(p)
	prio := make([]float64, c.n)
	if x != nil {
		// A contracted node takes the highest priority of its members.
		for g := range prio {
			prio[g] = math.Inf(-1)
		}
		for v, g := range c.group {
			prio[g] = math.Max(prio[g], x[v])
		}
	}
	var ks kahnScratch
	order := c.kahn(prio, &ks, make([]int32, 0, c.n))
	e := newEngine(c, 1)
	cs, dev, val := e.sliceFull(0, order)
	if math.IsInf(val, 1) {
		return nil, nil, 0, infeasible("no slicing of the order satisfies the memory caps")
	}
	stage = c.expand(cs)
	_, value, err = p.Evaluate(stage, dev)
	return stage, dev, value, err
}
