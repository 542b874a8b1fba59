package milp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/onnxpart/onnxpart/diag"
)

// defaultPresolveRuleOff is presolve_rule_off's value when Options.PresolveRuleOff is 0.
const defaultPresolveRuleOff = 128

var threadCount struct {
	sync.Mutex
	n int
}

// SetThreads fixes the number of threads HiGHS uses, for the whole process, and returns the
// number in effect. HiGHS 1.10 keeps its scheduler per OS thread and refuses a solve whose
// `threads` option differs from the scheduler's (deps-go.md §1e); since goroutines move
// between OS threads, the only safe rule is one value per process. So only the first call
// counts, and it must come before the first Solve: later calls, and calls after a solve has
// fixed the default (1), change nothing and return the value in effect. n < 1 means 1.
//
// One thread is a good choice: HiGHS 1.10's branch and bound is effectively serial
// (highs-mtpp.md), so use more cores by running several solves concurrently instead. With
// n > 1 every OS thread that has run a solve keeps n−1 HiGHS worker threads, and concurrent
// solves oversubscribe the cores (8 concurrent small solves took 6 s at n = 2 against 0.3 s at
// n = 1 on the 2-core machine).
func SetThreads(n int) int {
	threadCount.Lock()
	defer threadCount.Unlock()
	if threadCount.n == 0 {
		threadCount.n = max(n, 1)
	}
	return threadCount.n
}

// Solve solves the model with HiGHS. Only an invalid model or options, or a failure inside
// HiGHS, is an error (then Result.Status is Error); a solve stopped early is not: check
// Result.Status, HasSolution and DualBound.
//
// The solve stops at the sooner of opt.TimeLimit and ctx's deadline, or when ctx is cancelled
// (Status Interrupted; TimeLimit when the deadline passed). HiGHS checks for cancellation in
// its simplex and IPM iterations and between branch-and-bound steps of a MIP, but not inside
// presolve or inside one LP solve of a MIP (the root LP of a very large MIP, say), which the
// time limit still bounds: cancellation is prompt except there.
//
// Solve may be called from several goroutines at once, on different or the same Model (the
// Model is only read).
func (m *Model) Solve(ctx context.Context, opt Options) (*Result, error) {
	return m.hooked(ctx, opt)
}

func (m *Model) solve(ctx context.Context, opt Options) (*Result, error) {
	begin := time.Now()
	sense := 1.0
	if m.Maximize {
		sense = -1
	}
	res := &Result{Status: Error, Objective: sense * math.Inf(1), DualBound: -sense * math.Inf(1), Gap: math.Inf(1)}
	fail := func(err error) (*Result, error) {
		res.Status = Error
		res.Elapsed = time.Since(begin)
		return res, err
	}
	if err := m.validate(opt); err != nil {
		return fail(err)
	}
	timeLimit := opt.TimeLimit
	expired := ctx.Err() != nil
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		expired = expired || left <= 0
		if timeLimit == 0 || left < timeLimit {
			timeLimit = left
		}
	}
	if expired {
		// Nothing was solved; nothing is known.
		res.Status = stoppedStatus(ctx)
		res.Elapsed = time.Since(begin)
		return res, nil
	}
	if m.NumVars() == 0 {
		m.solveEmpty(res)
		res.Elapsed = time.Since(begin)
		return res, nil
	}

	in, err := newInstance()
	if err != nil {
		return fail(err)
	}
	defer in.free()
	// The callback goes in first: passing the model already logs a header.
	cancellable := ctx.Done() != nil
	if err := in.watch(cancellable, opt.Log); err != nil {
		return fail(err)
	}
	mip := m.isMIP(opt)
	if err := m.load(in, opt, mip); err != nil {
		return fail(err)
	}
	if err := setOptions(in, opt, timeLimit, m.Maximize); err != nil {
		return fail(err)
	}
	if mip && opt.Start != nil {
		if st := in.setStart(opt.Start); st.failed() {
			return fail(errors.New("milp: HiGHS rejected the MIP start (Highs_setSolution)"))
		}
	}

	// Cancellation sets the C-side flag that the callback reports to HiGHS. The AfterFunc must
	// have finished before in.free releases that flag.
	var stop func() bool
	stopped := make(chan struct{})
	if cancellable {
		stop = context.AfterFunc(ctx, func() {
			defer close(stopped)
			in.interrupt()
		})
	}
	runStatus := in.run()
	if stop != nil && !stop() {
		<-stopped
	}

	m.readResult(ctx, in, res, opt, mip)
	res.Elapsed = time.Since(begin)
	if runStatus.failed() || res.Status == Error {
		res.Status = Error
		return res, diag.Internal("milp: HiGHS solve failed (model status %d)", in.modelStatus())
	}
	return res, nil
}

