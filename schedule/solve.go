package schedule

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/onnxpart/onnxpart/diag"
)

// Method names accepted by Options.Method.
const (
	Auto       = "auto"        // constructive heuristics, then the MILP (small graphs) or MILP-SPLIT
	BestDevice = "best-device" // BD: everything on the best single device
	MET        = "met"         // minimum execution time (bMET in batched mode)
	Greedy     = "greedy"      // earliest finish in breadth-first order (bGreedy)
	HEFT       = "heft"        // heterogeneous earliest finish time (bHEFT)
	EA         = "ea"          // biased (1+1) evolutionary algorithm
	SA         = "sa"          // simulated annealing
	MILP       = "milp"        // the full MILP, warm-started from the best heuristic
	Split      = "split"       // MILP-SPLIT
)

// Methods lists the methods in the order the thesis's tables use.
var Methods = []string{Auto, BestDevice, MET, Greedy, HEFT, EA, SA, MILP, Split}

// Options control Solve. The zero value runs Auto with no time limit (then EA and SA run
// DefaultIterations, and MILPs run to optimality).
type Options struct {
	Method    string        // one of Methods; "" means Auto
	TimeLimit time.Duration // 0: none (a context deadline also limits)
	// Iterations is EA's and SA's evaluation budget; 0 means DefaultIterations without a time
	// limit, and until the time limit with one. An iteration budget makes them deterministic.
	Iterations int
	Seed       uint64
	// Workers is the number of concurrent sub-solves (MILP-SPLIT); 0 means GOMAXPROCS.
	Workers int
	// RelGap is the MILPs' stopping gap (0: 1e-4).
	RelGap float64
	// Symmetry is the symmetry-breaking criterion between identical devices: SymmetryTasks
	// (default), SymmetryTime or SymmetryNone.
	Symmetry string
	// ModuleSize is MILP-SPLIT's target number of nodes per module (0: 20).
	ModuleSize int
	// MaxChannels is the largest number of channels of a multi-channel cut (0: 4; 1 keeps
	// single-channel cuts only).
	MaxChannels int
	// Progress, when set, receives progress reports (calls are serialised).
	Progress func(Progress)
	// MaxStages caps the stages (runtime calls, Device.CallCost) of a plan, latency or
	// batched; 0: no cap. The chosen plan is repaired by moving whole stages onto other
	// devices in use (or everything onto one device), keeping the fastest plan within the
	// cap, not the fewest stages; when no plan within the cap fits, Solve returns a no-plan
	// *diag.Error wrapping a *StageCapError.
	MaxStages int
	// MaxStagesPerDevice caps the stages on each device the same way (0: no cap); both caps
	// hold when both are set. The methods and the bounds solve the problem without the caps:
	// the bounds stay valid lower bounds of the capped problem (its plans are among the
	// uncapped problem's), and Result.Uncapped tells what the caps cost.
	MaxStagesPerDevice int
	// ModuleDP makes EA and SA also compute the module DP's bounds and judge its stitched
	// plan first (bounds_modules.go), as Auto, MILP and Split do. Without a deadline the DP
	// runs on one worker and its node budget alone, so its bound and plan are reproducible
	// (the planner's seeded placements set it on their SA run).
	ModuleDP bool
}

// DefaultIterations is EA's and SA's budget when neither Iterations nor a time limit is set.
const DefaultIterations = 20000

// Progress is one progress report.
type Progress struct {
	Method   string
	Elapsed  time.Duration
	Makespan float64 // best makespan so far (+Inf before any plan)
	Bound    float64 // best lower bound so far
	Message  string
}

