// The options whose values are words, as types with their constants.

package planner

// Objective is what a plan optimises (Options.Objective, Result.Objective).
type Objective string

// Objectives.
const (
	Throughput Objective = "throughput" // a pipeline (or a batched placement): the busiest stage
	Latency    Objective = "latency"    // a placement: the makespan of one input
)

// Cut says where a pipeline may cut (Options.CutAt).
type Cut string

// Where a pipeline may cut.
const (
	// CutAny lets a cut fall between any two nodes.
	CutAny Cut = "any"
	// CutBlocks cuts only between the model's repeated blocks (transformer layers, residual
	// blocks: graph/blocks), so stages hold whole layers and boundaries carry the hidden state.
	CutBlocks Cut = "blocks"
	// CutAuto, the default, cuts at block boundaries for models that carry state (decoders)
	// when that costs at most AutoBlockSlack of throughput against the best plan cutting
	// anywhere, and anywhere otherwise; a note says which and what it cost.
	CutAuto Cut = "auto"
)

// Solver names the search of a pipeline or the method of a placement (Options.Solver).
type Solver string

// Solvers. SolverAuto (or "") picks the objective's default; the others belong to one kind
// of plan, and a solver of the other kind is a usage error.
const (
	SolverAuto Solver = "auto"
	// Pipelines (package partition's searches).
	SolverBRKGA  Solver = "brkga"
	SolverRandom Solver = "random"
	SolverMLA    Solver = "mla"
	// Latency and batched placements (package schedule's methods).
	SolverMET    Solver = "met"
	SolverGreedy Solver = "greedy"
	SolverHEFT   Solver = "heft"
	SolverEA     Solver = "ea"
	SolverSA     Solver = "sa"
	SolverMILP   Solver = "milp"
	SolverSplit  Solver = "split"
)

// Solvers of each kind of plan.
var (
	pipelineSolvers  = []Solver{SolverAuto, SolverBRKGA, SolverRandom, SolverMLA}
	placementSolvers = []Solver{SolverAuto, SolverMET, SolverGreedy, SolverHEFT, SolverEA, SolverSA, SolverMILP, SolverSplit}
)

// Bounds is how hard a plan's lower bound is worked for (Options.Bounds).
type Bounds string

// Bound efforts ("" is BoundsFast).
const (
	BoundsNone   Bounds = "none"   // none beyond the trivial
	BoundsSimple Bounds = "simple" // closed-form bounds
	BoundsFast   Bounds = "fast"   // and the MIP bounds that finish quickly
	BoundsFull   Bounds = "full"   // and every MIP bound
)

// say names an option in an error or a note, with its value unless value is "": by the
// caller's name for it (Options.Names: the command's flags, "-k 8"), else as a Go caller
// writes it ("Options.MaxStages = 8").
func (o *Options) say(field, value string) string { return o.Names.Say(field, value) }

// name is the option's name alone (an error's subject).
func (o *Options) name(field string) string { return o.Names.Name(field) }
