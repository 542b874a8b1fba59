package partition

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/onnxpart/onnxpart/diag"
)

// BoundEffort selects which lower bounds Solve computes.
type BoundEffort int

// Bound efforts, cheapest first. The zero value is BoundsFast.
const (
	BoundsFast   BoundEffort = iota // combinatorial bounds, then the exact MIP (warm-started)
	BoundsNone                      // no lower bound (LowerBound 0, Gap 1)
	BoundsSimple                    // Lemma 3.3 and the communication-aware bounds (microseconds)
	BoundsFull                      // everything: also the bottleneck and bottleneck-guess MIPs
)

// ParseBounds maps the CLI names none|simple|fast|full to a BoundEffort.
func ParseBounds(s string) (BoundEffort, error) {
	switch s {
	case "none":
		return BoundsNone, nil
	case "simple":
		return BoundsSimple, nil
	case "fast", "":
		return BoundsFast, nil
	case "full":
		return BoundsFull, nil
	}
	return 0, fmt.Errorf("partition: unknown bound effort %q (want none, simple, fast or full)", s)
}

// String is the CLI name of the effort.
func (b BoundEffort) String() string {
	switch b {
	case BoundsNone:
		return "none"
	case BoundsSimple:
		return "simple"
	case BoundsFull:
		return "full"
	}
	return "fast"
}

// Search names the order-search heuristics (seed 000 §4.2).
const (
	SearchBRKGA       = "brkga"        // BRKGA over node priorities (default)
	SearchRandom      = "random"       // random-T: T = population × generations random priorities
	SearchMLAWeighted = "mla-weighted" // BRKGA minimising the tensor-weighted linear arrangement
	SearchMLA         = "mla"          // the same with unit weights
)

// Options control Solve. The zero value is usable: seed 0, no overall time limit, BRKGA
// with the seed-000 budget (10^4 evaluations), refinement on, combinatorial bounds plus the
// exact MIP with a 60 s limit.
type Options struct {
	Seed int64
	// TimeLimit bounds the whole solve (heuristics and MIPs); 0: none. When it expires, the
	// best plan so far is returned with the bounds proved so far.
	TimeLimit time.Duration
	// Gap stops everything as soon as 1 − lower/upper ≤ Gap (0: never early).
	Gap float64
	// Bounds picks the lower-bound effort.
	Bounds BoundEffort
	// BoundGap is the relative gap at which the MIP bounds stop: they then prove that no plan
	// is below (1 − BoundGap)·incumbent instead of proving the incumbent optimal, which is much
	// cheaper. 0: Gap. The search still runs to its own end (or Gap).
	BoundGap float64
	// Workers is the number of goroutines decoding chromosomes; 0: GOMAXPROCS. The search's
	// results do not depend on it. With two or more, the exact bound of a homogeneous
	// pipeline runs the warm-started MIP and the probes side by side (its bound, like any
	// MIP's stopped by the clock, depends on the machine).
	Workers int
	// Search is the order search: SearchBRKGA (default), SearchRandom, SearchMLAWeighted, SearchMLA.
	Search string
	BRKGA  BRKGAOptions
	// Restarts runs that many extra searches (seeds derived from Seed, seeded with the
	// incumbent) after the first, next to the MIP bounds; −1: until TimeLimit (ignored
	// without one).
	Restarts int
	// NoRefine turns off the refinement beyond slicing (node moves and re-slicing).
	NoRefine bool
	// NoPolish turns off the window polish after the first search (lns.go: exact sub-MIPs
	// over consecutive stages around the bottleneck, capped by branch-and-bound nodes so
	// that it is deterministic).
	NoPolish bool
	// Polish sets the window polish's effort; the zero value keeps the defaults that
	// PolishOptions documents.
	Polish PolishOptions
	// MIPTimeLimit caps each MIP method (exact; bottleneck; all of bottleneck-guess); 0: 60 s,
	// or what is left of TimeLimit.
	MIPTimeLimit time.Duration
	// Progress, when set, is called (serialised) each time the plan or the bound improves.
	Progress func(Progress)
}

// Progress is a snapshot reported to Options.Progress.
type Progress struct {
	Phase       string  // "heuristic", "brkga", "refine", a bound name
	Objective   float64 // best plan so far
	LowerBound  float64
	BoundMethod string
	Gap         float64
	Elapsed     time.Duration
	Evaluations int64
}