// Result is Solve's answer; every field is JSON-ready (no infinities or NaNs).
type Result struct {
	Method    string     `json:"method"`    // the method whose plan was kept
	Objective string     `json:"objective"` // "latency" or "throughput"
	Placement *Placement `json:"placement"`
	Schedule  *Schedule  `json:"schedule"`
	// Makespan of the plan (the latency of one input, or of the whole batch); Throughput in
	// inputs per time unit.
	Makespan   float64 `json:"makespan"`
	Throughput float64 `json:"throughput"`
	// LowerBound is the best proved lower bound on the optimal makespan; Gap = 1 − bound/makespan.
	LowerBound float64 `json:"lower_bound"`
	Gap        float64 `json:"gap"`
	// Optimal is true when the plan is proved optimal (within the MILP gap).
	Optimal    bool         `json:"optimal"`
	Bounds     []Bound      `json:"bounds"`
	Candidates []Candidate  `json:"candidates"`
	Nodes      []NodePlan   `json:"nodes"`
	Devices    []DevicePlan `json:"devices"`
	Modules    int          `json:"modules,omitempty"` // MILP-SPLIT: modules found
	// Uncapped, when a stage cap (Options.MaxStages, MaxStagesPerDevice) changed the plan, is
	// the plan kept without the cap, merged the same way: its makespan and stages.
	Uncapped *UncappedPlan `json:"uncapped,omitempty"`
	Notes    []diag.Note   `json:"notes,omitempty"`
	Seconds  float64       `json:"seconds"`
	Elapsed  time.Duration `json:"-"`
	// phases and searchIters count the work run after the constructive heuristics (tests).
	phases, searchIters int
}

// UncappedPlan is the plan a stage cap replaced (Result.Uncapped).
type UncappedPlan struct {
	Makespan float64 `json:"makespan"`
	Stages   int     `json:"stages"`
	// PerDevice is the most stages on one device.
	PerDevice int `json:"per_device"`
}

// Candidate is one method's plan as the simulator judged it.
type Candidate struct {
	Method   string  `json:"method"`
	Makespan float64 `json:"makespan"` // 0 when the method found no plan
	Feasible bool    `json:"feasible"`
	Seconds  float64 `json:"seconds"`
	Bound    float64 `json:"bound,omitempty"` // the method's own lower bound (MILP, SPLIT)
	Note     string  `json:"note,omitempty"`
}

// NodePlan is one node's place in the plan.
type NodePlan struct {
	Node   int    `json:"node"`
	Name   string `json:"name"`
	Device int    `json:"device"`          // latency mode; −1 in batched mode
	Share  []int  `json:"share,omitempty"` // batched mode: granules per device
	// Start and End span the node's batches.
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// DevicePlan summarises one device.
type DevicePlan struct {
	Device   int     `json:"device"`
	Name     string  `json:"name"`
	Nodes    int     `json:"nodes"`    // nodes with work on it
	Granules int     `json:"granules"` // granule-tasks (latency: nodes)
	Busy     float64 `json:"busy"`
	Memory   float64 `json:"memory"`
	Capacity float64 `json:"capacity"` // 0: unlimited
}

// infeasible is Solve's error when no placement of the problem fits the devices' memory, with
// how that was proved: by a counting argument (a node that fits on no device, or more memory
// needed than all devices hold) or by the full MILP proving its model infeasible. It is
// returned only with such a proof.
func infeasible(proof string) error {
	return diag.Infeasible("schedule: infeasible: no placement fits the devices' capacities (%s)", proof)
}

// noPlan is Solve's error when the chosen method found no plan that fits within its limits;
// nothing was proved about the problem (a plan may exist). tried lists what was run and why
// each failed; each is also a note.
func noPlan(method string, tried []string) error {
	msg := "schedule: no plan found within the limits by " + method
	if len(tried) > 0 {
		msg += " (tried: " + strings.Join(tried, "; ") + ")"
	}
	e := diag.NoPlan("%s", msg)
	for _, t := range tried {
		e.Note("tried %s", t)
	}
	return e
}

// Solve places and schedules p with the chosen method, re-judges every plan with the
// simulator and returns the best, with the best proved lower bound. When the time limit
// passes or ctx is cancelled it returns the best plan found so far. An error means the
// problem is invalid (a *diag.Error of kind input, or a *CycleError), is proved infeasible in
// memory (kind infeasible), or that no plan that fits was found within the limits (kind
// no-plan, which proves nothing; with Options.MaxStages, wrapping a *StageCapError).
func Solve(ctx context.Context, p *Problem, o Options) (*Result, error) {
	begin := time.Now()
	in, err := prepare(p)
	if err != nil {
		return nil, err
	}
	if o.Method == "" {
		o.Method = Auto
	}
	known := false
	for _, m := range Methods {
		known = known || m == o.Method
	}
	if !known {
		return nil, invalid("unknown method %q (want one of %v)", o.Method, Methods)
	}
	switch o.Symmetry {
	case "":
		o.Symmetry = SymmetryTasks
	case SymmetryNone, SymmetryTasks, SymmetryTime:
	default:
		return nil, invalid("unknown symmetry criterion %q", o.Symmetry)
	}
	if o.MaxStages < 0 || o.MaxStagesPerDevice < 0 {
		return nil, invalid("a stage cap of %d (%d per device): the cap must be positive, or 0 for none", o.MaxStages, o.MaxStagesPerDevice)
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.ModuleSize <= 0 {
		o.ModuleSize = 20
	}
	if o.MaxChannels <= 0 {
		o.MaxChannels = 4
	}
	if o.TimeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.TimeLimit)
		defer cancel()
	}
	if proof := in.memoryProof(); proof != "" {
		return nil, infeasible(proof)
	}
	deadline, _ := ctx.Deadline()
	s := &solver{in: in, o: o, ctx: ctx, begin: begin, deadline: deadline, best: math.Inf(1), bestCapped: math.Inf(1)}
	s.bounds = in.simpleBounds(ctx)
	s.report("", "lower bounds computed")
	if !in.latency() {
		s.batchBound()
	}
	s.run()
	return s.result()
}

