// Package milp is onnxpart's small API over the HiGHS MIP/LP solver (github.com/lanl/highs
// v1.0.0 with a static HiGHS 1.10.0).
//
// What goes in: a Model of columns (bounds, objective cost, integrality) and rows (bounds and
// sparse coefficients), and Options (time limit, relative gap, seed, a MIP start). What comes
// out: a Result that always carries the status, the incumbent when one exists, its objective,
// the dual bound and the gap — also when the time limit or a context cancellation ends the
// solve, which the bare lanl/highs v1.0.0 API loses (see deps-go.md §1d).
//
// HiGHS uses one global thread scheduler per process, so the thread count is fixed once per
// process (SetThreads); solves may run concurrently from several goroutines.
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
	TimeLimit time.Duration // 0: none (a context deadline also limits the solve)
	RelGap    float64       // stop when (primal − dual)/|primal| ≤ RelGap; 0: HiGHS default 1e-4
	AbsGap    float64       // 0: HiGHS default
	Seed      int
	// Start is a MIP start: a full assignment of the columns (len == NumVars) tried as the
	// first incumbent. Ignored when infeasible.
	Start []float64
	// Presolve: "" (default: on, with PresolveRuleOff applied), "on", "off".
	Presolve string
	// PresolveRuleOff is HiGHS's presolve_rule_off bit mask. Default (0 here) means 128:
	// the aggregator rule, which highs-mtpp.md found to return wrong "optimal" bounds on
	// MTPP models with tiny coefficients. Set -1 to turn no rule off.
	PresolveRuleOff int
	// Cutoff, when not NaN/0 with HasCutoff, is an objective bound: solutions must be better.
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
	StatusUnknown    Status = iota
	Optimal                 // proved optimal (or within the requested gap: check Gap)
	Infeasible              // proved infeasible
	Unbounded               // unbounded or infeasible-or-unbounded
	TimeLimit               // stopped by the time limit; incumbent and bound may be present
	Interrupted             // stopped by context cancellation
	SolutionLimit           // stopped by another limit (nodes, solutions, objective bound)
	Error                   // the solver failed
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
	// Objective of the incumbent (valid when HasSolution).
	Objective float64
	// DualBound is a proved bound on the optimum: a lower bound when minimising, an upper
	// bound when maximising. ±Inf when nothing was proved.
	DualBound float64
	// Gap is HiGHS's relative gap |primal − dual| / max(|primal|, ε); +Inf without incumbent.
	Gap     float64
	Nodes   int64
	Elapsed time.Duration
}
