package emit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/typo"
)

// Assignment gives every node of a model a stage.
type Assignment struct {
	// Stage[v] is the stage label of node v (v indexes the model graph's nodes). Labels are
	// names, not positions: they need not be dense nor in pipeline order (NewLayout orders and
	// renumbers the stages). Weight-only nodes go with their consumers whatever their label.
	Stage []int
	// Devices optionally gives the device of each label (index = label); labels without an
	// entry, or with empty fields, run on DefaultDevice with DefaultProvider.
	Devices []Device
	// Split records how the assignment was made, for the manifest.
	Split SplitInfo
	// Notes are carried into the manifest (e.g. how FLOPs were counted for --stages).
	Notes []diag.Note
	// Recompute, when set, marks nodes (by index of the model graph) that every stage reading
	// their outputs computes itself instead of receiving them, as weight-only nodes are: the
	// cheap cones that turn graph inputs into tensors every block reads (a decoder's causal
	// mask, its rotary tables). Their inputs must be graph inputs, weights or outputs of other
	// such nodes.
	Recompute []bool
}

// Device names where a stage runs.
type Device struct {
	Name string
	// Provider is an ONNX Runtime execution provider name, e.g. CUDAExecutionProvider.
	Provider string
}

// Defaults for stages whose device is not given.
const (
	DefaultDevice   = "cpu"
	DefaultProvider = "CPUExecutionProvider"
)

// cutErr is a --cut that cannot be applied (an unknown tensor, a tensor no node produces,
// two cuts at the same place, a cut after the last node): a *diag.Error of kind usage about
// the tensor, `cut "TENSOR": REASON`.
func cutErr(tensor, format string, a ...any) *diag.Error {
	return diag.Usage("cut %q: %s", tensor, fmt.Sprintf(format, a...)).About(diag.Tensor, tensor)
}

// StageCount is the cause of the error for a stage count the graph cannot be cut into (a
// *diag.Error of kind usage with StageCount's message): how many stages were asked for and
// how many nodes can start a stage.
type StageCount struct {
	Stages int
	Max    int // nodes that can start a stage (0: not counted, when Stages < 1)
}

// Error says how many stages the graph can be cut into at most.
func (e *StageCount) Error() string {
	if e.Stages < 1 {
		return fmt.Sprintf("cannot cut into %d stages: need at least 1", e.Stages)
	}
	return fmt.Sprintf("cannot cut into %d stages: the model has only %d nodes that are not computed from weights alone", e.Stages, e.Max)
}

func stageCountErr(n, max int) *diag.Error {
	return diag.Wrap(diag.KindUsage, &StageCount{Stages: n, Max: max})
}