type solver struct {
	in       *inst
	o        Options
	ctx      context.Context
	begin    time.Time
	deadline time.Time
	mu       sync.Mutex
	best     float64
	bounds   []Bound
	// capBounds bound the plans within the stage caps only (bounds_cap.go); result adds
	// them to the capped plan's bounds.
	capBounds []Bound
	// bestCapped is the least makespan of the feasible candidates within the stage cap.
	bestCapped float64
	cands      []candidate
	notes      []diag.Note
	modules    int
	// infeasible is the proof that no plan fits memory (the full MILP proved its model
	// infeasible), empty when nothing was proved.
	infeasible string
	// hlp is the coupled LP's solution (latency mode), nil when not solved; hlpPlan its
	// rounding, judged after the constructive heuristics (so that they win ties).
	hlp     *hlp
	hlpPlan *Placement
	// mdpPlan is the module DP's stitched placement (bounds_modules.go), judged after hlpPlan.
	mdpPlan *Placement
	// routesPlan is uniformRoutes' plan (batched mode), EA's and SA's start when it beats MET's.
	routesPlan *Placement
	// phases counts the phases run after the constructive heuristics (bounds, searches,
	// MILPs); stopped is set once the best plan met the best bound and the rest was skipped.
	phases      int
	stopped     bool
	searchIters int // EA's or SA's iterations
}

// stopGap is the relative gap at which the best plan meets the best bound: Options.RelGap,
// or without one defaultOptimalGap, the gap at which result calls a plan optimal (it was
// 1e-9: Inception-v3 on a100-80g,t4 searched its whole 30 s with a bound 0.05 µs under a plan
// already reported optimal).
func (s *solver) stopGap() float64 {
	if s.o.RelGap > 0 {
		return s.o.RelGap
	}
	return defaultOptimalGap
}

// defaultOptimalGap is the relative gap within which a plan counts as optimal when
// Options.RelGap is 0 (HiGHS's default MIP gap): Result.Optimal, and the searches stop there.
const defaultOptimalGap = 1e-4

// target is the makespan at or below which a plan meets the best bound within stopGap: 0
// when there is no bound yet, or the bound exceeds the best plan (a fault, which result
// discards: it closes nothing), or with runToLimit.
func (s *solver) target() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb := maxBound(s.bounds)
	if lb <= 0 || runToLimit || (!math.IsInf(s.best, 1) && lb > s.best*(1+1e-6)) {
		return 0
	}
	return lb / (1 - s.stopGap())
}

// closed reports whether the best plan meets the best bound: no method can find a better
// one, so there is nothing left to run.
func (s *solver) closed() bool {
	s.mu.Lock()
	best := s.best
	capped := s.cappedClosed()
	s.mu.Unlock()
	return capped || s.meets(best)
}

// stageCap is the plan's stage cap (Options.MaxStages, MaxStagesPerDevice).
func (s *solver) stageCap() stageCap {
	return stageCap{total: s.o.MaxStages, perDevice: s.o.MaxStagesPerDevice}
}

