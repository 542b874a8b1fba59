package partition

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/onnxpart/onnxpart/diag"
)

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
	notes    []diag.Note
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
		s.notes = append(s.notes, diag.Notef(diag.NoteFault, "internal: %s produced an invalid plan (%v); discarded", source, err))
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
		s.notes = append(s.notes, diag.Notef(diag.NoteFault, "solver fault: %s bound %.10g exceeds the plan value %.10g; bound discarded", b.Method, b.Value, s.best))
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

func (s *solveState) note(k diag.NoteKind, format string, a ...any) {
	s.mu.Lock()
	s.notes = append(s.notes, diag.Notef(k, format, a...))
	s.mu.Unlock()
}

func (s *solveState) snapshot() (best float64, stage, device []int, order []int32, lb float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.best, append([]int(nil), s.stage...), append([]int(nil), s.device...), append([]int32(nil), s.order...), s.lb
}