// BoundInfo is one computed lower bound.
type BoundInfo struct {
	Method  string  `json:"method"`
	Value   float64 `json:"value"`
	Status  string  `json:"status"` // "proved", or the MIP status (optimal, time-limit, …)
	Seconds float64 `json:"seconds"`
}

// Plan is Solve's result, ready for JSON.
type Plan struct {
	Objective   float64 `json:"objective"`    // max stage cost, recomputed by Problem.Evaluate
	LowerBound  float64 `json:"lower_bound"`  // best proved lower bound on the optimum
	BoundMethod string  `json:"bound_method"` // the method that proved it
	Gap         float64 `json:"gap"`          // 1 − LowerBound/Objective (0 when both are 0)
	// Stages lists the node indices of each pipeline stage, in pipeline order.
	Stages [][]int `json:"stages"`
	// StageNodeNames gives the same with Problem.NodeNames (when names are set).
	StageNodeNames [][]string `json:"stage_node_names,omitempty"`
	// StageDevice is the device index (into Problem.Devices, 0 when homogeneous) of each stage.
	StageDevice []int `json:"stage_device"`
	// StageDeviceNames gives the device names.
	StageDeviceNames []string    `json:"stage_device_names"`
	StageCosts       []StageCost `json:"stage_costs"`
	// Assignment is the stage of each node.
	Assignment  []int       `json:"assignment"`
	Bounds      []BoundInfo `json:"bounds"`
	Seconds     float64     `json:"seconds"`
	Algorithm   string      `json:"algorithm"`
	Seed        int64       `json:"seed"`
	Evaluations int64       `json:"evaluations"`
	// Notes record solver faults that were caught and everything else a reader should know.
	Notes []string `json:"notes,omitempty"`
	// Phases lists the phases Solve ran, in order, with their wall time.
	Phases []PhaseTime `json:"phases,omitempty"`
}

// PhaseTime is the wall time of one phase of Solve.
type PhaseTime struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// Gap is the relative gap of a certificate, 1 − lower/upper, clamped to [0, 1]: 0 when the
// bound meets the plan (also when both are 0), 1 when nothing is proved. It is the one gap
// function of onnxpart: the plans, the manifest and the progress lines all use it.
func Gap(lower, upper float64) float64 {
	if upper <= 0 {
		if lower >= upper {
			return 0
		}
		return 1
	}
	g := 1 - lower/upper
	if g < 0 {
		return 0
	}
	if g > 1 {
		return 1
	}
	return g
}

// solveState is the incumbent and the bounds, shared by the goroutines of one Solve.
type solveState struct {
	mu       sync.Mutex
	p        *Problem
	c        *core
	t0       time.Time
	opts     Options
	cancel   context.CancelFunc
	best     float64
	stage    []int // core stage of the incumbent
	device   []int
	order    []int32 // an order whose slicing gives the incumbent (when known)
	source   string
	lb       float64
	lbMethod string
	bounds   []BoundInfo
	phases   []PhaseTime
	notes    []string
	evals    int64
	pending  []Progress
	cbMu     sync.Mutex // serialises Progress calls
}

func (s *solveState) gap() float64 { return Gap(s.lb, s.best) }

func (s *solveState) gapLocked() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gap()
}

// report queues a progress snapshot (s.mu held); flush delivers queued snapshots in order,
// outside the lock, so that the callback may do anything but call back into this solve.
func (s *solveState) report(phase string) {
	if s.opts.Progress == nil {
		return
	}
	s.pending = append(s.pending, Progress{Phase: phase, Objective: s.best, LowerBound: s.lb, BoundMethod: s.lbMethod,
		Gap: s.gap(), Elapsed: time.Since(s.t0), Evaluations: s.evals})
}

func (s *solveState) flush() {
	if s.opts.Progress == nil {
		return
	}
	s.cbMu.Lock()
	defer s.cbMu.Unlock()
	s.mu.Lock()
	queued := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, pr := range queued {
		s.opts.Progress(pr)
	}
}

func (s *solveState) checkGap() {
	if s.gap() <= s.opts.Gap+1e-9 && s.cancel != nil {
		s.cancel()
	}
}

// offerPlan judges a core plan with Problem.Evaluate and keeps it if it is strictly better.
func (s *solveState) offerPlan(stage, device []int, order []int32, source string) bool {
	defer s.flush()
	_, val, err := s.p.Evaluate(s.c.expand(stage), device)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.notes = append(s.notes, fmt.Sprintf("internal: %s produced an invalid plan (%v); discarded", source, err))
		return false
	}
	if !(val < s.best) {
		return false
	}
	s.best = val
	s.stage = append([]int(nil), stage...)
	s.device = append([]int(nil), device...)
	s.order = append([]int32(nil), order...)
	s.source = source
	s.report(source)
	s.checkGap()
	return true
}