// cappedClosed reports whether a candidate within the stage cap meets the capped bound
// (capBounds) within stopGap, with auto: result then returns a plan within the cap at least
// as fast (it keeps a candidate within the cap that beats the best plan merged into it), and
// no plan within the cap is faster than the bound, so nothing is left to run. The methods'
// own plans are uncapped, so for a single method its plan, not the candidate, is returned,
// and its search must go on. Called with s.mu held.
func (s *solver) cappedClosed() bool {
	if s.o.Method != Auto || runToLimit {
		return false
	}
	lb := maxBound(s.capBounds)
	bc := s.bestCapped
	return lb > 0 && !math.IsInf(bc, 1) && bc <= lb/(1-s.stopGap()) && lb <= bc*(1+1e-6)
}

// meets reports whether a plan of makespan mk meets the best bound within stopGap. A bound
// above the plan (a fault, which result discards) closes nothing.
func (s *solver) meets(mk float64) bool {
	t := s.target()
	s.mu.Lock()
	lb := maxBound(s.bounds)
	s.mu.Unlock()
	return t > 0 && !math.IsInf(mk, 1) && mk <= t && lb <= mk*(1+1e-6)
}

// runToLimit makes Solve run every phase whatever the bounds say (the certificate
// harness's switch, export_test.go: it checks every bound, not only those computed before
// the plan met one).
var runToLimit bool

// next reports whether the next phase should run — not once the best plan meets the best
// bound — and counts it.
func (s *solver) next(phase string) bool {
	if s.stopped || s.closed() {
		if !s.stopped {
			s.stopped = true
			s.report("", fmt.Sprintf("the plan meets the lower bound: %s and the rest skipped", phase))
		}
		return false
	}
	s.phases++
	return true
}

type candidate struct {
	Candidate
	pl *Placement
	sc *Schedule
}

func (s *solver) report(method, msg string) {
	if s.o.Progress == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o.Progress(Progress{Method: method, Elapsed: time.Since(s.begin), Makespan: s.best, Bound: s.shownBound(), Message: msg})
}

// add judges a plan with the simulator and records it.
func (s *solver) add(method string, pl *Placement, t0 time.Time, bound float64, note string) *candidate {
	c := &candidate{Candidate: Candidate{Method: method, Seconds: time.Since(t0).Seconds(), Bound: bound, Note: note}}
	if pl != nil {
		sc, err := s.in.simulate(pl)
		if err != nil {
			c.Note = joinNote(c.Note, fmt.Sprintf("invalid plan: %v", err))
		} else {
			c.pl, c.sc = pl, sc
			c.Makespan, c.Feasible = sc.Makespan, sc.Feasible
			if !sc.Feasible {
				c.Note = joinNote(c.Note, fmt.Sprintf("overflows memory by %.4g bytes", sc.Overflow))
			}
		}
	} else if c.Note == "" {
		c.Note = "no plan"
	}
	s.mu.Lock()
	s.cands = append(s.cands, *c)
	if c.Feasible && c.Makespan < s.best {
		s.best = c.Makespan
	}
	if cp := s.stageCap(); c.Feasible && !cp.none() && cp.excess(c.sc) == 0 && c.Makespan < s.bestCapped {
		s.bestCapped = c.Makespan
	}
	s.mu.Unlock()
	s.report(method, fmt.Sprintf("%s: makespan %.6g", method, c.Makespan))
	return c
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func (s *solver) addBound(method string, v float64) {
	if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
		s.mu.Lock()
		s.bounds = append(s.bounds, Bound{Method: method, Value: v})
		s.mu.Unlock()
	}
}

// bestCandidate returns the best feasible candidate among methods (all when nil).
func (s *solver) bestCandidate(methods ...string) *candidate {
	var best *candidate
	for x := range s.cands {
		c := &s.cands[x]
		if !c.Feasible {
			continue
		}
		if methods != nil {
			ok := false
			for _, m := range methods {
				ok = ok || c.Method == m
			}
			if !ok {
				continue
			}
		}
		if best == nil || c.Makespan < best.Makespan {
			best = c
		}
	}
	return best
}

