package partition

import (
	"fmt"
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
	Notes []diag.Note `json:"notes,omitempty"`
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