// mipTol is how far above the incumbent a MIP's bound may come without being a fault. The
// models are scaled by the incumbent's value, so HiGHS's feasibility tolerances (1e-7 primal,
// 1e-6 integrality) put its dual bound up to about 1e-6 of the incumbent above the true
// optimum (3.9e-7 measured on a REGAL-like graph at k = 2 whose plan is optimal); such a bound
// proves the incumbent optimal within the tolerance and is taken as its value.
const mipTol = 1e-6

// offerBound records a lower bound; one above the incumbent by more than mipTol is a solver
// fault and is dropped.
func (s *solveState) offerBound(b BoundInfo) {
	defer s.flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	if math.IsNaN(b.Value) || math.IsInf(b.Value, 0) {
		b.Value, b.Status = 0, "no-bound"
	}
	if b.Value > s.best*(1+mipTol)+1e-12 {
		s.notes = append(s.notes, fmt.Sprintf("solver fault: %s bound %.10g exceeds the plan value %.10g; bound discarded", b.Method, b.Value, s.best))
		b.Status = "fault"
		b.Value = 0
		s.bounds = append(s.bounds, b)
		return
	}
	b.Value = math.Min(b.Value, s.best) // above it only within the tolerance: the plan is optimal
	s.bounds = append(s.bounds, b)
	if b.Value > s.lb {
		s.lb = b.Value
		s.lbMethod = b.Method
		if s.lb > s.best {
			s.lb = s.best
		}
		s.report(b.Method)
		s.checkGap()
	}
}

func (s *solveState) note(format string, a ...any) {
	s.mu.Lock()
	s.notes = append(s.notes, fmt.Sprintf(format, a...))
	s.mu.Unlock()
}

func (s *solveState) snapshot() (best float64, stage, device []int, order []int32, lb float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.best, append([]int(nil), s.stage...), append([]int(nil), s.device...), append([]int32(nil), s.order...), s.lb
}

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
			st.notes = append(st.notes, fmt.Sprintf("%s bound stopped early by its time or work budget (%.2f s); its value %.6g is valid but may be weaker than the full bound", b.Method, b.Seconds, b.Value))
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
		st.note("cost-only (backward) tensors: the MIP bounds and the window polish assume every tensor orders its stages, so they were not run; the bound is Lemma 3.3 or the exact DP over ideals")
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
		Notes: append([]string(nil), s.notes...), Phases: append([]PhaseTime(nil), s.phases...)}
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

// engine owns the per-worker scratch of the slicing DP.
type engine struct {
	c       *core
	a       *automaton
	slicers []*slicer
	kahns   []kahnScratch
	orders  [][]int32
	workers int
	lower   float64 // start of the bound deepening
	// maxIdeals caps the ideals enumerated by one pair re-split.
	maxIdeals int
}

func newEngine(c *core, workers int) *engine {
	a := countAutomaton(c.counts)
	if a == nil {
		// Too many device kinds for the count lattice: fix the device order (stages of each
		// device kept together, in the order given).
		var order []int
		for d, k := range c.counts {
			for i := 0; i < k; i++ {
				order = append(order, d)
			}
		}
		a = chainAutomaton(order)
	}
	e := &engine{c: c, a: a, workers: workers, lower: c.simpleBound(), maxIdeals: 20000}
	// One slicer per worker plus one for the search goroutine's own reconstructions.
	for i := 0; i <= workers; i++ {
		e.slicers = append(e.slicers, newSlicer(c, a))
		e.kahns = append(e.kahns, kahnScratch{})
		e.orders = append(e.orders, make([]int32, 0, c.n))
	}
	return e
}

// slice returns the optimal slicing value of order below bound (+Inf if none); with an
// infinite bound it deepens a finite one from the simple lower bound, which keeps the
// pruned sweep fast while staying exact.
func (e *engine) slice(w int, order []int32, bound float64) float64 {
	s := e.slicers[w]
	if !math.IsInf(bound, 1) {
		return s.run(order, bound)
	}
	b := e.lower * 1.05
	if b <= 0 {
		b = 1e-300
	}
	for i := 0; i < 64; i++ {
		if v := s.run(order, b); !math.IsInf(v, 1) {
			return v
		}
		b *= 1.6
		if b > 1e300 {
			break
		}
	}
	return s.run(order, math.Inf(1))
}