func (s *solver) run() {
	in, o := s.in, s.o
	t0 := time.Now()
	var heur []named
	switch o.Method {
	case BestDevice, MET, Greedy, HEFT:
		s.coupled() // only with coupledMIPAlways (the certificate harness)
		for _, h := range in.constructive() {
			if h.method == o.Method {
				s.add(h.method, h.pl, t0, 0, "")
			}
		}
		if coupledMIPAlways {
			s.coupledMIP(0.5)
		}
		return
	default:
		heur = in.constructive()
		for _, h := range heur {
			s.add(h.method, h.pl, t0, 0, "")
		}
		if o.Method != EA && o.Method != SA && s.next("the coupled LP") {
			s.coupled()
		} else if o.ModuleDP && (o.Method == EA || o.Method == SA) && s.next("the module DP") {
			s.moduleBound()
			s.cappedBound()
		}
		if s.hlpPlan != nil {
			s.add("coupled", s.hlpPlan, t0, 0, "the coupled LP's assignment, rounded")
		}
		if s.mdpPlan != nil {
			s.add("module-dp", s.mdpPlan, t0, 0, "the module DP's placements, stitched")
		}
		if pl := in.uniformRoutes(); pl != nil {
			s.routesPlan = pl
			s.add("routes", pl, t0, 0, "one split of the batch for every node")
		}
	}
	switch o.Method {
	case EA, SA:
		if s.next(o.Method) {
			s.search(o.Method, heur)
		}
	case MILP:
		if s.next(MILP) {
			s.milp()
		}
	case Split:
		if s.next("the coupled MIP") {
			s.coupledMIP(0.1)
		}
		if s.next("region moves") {
			s.moves(Split, s.movesDeadline())
		}
		if s.next(Split) {
			s.split()
		}
	case Auto:
		if s.small() {
			if s.next(MILP) {
				s.milp()
			}
		} else {
			if s.next("the coupled MIP") {
				s.coupledMIP(0.1)
			}
			if s.next("region moves") {
				s.moves("moves", s.movesDeadline())
			}
			if s.next(Split) {
				s.split()
			}
		}
	}
}

// movesDeadline is the deadline of the region moves before MILP-SPLIT: 5% of the time
// left; zero (none: until a pass improves nothing) without a time limit.
func (s *solver) movesDeadline() time.Time {
	if s.deadline.IsZero() {
		return s.deadline
	}
	return time.Now().Add(time.Until(s.deadline) * 5 / 100)
}

// moves improves the best plan so far by region moves (regionSearch) until deadline and adds
// the result as method's candidate when it is better (latency mode, several devices).
func (s *solver) moves(method string, deadline time.Time) {
	in := s.in
	if !in.latency() || in.numDevices < 2 {
		return
	}
	c := s.bestCandidate()
	if c == nil {
		return
	}
	s.movesFrom(method, c, deadline)
}

// movesFrom improves candidate c's plan by region moves within the stage caps until deadline
// (zero: until a pass improves nothing) and adds the result as method's candidate when it is
// better.
func (s *solver) movesFrom(method string, c *candidate, deadline time.Time) {
	in := s.in
	if c.pl == nil || c.sc == nil {
		return
	}
	t0 := time.Now()
	s.report(method, "region moves")
	dev := append([]int(nil), c.pl.Device...)
	work := 0
	stop := func() bool {
		if work&15 == 0 && (s.ctx.Err() != nil || (!deadline.IsZero() && !time.Now().Before(deadline))) {
			return true
		}
		return false
	}
	// Within the stage caps: the plan kept is merged into them (result), which would undo
	// moves that need more stages.
	order := in.startOrder(c.sc)
	f := in.regionSearch(dev, order, stageCap{total: s.o.MaxStages, perDevice: s.o.MaxStagesPerDevice}, stop, &work)
	if f < c.Makespan*(1-1e-12) {
		s.add(method, &Placement{Device: dev, Order: positions(order)}, t0, 0, fmt.Sprintf("region moves from %s's plan (%d moves judged)", c.Method, work))
	}
}

// small reports whether the full MILP is the right tool (Auto).
func (s *solver) small() bool {
	if s.in.latency() {
		return s.in.numNodes <= 40
	}
	return s.in.numNodes*s.in.numGranules <= 40
}