// CutAfter splits the graph's topological order (g.TopoOrder: model order where the model
// is sorted) into stages: a new stage starts right after the node producing each named
// tensor. The result gives each node its stage, 0..len(tensors).
func CutAfter(g *graph.Graph, tensors []string) ([]int, error) {
	order := g.TopoOrder()
	pos := make([]int, len(g.Nodes))
	for i, v := range order {
		pos[v] = i
	}
	type cut struct {
		at     int // stage boundary: the nodes order[at:] come after
		tensor string
	}
	var cuts []cut
	seen := map[string]bool{}
	for _, name := range tensors {
		if seen[name] {
			return nil, cutErr(name, "given twice")
		}
		seen[name] = true
		id, ok := g.TensorByName(name)
		if !ok {
			reason := "no tensor of that name in the model"
			if s := closest(name, tensorNames(g)); s != "" {
				reason += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return nil, cutErr(name, "%s", reason)
		}
		t := &g.Tensors[id]
		if t.Producer < 0 {
			return nil, cutErr(name, "is a model %s, not produced by a node; cut after a node's output", t.Kind)
		}
		at := pos[t.Producer] + 1
		if at == len(order) {
			return nil, cutErr(name, "its producer %s is the last node: no stage would follow", g.Nodes[t.Producer].Label())
		}
		cuts = append(cuts, cut{at, name})
	}
	sort.SliceStable(cuts, func(i, j int) bool { return cuts[i].at < cuts[j].at })
	for i := 1; i < len(cuts); i++ {
		if cuts[i].at == cuts[i-1].at {
			return nil, cutErr(cuts[i].tensor, "falls at the same place as the cut %q (both are outputs of node %s)",
				cuts[i-1].tensor, g.Nodes[order[cuts[i].at-1]].Label())
		}
	}
	bounds := make([]int, len(cuts))
	for i, c := range cuts {
		bounds[i] = c.at
	}
	return stagesFromBounds(g, order, bounds), nil
}

// stagesFromBounds gives order[bounds[i-1]:bounds[i]] stage i.
func stagesFromBounds(g *graph.Graph, order, bounds []int) []int {
	stage := make([]int, len(g.Nodes))
	s := 0
	for i, v := range order {
		for s < len(bounds) && i >= bounds[s] {
			s++
		}
		stage[v] = s
	}
	return stage
}

// EqualFLOPs cuts the topological order g.TopoOrder() into n consecutive parts of about
// equal FLOPs: part j ends where the running FLOP count comes closest to (j+1)/n of the
// total, subject to every part holding at least one node that is not computed from weights
// alone (those go with their consumers and would leave a part empty). When the graph's
// FLOPs are unknown (all zero, e.g. symbolic shapes) the parts hold equal node counts.
func EqualFLOPs(g *graph.Graph, n int) ([]int, error) {
	order := g.TopoOrder()
	var movable []int // positions in order of nodes that can anchor a stage
	for i, v := range order {
		if !g.Nodes[v].Static {
			movable = append(movable, i)
		}
	}
	if n < 1 || n > len(movable) {
		return nil, stageCountErr(n, len(movable))
	}
	w := make([]float64, len(order))
	var total float64
	for i, v := range order {
		w[i] = float64(max(g.Nodes[v].FLOPs, 0))
		total += w[i]
	}
	if total == 0 {
		for _, i := range movable {
			w[i] = 1
		}
		total = float64(len(movable))
	}
	prefix := make([]float64, len(order)+1) // prefix[i] = FLOPs of order[:i]
	for i := range order {
		prefix[i+1] = prefix[i] + w[i]
	}
	// A boundary b means the next stage starts at order[b]. Stage j (from bounds[j-1] to
	// bounds[j]) must contain a movable node: with m(b) = number of movable positions < b,
	// that is m(bounds[j]) > m(bounds[j-1]), and the last stage needs m(len) > m(bounds[n-2]).
	movBefore := make([]int, len(order)+1)
	for i := range order {
		movBefore[i+1] = movBefore[i]
		if !g.Nodes[order[i]].Static {
			movBefore[i+1]++
		}
	}
	bounds := make([]int, 0, n-1)
	prev := 0
	for j := 1; j < n; j++ {
		target := total * float64(j) / float64(n)
		// Feasible boundaries b: at least j movable nodes before b (one per earlier stage, and
		// more than before prev) and at least n-j movable nodes from b on.
		lo, hi := -1, -1
		for b := prev + 1; b < len(order); b++ {
			if movBefore[b] <= movBefore[prev] || movBefore[b] < j {
				continue
			}
			if len(movable)-movBefore[b] < n-j {
				break
			}
			if lo < 0 {
				lo = b
			}
			hi = b
		}
		if lo < 0 { // cannot happen when n ≤ len(movable)
			return nil, stageCountErr(n, len(movable))
		}
		best := lo
		for b := lo; b <= hi; b++ {
			if abs(prefix[b]-target) < abs(prefix[best]-target) {
				best = b
			}
		}
		bounds = append(bounds, best)
		prev = best
	}
	return stagesFromBounds(g, order, bounds), nil
}

// EqualFLOPsAt cuts order (a topological order of all of g's nodes) into n consecutive
// parts of about equal FLOPs, cutting only at the positions of at (ascending, each in
// 1..len(order)-1; position b starts a part at order[b]): for j = 1..n-1, the cut is the
// position left after the previous cut, with enough positions after it for the remaining
// cuts, whose running FLOP count is nearest to j/n of the total. It is how a split cuts only
// between a model's repeated blocks (graph/blocks.Order and Boundaries). As with EqualFLOPs,
// unknown FLOPs (all zero) count the nodes not computed from weights alone. Fewer positions
// than n-1 is an error.
func EqualFLOPsAt(g *graph.Graph, n int, order, at []int) ([]int, error) {
	if n < 1 {
		return nil, stageCountErr(n, 0)
	}
	if len(order) != len(g.Nodes) {
		return nil, diag.Internal("the order holds %d nodes, the model %d", len(order), len(g.Nodes))
	}
	for i, b := range at {
		if b < 1 || b >= len(order) || (i > 0 && b <= at[i-1]) {
			return nil, diag.Internal("cut positions %v: want ascending positions in 1..%d", at, len(order)-1)
		}
	}
	if len(at) < n-1 {
		return nil, diag.Usage("cannot cut into %d stages at %d places", n, len(at))
	}
	prefix := make([]float64, len(order)+1) // prefix[i] = FLOPs of order[:i]
	for i, v := range order {
		prefix[i+1] = prefix[i] + float64(max(g.Nodes[v].FLOPs, 0))
	}
	if prefix[len(order)] == 0 {
		for i, v := range order {
			prefix[i+1] = prefix[i]
			if !g.Nodes[v].Static {
				prefix[i+1]++
			}
		}
	}
	total := prefix[len(order)]
	bounds := make([]int, 0, n-1)
	next := 0 // index in at of the first position still free
	for j := 1; j < n; j++ {
		target := total * float64(j) / float64(n)
		last := len(at) - (n - 1 - j) // positions after this cut are kept for the others
		best := next
		for k := next; k < last; k++ {
			if abs(prefix[at[k]]-target) < abs(prefix[at[best]]-target) {
				best = k
			}
		}
		bounds = append(bounds, at[best])
		next = best + 1
	}
	return stagesFromBounds(g, order, bounds), nil
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// ReadAssignment reads a JSON object mapping node names to stage labels, e.g.
// {"conv1": 0, "fc": 1}. Unnamed nodes are addressed as op#index (graph.Node.Label). Every
// node must be listed except nodes computed from weights alone, which go with their
// consumers anyway. Unknown names, names several nodes share, keys given twice, negative or
// non-integer stages are errors (*diag.Error of kind input, about the node where one is named).
func ReadAssignment(r io.Reader, g *graph.Graph) ([]int, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<30))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, diag.Input("assignment: not JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, diag.Input(`assignment: want a JSON object {"node name": stage, …}`)
	}
	byLabel := map[string]int{}
	dup := map[string]bool{}
	for i := range g.Nodes {
		l := g.Nodes[i].Label()
		if _, ok := byLabel[l]; ok {
			dup[l] = true
		}
		byLabel[l] = i
	}
	stage := make([]int, len(g.Nodes))
	for i := range stage {
		stage[i] = -1
	}
	seen := map[string]bool{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, diag.Input("assignment: %w", err)
		}
		key := kt.(string)
		var num json.Number
		if err := dec.Decode(&num); err != nil {
			return nil, diag.Input("assignment: node %q: the stage must be a number", key).About(diag.Node, key)
		}
		s, err := strconv.ParseInt(string(num), 10, 32)
		if err != nil || s < 0 {
			return nil, diag.Input("assignment: node %q: stage %s is not a non-negative integer", key, num).About(diag.Node, key)
		}
		if seen[key] {
			return nil, diag.Input("assignment: node %q is listed twice", key).About(diag.Node, key)
		}
		seen[key] = true
		v, ok := byLabel[key]
		if !ok {
			msg := fmt.Sprintf("assignment: no node named %q in the model", key)
			if s := closest(key, nodeLabels(g)); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return nil, diag.Input("%s", msg).About(diag.Node, key)
		}
		if dup[key] {
			return nil, diag.Input("assignment: several nodes are named %q; the assignment cannot tell them apart", key).About(diag.Node, key)
		}
		stage[v] = int(s)
	}
	if _, err := dec.Token(); err != nil {
		return nil, diag.Input("assignment: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, diag.Input("assignment: trailing data after the JSON object")
	}
	var missing []string
	nMissing := 0
	for v := range g.Nodes {
		if stage[v] < 0 && !g.Nodes[v].Static {
			nMissing++
			if len(missing) < 5 {
				missing = append(missing, strconv.Quote(g.Nodes[v].Label()))
			}
		}
	}
	if nMissing > 0 {
		more := ""
		if nMissing > len(missing) {
			more = fmt.Sprintf(" and %d more", nMissing-len(missing))
		}
		return nil, diag.Input("assignment: %d nodes have no stage: %s%s", nMissing, strings.Join(missing, ", "), more)
	}
	// Unlisted weight-only nodes take the stage of their first consumer (they are emitted
	// with every consumer anyway; the label only matters for one that feeds nothing).
	order := g.TopoOrder()
	for i := len(order) - 1; i >= 0; i-- {
		v := order[i]
		if stage[v] >= 0 {
			continue
		}
		stage[v] = 0
		for _, c := range g.Succs(v) {
			if stage[c] >= 0 {
				stage[v] = stage[c]
				break
			}
		}
	}
	return stage, nil
}