// stoppedStatus is the status of a solve that ctx stopped.
func stoppedStatus(ctx context.Context) Status {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return TimeLimit
	}
	if ctx.Err() == nil { // the deadline is due but ctx has not noticed yet
		return TimeLimit
	}
	return Interrupted
}

func (m *Model) isMIP(opt Options) bool {
	if opt.LP {
		return false
	}
	for _, integer := range m.Integer {
		if integer {
			return true
		}
	}
	return false
}

// validate checks the model's shape and numbers, and the options, before any C call.
func (m *Model) validate(opt Options) error {
	n := len(m.Obj)
	if len(m.ColLo) != n || len(m.ColHi) != n {
		return diag.Internal("milp: %d costs but %d lower and %d upper column bounds", n, len(m.ColLo), len(m.ColHi))
	}
	if len(m.Integer) != 0 && len(m.Integer) != n {
		return diag.Internal("milp: %d columns but %d integrality flags", n, len(m.Integer))
	}
	if len(m.Names) != 0 && len(m.Names) != n {
		return diag.Internal("milp: %d columns but %d names", n, len(m.Names))
	}
	rows := len(m.RowLo)
	if len(m.RowHi) != rows || len(m.RowCols) != rows || len(m.RowVals) != rows {
		return diag.Internal("milp: inconsistent row counts: %d lower, %d upper bounds, %d index and %d value lists",
			rows, len(m.RowHi), len(m.RowCols), len(m.RowVals))
	}
	if n > math.MaxInt32 || rows > math.MaxInt32 {
		return diag.Input("milp: model too large for HiGHS (%d columns, %d rows)", n, rows)
	}
	for j := range n {
		if math.IsNaN(m.Obj[j]) || math.IsInf(m.Obj[j], 0) {
			return diag.Internal("milp: column %s has cost %v", m.colName(j), m.Obj[j])
		}
		if math.IsNaN(m.ColLo[j]) || math.IsNaN(m.ColHi[j]) {
			return diag.Internal("milp: column %s has a NaN bound", m.colName(j))
		}
	}
	nnz := 0
	for i := range rows {
		if math.IsNaN(m.RowLo[i]) || math.IsNaN(m.RowHi[i]) {
			return diag.Internal("milp: row %d has a NaN bound", i)
		}
		if len(m.RowCols[i]) != len(m.RowVals[i]) {
			return diag.Internal("milp: row %d has %d columns but %d coefficients", i, len(m.RowCols[i]), len(m.RowVals[i]))
		}
		for k, j := range m.RowCols[i] {
			if j < 0 || j >= n {
				return diag.Internal("milp: row %d refers to column %d of %d", i, j, n)
			}
			if v := m.RowVals[i][k]; math.IsNaN(v) || math.IsInf(v, 0) {
				return diag.Internal("milp: row %d has coefficient %v for column %s", i, v, m.colName(j))
			}
		}
		nnz += len(m.RowCols[i])
	}
	if nnz > math.MaxInt32 {
		return diag.Input("milp: model too large for HiGHS (%d nonzeros)", nnz)
	}
	if opt.Start != nil {
		if len(opt.Start) != n {
			return diag.Internal("milp: MIP start has %d values for %d columns", len(opt.Start), n)
		}
		for j, v := range opt.Start {
			if math.IsNaN(v) {
				return diag.Internal("milp: MIP start value of column %s is NaN", m.colName(j))
			}
		}
	}
	switch opt.Presolve {
	case "", "on", "off":
	default:
		return diag.Internal("milp: Presolve must be \"\", \"on\" or \"off\", not %q", opt.Presolve)
	}
	if opt.RelGap < 0 || opt.AbsGap < 0 || math.IsNaN(opt.RelGap) || math.IsNaN(opt.AbsGap) {
		return diag.Internal("milp: negative or NaN gap (RelGap %v, AbsGap %v)", opt.RelGap, opt.AbsGap)
	}
	if opt.HasCutoff && math.IsNaN(opt.Cutoff) {
		return errors.New("milp: Cutoff is NaN")
	}
	if opt.TimeLimit < 0 {
		return diag.Internal("milp: negative TimeLimit %v", opt.TimeLimit)
	}
	if opt.MaxNodes < 0 || opt.MaxNodes > math.MaxInt32 {
		return diag.Internal("milp: MaxNodes %d out of range", opt.MaxNodes)
	}
	return nil
}