func (s *solver) search(method string, heur []named) {
	in, o := s.in, s.o
	t0 := time.Now()
	sp := newSpace(in)
	var start *Placement
	for _, h := range heur {
		if h.method == MET && h.pl != nil {
			start = h.pl
		}
	}
	if r := s.routesPlan; r != nil && start != nil {
		if a, err := in.simulate(start); err == nil {
			if b, err := in.simulate(r); err == nil && b.Feasible && (!a.Feasible || b.Makespan < a.Makespan) {
				start = r
			}
		}
	}
	if start == nil {
		s.add(method, nil, t0, 0, "no MET plan to start from")
		return
	}
	b := &budget{ctx: s.ctx, iters: o.Iterations, start: t0, deadline: s.deadline, target: s.target()}
	if b.iters == 0 && b.deadline.IsZero() {
		b.iters = DefaultIterations
	}
	last := time.Now()
	improved := func(f float64) {
		if time.Since(last) > 200*time.Millisecond {
			last = time.Now()
			s.report(method, fmt.Sprintf("%s: %.6g", method, f))
		}
	}
	var genes []int
	if method == EA {
		genes, _ = sp.ea(sp.genesOf(start), o.Seed, b, improved)
	} else {
		genes, _ = sp.sa(sp.genesOf(start), o.Seed, b, improved)
	}
	s.searchIters = b.ran
	s.add(method, sp.placement(genes), t0, 0, "")
}

// startPlan is the best feasible candidate so far (the MILP's warm start and horizon).
func (s *solver) startPlan() *Placement {
	if c := s.bestCandidate(); c != nil {
		return c.pl
	}
	return nil
}

func (s *solver) milp() {
	in, o := s.in, s.o
	t0 := time.Now()
	start := s.startPlan()
	if start == nil {
		start = in.safeStart()
	}
	s.report(MILP, "solving the full MILP")
	var limit time.Duration
	if !s.deadline.IsZero() {
		limit = time.Until(s.deadline)
	}
	run, err := in.solveMILP(s.ctx, start, maxBound(s.bounds), mipOptions{timeLimit: limit, relGap: o.RelGap, symmetry: o.Symmetry, seed: int(o.Seed)})
	if err != nil {
		s.add(MILP, nil, t0, 0, err.Error())
		s.notes = append(s.notes, diag.Notef(diag.NoteFault, "full MILP failed: %v", err))
		return
	}
	note := fmt.Sprintf("status %v, %d columns, %d rows, %d nodes, built in %.2f s, solved in %.2f s", run.status, run.vars, run.rows, run.nodes, run.build.Seconds(), run.elapsed.Seconds())
	if run.skipped != "" {
		s.notes = append(s.notes, diag.Notef(diag.NoteSkipped, "full MILP %s", run.skipped))
		s.add(MILP, nil, t0, run.bound, joinNote(note, run.skipped))
		return
	}
	if run.fault != "" {
		fb := s.bestCandidate()
		what := "no heuristic plan"
		if fb != nil {
			what = fb.Method + "'s plan"
		}
		if run.infeasible {
			s.infeasible = "the full MILP is infeasible"
		}
		s.notes = append(s.notes, diag.Notef(diag.NoteFault, "milp: solver fault (%s); falling back to %s", run.fault, what))
		s.add(MILP, nil, t0, 0, joinNote(note, "fault: "+run.fault))
		return
	}
	s.addBound(MILP, run.bound)
	if run.pl == nil {
		s.add(MILP, nil, t0, run.bound, joinNote(note, "no incumbent"))
		if fb := s.bestCandidate(); fb != nil {
			s.notes = append(s.notes, diag.Notef(diag.NoteCapped, "milp: %v without an incumbent of its own; %s's plan is the best known", run.status, fb.Method))
		}
		return
	}
	s.add(MILP, run.pl, t0, run.bound, note)
}

func (s *solver) split() {
	in, o := s.in, s.o
	t0 := time.Now()
	s.report(Split, "detecting modules")
	log := &subLog{}
	out, err := in.split(s.ctx, splitOptions{
		log: log, deadline: s.deadline, workers: o.Workers, target: o.ModuleSize, maxChannels: o.MaxChannels,
		relGap: o.RelGap, symmetry: o.Symmetry, seed: o.Seed, lbShare: 0.2, polishShare: 0.2,
		progress: func(msg string) { s.report(Split, msg) },
		met:      s.meets,
	})
	s.notes = append(s.notes, log.notes()...)
	if err != nil {
		s.add(Split, nil, t0, 0, err.Error())
		if s.ctx.Err() == nil {
			// Modules that cannot be solved on their own (memory shared too tightly, say):
			// the full MILP gets the time that is left.
			s.notes = append(s.notes, diag.Notef(diag.NoteFault, "split: %v; solving the full MILP instead", err))
			s.milp()
		} else {
			s.notes = append(s.notes, diag.Notef(diag.NoteFault, "split: %v", err))
		}
		return
	}
	s.modules = out.modules
	if out.boundBy != "" {
		s.addBound(out.boundBy, out.bound)
	}
	note := fmt.Sprintf("%d modules, %d blocks, %d sub-solves", out.modules, out.blocks, out.solves)
	note = joinNote(note, out.note)
	s.add(Split, out.pl, t0, out.bound, note)
}