// sliceFull slices order with worker w's slicer and reconstructs the plan.
func (e *engine) sliceFull(w int, order []int32) (stage, device []int, val float64) {
	val = e.slice(w, order, math.Inf(1))
	if math.IsInf(val, 1) {
		return nil, nil, val
	}
	stage, device = e.slicers[w].segments(order)
	return stage, device, val
}

// refine improves (stage, device) by node moves and re-slicing the induced order, until
// neither helps. It returns the refined plan, an order whose slicing gives it, and its value
// as computed by the refiner.
func (e *engine) refine(ctx context.Context, w int, stage, device []int, order []int32) ([]int, []int, []int32, float64) {
	c := e.c
	var ks kahnScratch
	rs := newResplitter(c, e.maxIdeals)
	val := math.Inf(1)
	for iter := 0; iter < 50 && ctx.Err() == nil; iter++ {
		r := newRefiner(c, stage, device)
		moved := r.run(ctx, 20*c.n+100) > 0
		cur := r.stage
		// Exact re-splits of adjacent stage pairs (several nodes crossing at once).
		split := false
		for a := 0; a+1 < len(device) && ctx.Err() == nil; a++ {
			if rs.pair(cur, device, a) {
				split = true
			} else if c.n <= 5000 && rs.flowPair(cur, device, a, order) {
				split = true
			}
		}
		val = newRefiner(c, cur, device).objective()
		next := c.stageOrder(cur, order, &ks)
		// Re-slice the order induced by the refined plan; accept only strict improvement.
		if v := e.slicers[w].run(next, val*(1-1e-12)); !math.IsInf(v, 1) {
			stage, device = e.slicers[w].segments(next)
			order = next
			val = v
			continue
		}
		stage = cur
		order = next
		if !moved && !split {
			break
		}
	}
	return stage, device, order, val
}

// improveDeviceOrder is the heuristic device-order search used when the count lattice is too
// large (many device kinds): adjacent transpositions of the stage devices, each judged by
// slicing the incumbent's order over the new chain, until none improves. The engine then
// searches node orders over the best chain.
func (e *engine) improveDeviceOrder(ctx context.Context, st *solveState) {
	c := e.c
	best, stage, _, order, _ := st.snapshot()
	var ks kahnScratch
	if len(order) != c.n {
		order = c.stageOrder(stage, c.kahn(make([]float64, c.n), &ks, nil), &ks)
	}
	cur := append([]int(nil), e.a.order...)
	changed := true
	for changed && ctx.Err() == nil {
		changed = false
		for i := 0; i+1 < len(cur); i++ {
			if cur[i] == cur[i+1] {
				continue
			}
			cand := append([]int(nil), cur...)
			cand[i], cand[i+1] = cand[i+1], cand[i]
			s := newSlicer(c, chainAutomaton(cand))
			if v := s.run(order, best*(1-1e-12)); !math.IsInf(v, 1) {
				cs, dev := s.segments(order)
				st.offerPlan(cs, dev, order, "device-order")
				best, cur, changed = v, cand, true
			}
		}
	}
	if !slices.Equal(cur, e.a.order) {
		e.a = chainAutomaton(cur)
		for i := range e.slicers {
			e.slicers[i] = newSlicer(c, e.a)
		}
	}
}

// exactIdeals runs the ideal DP with the incumbent as bound; when it completes, the
// incumbent (or the DP's better plan) is optimal. It has a clock budget (30% of the time
// left, 5 s without a time limit); a DP cut by it proves nothing, and the plan says so in a
// note (a DP cut by its size caps is the normal outcome on wide graphs and is not noted).
func (e *engine) exactIdeals(ctx context.Context, st *solveState) bool {
	c := e.c
	if c.n > 2000 {
		return false
	}
	budget := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		budget = time.Until(d) * 3 / 10
	}
	dctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	t0 := time.Now()
	U, _, _, _, _ := st.snapshot()
	val, stage, dev, ok := c.idealDP(dctx, e.a, U, 100000, 2000000)
	if !ok {
		// A cancelled parent (gap reached, caller gave up) needs no note; a deadline does.
		if errors.Is(dctx.Err(), context.DeadlineExceeded) && !errors.Is(ctx.Err(), context.Canceled) {
			st.note("%s: stopped by its time budget after %.2f s (budget %.2f s) before completing; it proves nothing, the other bounds apply", BoundIdealDP, time.Since(t0).Seconds(), budget.Seconds())
		}
		return false
	}
	if !math.IsInf(val, 1) {
		st.offerPlan(stage, dev, nil, BoundIdealDP)
	} else {
		val = U
	}
	if st.opts.Bounds != BoundsNone {
		st.offerBound(BoundInfo{Method: BoundIdealDP, Value: val, Status: "optimal", Seconds: time.Since(t0).Seconds()})
	}
	return true
}