func (m *Model) colName(j int) string {
	if j < len(m.Names) && m.Names[j] != "" {
		return fmt.Sprintf("%d (%s)", j, m.Names[j])
	}
	return fmt.Sprint(j)
}

// load passes the model to HiGHS, summing repeated columns within a row and dropping zeros.
func (m *Model) load(in *instance, opt Options, mip bool) error {
	n := m.NumVars()
	start := make([]int32, 0, m.NumRows())
	var index []int32
	var value []float64
	pos := make([]int, n) // pos[j]-1: where column j sits in the current row's entries; 0: absent
	for i := range m.RowLo {
		first := len(value)
		start = append(start, int32(first))
		for k, j := range m.RowCols[i] {
			if pos[j] > 0 {
				value[pos[j]-1] += m.RowVals[i][k]
				continue
			}
			pos[j] = len(value) + 1
			index = append(index, int32(j))
			value = append(value, m.RowVals[i][k])
		}
		for _, j := range m.RowCols[i] {
			pos[j] = 0
		}
		// Drop entries that are (or summed to) zero; HiGHS would warn about them.
		kept := first
		for k := first; k < len(value); k++ {
			if value[k] != 0 {
				index[kept], value[kept] = index[k], value[k]
				kept++
			}
		}
		index, value = index[:kept], value[:kept]
	}
	if len(value) == 0 {
		start = nil
	}
	var integrality []int32
	if mip {
		integrality = make([]int32, n)
		for j, integer := range m.Integer {
			if integer {
				integrality[j] = 1 // kHighsVarTypeInteger
			}
		}
	}
	// Logging is configured before the model is passed, since passing logs a header.
	if err := in.raw.SetBoolOption("output_flag", opt.Log); err != nil {
		return diag.Internal("milp: setting output_flag: %w", err)
	}
	if st := in.pass(m.Maximize, m.Obj, m.ColLo, m.ColHi, m.RowLo, m.RowHi, start, index, value, integrality); st.failed() {
		return errors.New("milp: HiGHS rejected the model (Highs_passMip); run with Options.Log for its reason")
	}
	return nil
}

// setOptions applies Options (and the thread count) to the HiGHS instance.
func setOptions(in *instance, opt Options, timeLimit time.Duration, maximize bool) error {
	r := in.raw
	var firstErr error
	check := func(name string, err error) {
		if err != nil && firstErr == nil {
			firstErr = diag.Internal("milp: setting HiGHS option %s: %w", name, err)
		}
	}
	check("threads", r.SetIntOption("threads", SetThreads(1)))
	check("random_seed", r.SetIntOption("random_seed", opt.Seed))
	if timeLimit > 0 {
		check("time_limit", r.SetFloat64Option("time_limit", timeLimit.Seconds()))
	}
	if opt.RelGap > 0 {
		check("mip_rel_gap", r.SetFloat64Option("mip_rel_gap", opt.RelGap))
	}
	if opt.AbsGap > 0 {
		check("mip_abs_gap", r.SetFloat64Option("mip_abs_gap", opt.AbsGap))
	}
	if opt.MaxNodes > 0 {
		check("mip_max_nodes", r.SetIntOption("mip_max_nodes", opt.MaxNodes))
	}
	switch opt.Presolve {
	case "on", "off":
		check("presolve", r.SetStringOption("presolve", opt.Presolve))
	}
	ruleOff := opt.PresolveRuleOff
	switch ruleOff {
	case 0:
		ruleOff = defaultPresolveRuleOff
	case -1:
		ruleOff = 0
	}
	check("presolve_rule_off", r.SetIntOption("presolve_rule_off", ruleOff))
	if opt.HasCutoff {
		check("objective_bound", r.SetFloat64Option("objective_bound", cutoffOption(opt.Cutoff, maximize)))
	}
	return firstErr
}