func tensorNames(g *graph.Graph) []string {
	out := make([]string, len(g.Tensors))
	for i := range g.Tensors {
		out[i] = g.Tensors[i].Name
	}
	return out
}

func nodeLabels(g *graph.Graph) []string {
	out := make([]string, len(g.Nodes))
	for i := range g.Nodes {
		out[i] = g.Nodes[i].Label()
	}
	return out
}

// closest returns the candidate nearest to s by edit distance when it is close enough to
// be a likely typo, else "".
func closest(s string, candidates []string) string {
	best, bestD := "", len(s)/3+1
	for _, c := range candidates {
		if d := abs(float64(len(c) - len(s))); int(d) >= bestD {
			continue
		}
		if d := typo.Distance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

var errNoStages = diag.Input("the assignment has no nodes")

// markRecompute gives the nodes of recompute the recompute role; a node that reads an
// activation other than a graph input or another such node's output is an error (every
// stage could not compute it).
func markRecompute(g *graph.Graph, role []int, recompute []bool) error {
	if recompute == nil {
		return nil
	}
	if len(recompute) != len(g.Nodes) {
		return diag.Internal("recompute marks %d nodes, the model has %d", len(recompute), len(g.Nodes))
	}
	for _, v := range g.TopoOrder() {
		if !recompute[v] || role[v] == roleStatic {
			continue
		}
		for _, t := range g.Nodes[v].Deps() {
			tt := &g.Tensors[t]
			if tt.Producer >= 0 && role[tt.Producer] != roleStatic && role[tt.Producer] != roleRecompute && role[tt.Producer] != roleShapeOnly {
				return diag.Input("node %s cannot be recomputed in every stage: it reads %q, computed by %s", g.Nodes[v].Label(), tt.Name, g.Nodes[tt.Producer].Label()).About(diag.Node, g.Nodes[v].Label())
			}
		}
		role[v] = roleRecompute
	}
	return nil
}