// noPlan says that no plan was found within the limits, while nothing proved that none exists
// (compare infeasible, which is a proof): a *diag.Error of kind no-plan naming what was tried
// (also one note each).
func noPlan(tried []string) *diag.Error {
	e := diag.NoPlan("partition: no plan found within the limits (infeasibility not proved); tried %s", strings.Join(tried, "; "))
	for _, t := range tried {
		e.Note("tried %s", t)
	}
	return e
}

// findFirstPlan runs when no start order slices into a plan that fits the memory caps. It
// returns an infeasible error only with a proof, a no-plan error when the search found nothing
// and proved nothing, and nil once st holds a plan. The proofs:
//   - a contracted node (a colocation group) whose parameters exceed the largest cap of every
//     usable device fits no stage;
//   - the parameters of all nodes exceed Σ_d count_d · cap_d: every node lies in one stage;
//   - the exact DP over ideals with no bound (U = +Inf) enumerates every plan of the model,
//     so when it completes without a plan there is none.
func (e *engine) findFirstPlan(ctx context.Context, st *solveState, rng *rand.Rand) error {
	c := e.c
	if reason := c.memoryInfeasible(st.p); reason != "" {
		return infeasible("%s", reason)
	}
	tried := []string{fmt.Sprintf("%d start orders", len(c.startOrders()))}
	budget := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		budget = time.Until(d) / 2
	}
	dctx, cancel := context.WithTimeout(ctx, budget)
	val, stage, dev, ok := c.idealDP(dctx, e.a, math.Inf(1), 100000, 2000000)
	cancel()
	switch {
	case ok && math.IsInf(val, 1):
		return infeasible("no plan satisfies the memory caps (proved by the exact DP over every chain of ideals)")
	case ok:
		st.offerPlan(stage, dev, nil, BoundIdealDP)
		return nil
	case ctx.Err() != nil:
		tried = append(tried, "the exact DP over ideals (stopped by the time limit)")
	default:
		tried = append(tried, "the exact DP over ideals (too many ideals)")
	}
	sctx, scancel := context.WithTimeout(ctx, budget)
	e.search(sctx, st, rng, e.workers, st.opts.BRKGA)
	scancel()
	if best, _, _, _, _ := st.snapshot(); !math.IsInf(best, 1) {
		return nil
	}
	tried = append(tried, "the order search")
	return noPlan(tried)
}

// memoryInfeasible returns why no plan can meet the memory caps by a counting argument, or "".
func (c *core) memoryInfeasible(p *Problem) string {
	maxCap, total := 0.0, 0.0
	for d, k := range c.counts {
		if k > 0 {
			maxCap = math.Max(maxCap, c.memCap[d])
			total += float64(k) * c.memCap[d]
		}
	}
	sum := 0.0
	for v := 0; v < c.n; v++ {
		sum += c.params[v]
		if c.params[v] > maxCap*(1+1e-12) {
			names := make([]string, 0, len(c.members[v]))
			for _, m := range c.members[v] {
				names = append(names, p.label(m))
			}
			what := "node " + names[0]
			if len(names) > 1 {
				what = "the nodes that must share a stage (" + strings.Join(names, ", ") + ")"
			}
			return fmt.Sprintf("%s hold %.6g parameter bytes, above the largest memory cap %.6g", what, c.params[v], maxCap)
		}
	}
	if sum > total*(1+1e-12) {
		return fmt.Sprintf("the nodes hold %.6g parameter bytes, above the %.6g that all stages together may hold", sum, total)
	}
	return ""
}

// refineIncumbent refines the current best plan and offers the result.
func (e *engine) refineIncumbent(ctx context.Context, st *solveState, phase string) {
	_, stage, device, order, _ := st.snapshot()
	if len(order) != e.c.n {
		var ks kahnScratch
		order = e.c.stageOrder(stage, e.c.kahn(make([]float64, e.c.n), &ks, nil), &ks)
	}
	s2, d2, o2, _ := e.refine(ctx, e.workers, stage, device, order)
	st.offerPlan(s2, d2, o2, phase)
}

