// Package milp is onnxpart's small API over the HiGHS MIP/LP solver (github.com/lanl/highs
// v1.0.0 with a static HiGHS 1.10.0).
//
// What goes in: a Model of columns (bounds, objective cost, integrality) and rows (bounds and
// sparse coefficients), and Options (time limit, gaps, seed, presolve, cutoff, a MIP start).
// What comes out: a Result that always carries the status, the incumbent when one exists, its
// objective, the dual bound and the gap — also when the time limit or a context cancellation
// ends the solve, which the bare lanl/highs v1.0.0 API loses (see deps-go.md §1d). A small cgo
// shim (shim.go) reads those straight from the HiGHS object, and adds the MIP start and the
// interrupt callback that lanl/highs lacks.
//
// HiGHS's thread count must be one value per process, so it is fixed once (SetThreads,
// default 1); solves may run concurrently from several goroutines.
//
// Building needs cgo and the environment from `eval "$(make -s env)"` (PKG_CONFIG_PATH to the
// HiGHS build, static libstdc++/zlib in CGO_LDFLAGS).
package milp

import (
	"math"
	"time"
)

// Inf is the bound used for "no bound".
var Inf = math.Inf(1)

// Model is a linear (mixed-integer) program: minimise (or maximise) c·x subject to
// RowLo ≤ A·x ≤ RowHi and ColLo ≤ x ≤ ColHi, with x[j] integer where Integer[j].
type Model struct {
	Maximize bool
	Obj      []float64
	ColLo    []float64
	ColHi    []float64
	Integer  []bool
	Names    []string // optional column names, for debugging dumps
	RowLo    []float64
	RowHi    []float64
	// Rows in sparse form: row i has entries RowCols[i][k], RowVals[i][k].
	RowCols [][]int
	RowVals [][]float64
}

// AddVar adds a column and returns its index.
func (m *Model) AddVar(lo, hi, cost float64, integer bool, name string) int {
	m.Obj = append(m.Obj, cost)
	m.ColLo = append(m.ColLo, lo)
	m.ColHi = append(m.ColHi, hi)
	m.Integer = append(m.Integer, integer)
	m.Names = append(m.Names, name)
	return len(m.Obj) - 1
}

// AddBinary adds a 0/1 column.
func (m *Model) AddBinary(cost float64, name string) int { return m.AddVar(0, 1, cost, true, name) }

// AddRow adds lo ≤ Σ vals[k]·x[cols[k]] ≤ hi and returns the row index. Use ±Inf for a
// one-sided row. Repeated columns in one row are summed.
func (m *Model) AddRow(lo, hi float64, cols []int, vals []float64) int {
	if len(cols) != len(vals) {
		panic("milp: AddRow with mismatched cols and vals")
	}
	m.RowLo = append(m.RowLo, lo)
	m.RowHi = append(m.RowHi, hi)
	m.RowCols = append(m.RowCols, append([]int(nil), cols...))
	m.RowVals = append(m.RowVals, append([]float64(nil), vals...))
	return len(m.RowLo) - 1
}

// NumVars is the number of columns.
func (m *Model) NumVars() int { return len(m.Obj) }

// NumRows is the number of rows.
func (m *Model) NumRows() int { return len(m.RowLo) }

// Options control one solve. The zero value means: no time limit, HiGHS's default gap,
// seed 0, presolve on with the rules known to be unsafe on MTPP models switched off.
type Options struct {
	TimeLimit time.Duration // 0: none (a context deadline also limits the solve; the sooner wins)
	RelGap    float64       // stop when (primal − dual)/|primal| ≤ RelGap; 0: HiGHS default 1e-4 (use e.g. 1e-9 for an exhaustive search)
	AbsGap    float64       // stop when primal − dual ≤ AbsGap; 0: HiGHS default 1e-6
	Seed      int           // HiGHS random_seed
	// MaxNodes stops a MIP after this many branch-and-bound nodes (Status SolutionLimit);
	// 0: no limit.
	MaxNodes int
	// Start is a MIP start: a full assignment of the columns (len == NumVars) tried as the
	// first incumbent. When it violates a row or bound, HiGHS fixes its integer values and
	// tries to complete it with an LP (or, if some are fractional, a small MIP); when that
	// fails too it is ignored. Ignored for LPs (and with LP set).
	Start []float64
	// Presolve: "" (default: on, with PresolveRuleOff applied), "on", "off".
	Presolve string
	// PresolveRuleOff is HiGHS's presolve_rule_off bit mask. Default (0 here) means 128
	// (bit 7, the ForcingCol rule): highs-mtpp.md found the ForcingCol and Aggregator (4096)
	// rules returning wrong "optimal" bounds on MTPP models with tiny coefficients, and either
	// mask fixed it. Set -1 to turn no rule off.
	PresolveRuleOff int
	// With HasCutoff, Cutoff is an objective bound (HiGHS's objective_bound, in either
	// sense): a MIP prunes everything no better than Cutoff (up to tolerances: a solution
	// equal to it may come back). When nothing better exists the Status is Infeasible and
	// DualBound is Cutoff (the optimum is no better than it). HiGHS applies it to an LP only
	// to stop the dual simplex early when minimising (again Infeasible with DualBound Cutoff);
	// otherwise an LP's optimum comes back even if it is not better than Cutoff.
	Cutoff    float64
	HasCutoff bool
	// LP relaxes integrality (solves the LP relaxation).
	LP bool
	// Log writes HiGHS's log to stderr.
	Log bool
}

// Status is the outcome of a solve.
type Status int

// Solve outcomes.
const (
	StatusUnknown Status = iota
	Optimal              // proved optimal (or within the requested gap: check Gap)
	Infeasible           // proved infeasible (with a cutoff: nothing better than Cutoff)
	Unbounded            // unbounded or infeasible-or-unbounded
	TimeLimit            // stopped by the time limit; incumbent and bound may be present
	Interrupted          // stopped by context cancellation
	SolutionLimit        // stopped by another limit (MaxNodes, iterations); incumbent and bound may be present
	Error                // the solver failed
)

func (s Status) String() string {
	switch s {
	case Optimal:
		return "optimal"
	case Infeasible:
		return "infeasible"
	case Unbounded:
		return "unbounded"
	case TimeLimit:
		return "time-limit"
	case Interrupted:
		return "interrupted"
	case SolutionLimit:
		return "limit"
	case Error:
		return "error"
	default:
		return "unknown"
	}
}

// Result of a solve.
type Result struct {
	Status Status
	// HasSolution is true when X holds a feasible incumbent.
	HasSolution bool
	X           []float64
	// Objective of the incumbent (valid when HasSolution; otherwise +Inf when minimising,
	// −Inf when maximising).
	Objective float64
	// DualBound is a proved bound on the optimum: a lower bound when minimising, an upper
	// bound when maximising, never beyond the incumbent's Objective. −Inf when minimising
	// (+Inf when maximising) if nothing was proved; the opposite infinity when the model is
	// proved infeasible (Cutoff when a cutoff was set). A MIP stopped on its gap is reported
	// Optimal by HiGHS: DualBound (and Gap) stay honest, so check them.
	DualBound float64
	// Gap is HiGHS's relative gap |Objective − DualBound| / |Objective| (0 when both are 0);
	// +Inf without an incumbent or without a finite bound.
	Gap     float64
	Nodes   int64         // branch-and-bound nodes (MIP only)
	Elapsed time.Duration // wall time of Solve
}