// safeStart is a plan for the MILP's horizon when no heuristic plan fits memory: the
// horizon then comes from the serial bound (see solveMILP).
func (in *inst) safeStart() *Placement {
	if in.latency() {
		return in.met()
	}
	return in.bMET(in.splits())
}

func (s *solver) result() (*Result, error) {
	in := s.in
	var chosen *candidate
	switch s.o.Method {
	case Auto:
		chosen = s.bestCandidate()
	case EA, SA, MILP, Split:
		chosen = s.bestCandidate(s.o.Method)
		if chosen == nil {
			chosen = s.bestCandidate()
			if chosen != nil {
				s.notes = append(s.notes, diag.Notef(diag.NoteFault, "%s found no plan; kept %s's", s.o.Method, chosen.Method))
			}
		}
	default:
		chosen = s.bestCandidate(s.o.Method)
		if chosen == nil {
			for x := range s.cands {
				if s.cands[x].Method == s.o.Method && s.cands[x].pl != nil {
					chosen = &s.cands[x] // infeasible in memory, but what the method gives
				}
			}
		}
	}
	if chosen == nil || chosen.sc == nil {
		if s.infeasible != "" && s.bestCandidate() == nil {
			return nil, infeasible(s.infeasible)
		}
		var tried []string
		for _, c := range s.cands {
			what := c.Method + ": "
			switch {
			case c.sc != nil && !c.sc.Feasible:
				// Worded without "memory": callers must not read this as a proof.
				what += fmt.Sprintf("its plan exceeds the devices' capacities by %.4g bytes", c.sc.Overflow)
			case c.Note != "":
				what += c.Note
			default:
				what += "no plan"
			}
			tried = append(tried, what)
		}
		return nil, noPlan(s.o.Method, tried)
	}
	var uncapped *UncappedPlan
	if chosen.pl != nil && chosen.sc != nil {
		// Stage calls: merge stages while that pays, and honour the cap.
		// Bounded work: every move removes time or stages, and each repair walk has a budget
		// of simulations (repairWork).
		c := s.stageCap()
		pl, sc, moves, ok := in.mergeStages(chosen.pl, chosen.sc, c)
		if !ok {
			capErr := &StageCapError{Method: s.o.Method, MaxStages: s.o.MaxStages, MaxStagesPerDevice: s.o.MaxStagesPerDevice,
				Stages: sc.StageCount(), PerDevice: slices.Max(append([]int{0}, sc.Stages...))}
			return nil, diag.Wrap(diag.KindNoPlan, capErr)
		}
		best := chosen
		if !c.none() && c.excess(chosen.sc) > 0 && s.o.Method == Auto {
			// A candidate already within the cap (the capped module DP's stitched plan, a
			// region search's) may beat the best plan merged into it.
			for x := range s.cands {
				o := &s.cands[x]
				if o.Feasible && o.pl != nil && o.sc != nil && c.excess(o.sc) == 0 && o.Makespan < sc.Makespan*(1-1e-12) {
					if p2, sc2, m2, ok2 := in.mergeStages(o.pl, o.sc, c); ok2 && sc2.Makespan < sc.Makespan*(1-1e-12) {
						pl, sc, moves, chosen = p2, sc2, m2, o
					}
				}
			}
		}
		if c.excess(best.sc) > 0 {
			// What the cap costs: the best plan merged without it.
			_, usc, _ := in.improveStages(in.repairBudget(), best.pl, best.sc, stageCap{}, 0)
			uncapped = &UncappedPlan{Makespan: usc.Makespan, Stages: usc.StageCount(), PerDevice: slices.Max(append([]int{0}, usc.Stages...))}
		}
		if moves > 0 {
			plural := func(n int, w string) string {
				if n == 1 {
					return "1 " + w
				}
				return fmt.Sprintf("%d %ss", n, w)
			}
			change := fmt.Sprintf("a makespan %.1f%% lower once stage calls are priced", 100*(1-sc.Makespan/chosen.sc.Makespan))
			if sc.Makespan > chosen.sc.Makespan {
				var what []string
				if c.total > 0 {
					what = append(what, plural(c.total, "stage"))
				}
				if c.perDevice > 0 {
					what = append(what, plural(c.perDevice, "stage")+" per device")
				}
				change = fmt.Sprintf("a makespan %.1f%% higher, to fit the cap of %s", 100*(sc.Makespan/chosen.sc.Makespan-1), strings.Join(what, " and "))
			}
			s.notes = append(s.notes, diag.Notef(diag.NoteInfo, "%s's plan was merged: %s onto other devices left %s, with %s",
				chosen.Method, plural(moves, "stage move"), plural(sc.StageCount(), "stage"), change))
			c := *chosen
			c.pl, c.sc, c.Makespan, c.Feasible = pl, sc, sc.Makespan, sc.Feasible
			chosen = &c
		}
	}
	r := &Result{Method: chosen.Method, Objective: "latency", Placement: chosen.pl, Schedule: chosen.sc,
		Makespan: chosen.sc.Makespan, Throughput: chosen.sc.Throughput, Modules: s.modules, Uncapped: uncapped}
	if !in.latency() {
		r.Objective = "throughput"
	}
	// Bounds: drop any that contradicts a feasible plan (a solver fault), and say so. The
	// capped bounds count here, where the plan is within the caps.
	lb := 0.0
	for _, b := range append(s.bounds[:len(s.bounds):len(s.bounds)], s.capBounds...) {
		if b.Value > r.Makespan+tolerance(r.Makespan) && chosen.Feasible {
			s.notes = append(s.notes, diag.Notef(diag.NoteFault, "bound %s = %.6g exceeds the plan's makespan %.6g: discarded as a fault", b.Method, b.Value, r.Makespan))
			continue
		}
		r.Bounds = append(r.Bounds, b)
		lb = math.Max(lb, b.Value)
	}
	lb = math.Min(lb, r.Makespan)
	r.LowerBound = lb
	if r.Makespan > 0 {
		r.Gap = math.Max(0, 1-lb/r.Makespan)
	}
	gap := s.o.RelGap
	if gap == 0 {
		gap = defaultOptimalGap
	}
	r.Optimal = chosen.Feasible && r.Gap <= gap*(1+1e-9)
	for _, c := range s.cands {
		r.Candidates = append(r.Candidates, c.Candidate)
	}
	r.Notes = s.notes
	r.Nodes, r.Devices = in.summary(chosen.pl, chosen.sc)
	r.phases, r.searchIters = s.phases, s.searchIters
	r.Elapsed = time.Since(s.begin)
	r.Seconds = r.Elapsed.Seconds()
	return r, nil
}