// search runs the order search chosen in the options.
func (e *engine) search(ctx context.Context, st *solveState, rng *rand.Rand, workers int, bo BRKGAOptions) {
	opts := st.opts
	bo = bo.withDefaults()
	n := e.c.n
	var seeds [][]float64
	for _, h := range e.c.startOrders() {
		seeds = append(seeds, priorityOf(h.order))
	}
	if _, _, _, order, _ := st.snapshot(); len(order) == n {
		seeds = append([][]float64{priorityOf(order)}, seeds...)
	}
	stop := func() bool { return st.gapLocked() <= opts.Gap+1e-9 }
	best, _, _, _, _ := st.snapshot()
	sliceDec := &decoder{workers: workers, fitness: func(w int, keys []float64, bound float64) float64 {
		order := e.c.kahn(keys, &e.kahns[w], e.orders[w][:0])
		if math.IsInf(bound, 1) {
			// First generation: anything beyond 1.5× the incumbent cannot matter.
			if v := e.slicers[w].run(order, 1.5*best); !math.IsInf(v, 1) {
				return v
			}
			return math.Inf(1)
		}
		return e.slicers[w].run(order, bound)
	}}
	own := e.workers // the search goroutine's own slicer
	onBest := func(keys []float64, value float64) ([]float64, float64) {
		order := e.c.kahn(keys, &e.kahns[own], make([]int32, 0, n))
		stage, dev, val := e.sliceFull(own, order)
		if math.IsInf(val, 1) {
			return nil, 0
		}
		st.offerPlan(stage, dev, order, "brkga")
		if opts.NoRefine {
			return nil, 0
		}
		s2, d2, o2, v2 := e.refine(ctx, own, stage, dev, order)
		if v2 < val*(1-1e-12) {
			st.offerPlan(s2, d2, o2, "brkga+refine")
			return priorityOf(o2), e.slicers[own].run(o2, math.Inf(1))
		}
		return nil, 0
	}
	count := func(r brkgaResult) {
		st.mu.Lock()
		st.evals += int64(r.evals)
		st.mu.Unlock()
	}
	switch opts.Search {
	case SearchRandom:
		// random-T: T i.i.d. priority vectors, decoded in batches with the incumbent as bound.
		T := bo.Population * bo.Generations
		batch := 4 * e.workers
		keys := make([][]float64, batch)
		fit := make([]float64, batch)
		idx := make([]int, batch)
		for i := range idx {
			idx[i] = i
		}
		for done := 0; done < T && ctx.Err() == nil && !stop(); done += batch {
			m := batch
			if T-done < m {
				m = T - done
			}
			for i := 0; i < m; i++ {
				keys[i] = randomKeys(rng, n)
			}
			b, _, _, _, _ := st.snapshot()
			dec := &decoder{workers: workers, fitness: func(w int, k []float64, _ float64) float64 {
				order := e.c.kahn(k, &e.kahns[w], e.orders[w][:0])
				return e.slicers[w].run(order, b*(1-1e-12))
			}}
			dec.evalAll(ctx, keys, idx[:m], fit, b)
			st.mu.Lock()
			st.evals += int64(m)
			st.mu.Unlock()
			for i := 0; i < m; i++ {
				if fit[i] < b {
					onBest(keys[i], fit[i])
					b, _, _, _, _ = st.snapshot()
				}
			}
		}
	case SearchMLA, SearchMLAWeighted:
		weighted := opts.Search == SearchMLAWeighted
		pos := make([][]int32, e.workers)
		for i := range pos {
			pos[i] = make([]int32, n)
		}
		mla := &decoder{workers: workers, fitness: func(w int, keys []float64, _ float64) float64 {
			order := e.c.kahn(keys, &e.kahns[w], e.orders[w][:0])
			return e.c.mlaCost(order, pos[w], weighted)
		}}
		r := brkga(ctx, n, bo, rng, mla, seeds, nil, stop)
		count(r)
		if r.keys != nil {
			onBest(r.keys, 0)
		}
	default:
		r := brkga(ctx, n, bo, rng, sliceDec, seeds, onBest, stop)
		count(r)
	}
}

// deviceOrders lists the distinct orders of the device slots (multiset permutations), up to
// limit; nil when there are more.
func deviceOrders(counts []int, limit int) [][]int {
	var out [][]int
	K := 0
	for _, k := range counts {
		K += k
	}
	left := append([]int(nil), counts...)
	cur := make([]int, 0, K)
	var rec func() bool
	rec = func() bool {
		if len(cur) == K {
			out = append(out, append([]int(nil), cur...))
			return len(out) <= limit
		}
		for d := range left {
			if left[d] == 0 {
				continue
			}
			left[d]--
			cur = append(cur, d)
			ok := rec()
			cur = cur[:len(cur)-1]
			left[d]++
			if !ok {
				return false
			}
		}
		return true
	}
	if !rec() {
		return nil
	}
	return out
}

// mipBounds runs the MIP part of the bound hierarchy.
func (e *engine) mipBounds(ctx context.Context, st *solveState) {
	opts := st.opts
	limit := opts.MIPTimeLimit
	if limit <= 0 {
		limit = 60 * time.Second
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < limit {
		limit = time.Until(d)
	}
	c := e.c
	if c.n*c.stages() > 400000 {
		st.note("MIP bounds skipped: %d nodes × %d stages is too large", c.n, c.stages())
		return
	}
	anc, desc := c.reachWork()
	if opts.Bounds == BoundsFull && !c.hetero {
		b := e.boundBottleneck(ctx, st, limit/4)
		st.offerBound(b)
		if st.gapLocked() <= opts.Gap+1e-9 {
			return
		}
		sb := e.boundSuperblock(ctx, st, anc, desc, limit/4)
		st.offerBound(sb)
		if st.gapLocked() <= opts.Gap+1e-9 {
			return
		}
		g := e.boundGuess(ctx, st, anc, desc, limit/2, 1)
		st.offerBound(g)
		if st.gapLocked() <= opts.Gap+1e-9 {
			return
		}
	}
	b := e.boundExact(ctx, st, anc, desc, limit, e.workers)
	st.offerBound(b)
}

// exactSpec is the exact MIP over a device order.
func (c *core) exactSpec(devOrder []int, target, zLo, scale float64) mipSpec {
	K := len(devOrder)
	sp := mipSpec{name: BoundExact, K: K, dev: devOrder, span: make([]int, K), mult: make([]float64, K),
		objBlock: -1, heavy: -1, target: target, zLo: zLo, scale: scale}
	for b := range sp.span {
		sp.span[b] = 1
		sp.mult[b] = 1
	}
	return sp
}

// boundExact solves the exact MIP (seed 000 §3.1), for a heterogeneous pipeline once per
// device order, warm-started with the incumbent and with variables fixed by its value.
// par is the number of MIPs it may run at a time (boundExactProbes).
func (e *engine) boundExact(ctx context.Context, st *solveState, anc, desc []float64, limit time.Duration, par int) BoundInfo {
	c := e.c
	t0 := time.Now()
	U, stage, device, _, lb := st.snapshot()
	var orders [][]int
	if c.hetero {
		orders = deviceOrders(c.counts, 64)
		if orders == nil {
			st.note("exact MIP skipped: too many device orders")
			return BoundInfo{Method: BoundExact, Value: lb, Status: "skipped"}
		}
		// The incumbent's device order first.
		sort.SliceStable(orders, func(i, j int) bool { return slices.Equal(orders[i], device) && !slices.Equal(orders[j], device) })
	} else {
		orders = [][]int{device}
	}
	deadline := t0.Add(limit)
	bound := math.Inf(1)
	status := "optimal"
	gap := st.opts.BoundGap
	if gap <= 0 {
		gap = math.Max(st.opts.Gap, 0) // LowerBound runs with Gap −1 ("never stop early")
	}
	if !c.hetero && gap == 0 {
		return e.boundExactProbes(ctx, st, anc, desc, limit, par)
	}
	for i, devOrder := range orders {
		left := time.Until(deadline) / time.Duration(len(orders)-i)
		if left <= 0 || ctx.Err() != nil {
			bound = math.Min(bound, lb)
			status = "time-limit"
			break
		}
		// With a bound gap g, prove that no plan is below T = (1 − g)·U: fix variables for
		// value ≤ T and cut off at T (LB = T when nothing is found). Without one, warm-start
		// with the incumbent and prove it optimal.
		var start []int
		target := U * (1 - gap)
		if gap == 0 && slices.Equal(devOrder, device) {
			start = make([]int, c.n)
			for v := range start {
				start[v] = stage[v] + 1
			}
		}
		sp := c.exactSpec(devOrder, target, lb, U)
		out := c.solveMIP(ctx, sp, anc, desc, start, left, 0)
		if _, ok := e.takeExact(st, out, devOrder, U); !ok {
			return BoundInfo{Method: BoundExact, Value: lb, Status: "fault", Seconds: time.Since(t0).Seconds()}
		}
		bound = math.Min(bound, out.bound)
		if !out.proved() {
			status = out.status
		}
	}
	return BoundInfo{Method: BoundExact, Value: bound, Status: status, Seconds: time.Since(t0).Seconds()}
}

// boundBottleneck is the three-superblock MIP (seed 000 §3.2): minimise the cost of the
// middle superblock subject to its work being ≥ L (Eq. (14)). Its size does not depend on k.
func (e *engine) boundBottleneck(ctx context.Context, st *solveState, limit time.Duration) BoundInfo {
	c := e.c
	U, _, _, _, _ := st.snapshot()
	L := c.simpleBound()
	sp := mipSpec{name: BoundBottleneck, K: 3, dev: []int{0, 0, 0}, span: []int{1, 1, 1}, mult: []float64{0, 0, 0},
		objBlock: 1, heavy: 1, heavyL: L, target: math.Inf(1), zLo: 0, scale: U}
	out := c.solveMIP(ctx, sp, nil, nil, nil, limit, 0)
	return BoundInfo{Method: BoundBottleneck, Value: out.bound, Status: out.status, Seconds: out.seconds}
}

// boundGuess is bottleneck-guess (seed 000 §3.3): for each position j of a block with work
// ≥ L, a three-superblock MIP whose outer superblocks are charged their average cost; the
// bound is min_j LB_j. The k MIPs run `parallel` at a time, each with an equal share of the
// time left for the waves still to run (one MIP that times out used to take the whole
// limit, leaving the others none, so the minimum fell to the floor lb). As soon as one
// LB_j is at the floor, the minimum cannot rise above it and the others are cancelled.
func (e *engine) boundGuess(ctx context.Context, st *solveState, anc, desc []float64, limit time.Duration, parallel int) BoundInfo {
	c := e.c
	t0 := time.Now()
	U, stage, _, _, lb := st.snapshot()
	K := c.stages()
	L := c.simpleBound()
	// The incumbent's heavy block (work ≥ L) gives a warm start for its j.
	work := make([]float64, K)
	for v, s := range stage {
		work[s] += c.work[0][v]
	}
	heavyJ := -1
	for s := range work {
		if work[s] >= L*(1-1e-12) {
			heavyJ = s + 1
			break
		}
	}
	P := max(parallel, 1)
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]mipOutcome, K+1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	started := 0
	sem := make(chan struct{}, P)
	for j := 1; j <= K; j++ {
		wg.Add(1)
		go func(j int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			mu.Lock()
			waves := (K - started + P - 1) / P
			started++
			mu.Unlock()
			if gctx.Err() != nil {
				results[j] = mipOutcome{name: BoundBottleneckGuess, bound: lb, status: "cancelled"}
				return
			}
			sp := mipSpec{name: BoundBottleneckGuess, K: 3, dev: []int{0, 0, 0}, span: []int{j - 1, 1, K - j},
				mult: []float64{float64(j - 1), 1, float64(K - j)}, objBlock: -1, heavy: 1, heavyL: L,
				target: U, zLo: lb, scale: U}
			var start []int
			if j == heavyJ {
				start = make([]int, c.n)
				for v, s := range stage {
					switch {
					case s+1 < j:
						start[v] = 1
					case s+1 == j:
						start[v] = 2
					default:
						start[v] = 3
					}
				}
			}
			left := time.Until(t0.Add(limit)) / time.Duration(waves)
			results[j] = c.solveMIP(gctx, sp, anc, desc, start, left, 0)
			if results[j].bound <= lb {
				cancel()
			}
		}(j)
	}
	wg.Wait()
	bound := math.Inf(1)
	status := "optimal"
	for j := 1; j <= K; j++ {
		bound = math.Min(bound, results[j].bound)
		if !results[j].proved() {
			status = results[j].status
		}
		if results[j].fault != "" {
			st.note("bottleneck-guess j=%d: %s", j, results[j].fault)
		}
	}
	switch {
	case ctx.Err() != nil:
		status = "time-limit" // the caller stopped it; the bound is still valid
	case bound <= lb:
		// Some LB_j is no better than the bound already known: nothing to gain (the
		// others may have been cancelled).
		status = "no-gain"
	}
	return BoundInfo{Method: BoundBottleneckGuess, Value: bound, Status: status, Seconds: time.Since(t0).Seconds()}
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