func (in *inst) summary(pl *Placement, sc *Schedule) ([]NodePlan, []DevicePlan) {
	nodes := make([]NodePlan, in.numNodes)
	for i := range nodes {
		nodes[i] = NodePlan{Node: i, Name: in.problem.Nodes[i].Name, Device: -1, Start: math.Inf(1)}
		if !in.latency() {
			nodes[i].Share = make([]int, in.numDevices)
		}
	}
	devs := make([]DevicePlan, in.numDevices)
	for u := range devs {
		devs[u] = DevicePlan{Device: u, Name: in.problem.Devices[u].Name, Busy: sc.Busy[u], Memory: sc.Memory[u], Capacity: in.problem.Devices[u].Memory}
	}
	for _, t := range sc.Tasks {
		np := &nodes[t.Node]
		np.Start = math.Min(np.Start, t.Start)
		np.End = math.Max(np.End, t.End)
		if in.latency() {
			np.Device = t.Device
		} else {
			np.Share[t.Device] += t.Granules
		}
		devs[t.Device].Nodes++
		devs[t.Device].Granules += t.Granules
	}
	for i := range nodes {
		if math.IsInf(nodes[i].Start, 1) {
			nodes[i].Start = 0
		}
	}
	sort.SliceStable(devs, func(a, b int) bool { return devs[a].Device < devs[b].Device })
	return nodes, devs
}
