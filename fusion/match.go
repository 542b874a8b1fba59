package fusion

import (
	"github.com/onnxpart/onnxpart/graph/dag"

	"sort"

	"github.com/onnxpart/onnxpart/graph"
)

// env is what pattern matching knows about the nodes of the working graph: op keys, which
// tensors are constants, which view nodes are folded (not part of any pattern), and for each
// node the nodes and tensors it reads (through folded views when they are transparent).
type env struct {
	g         *graph.Graph
	op        []string
	absorbed  []bool // node merged into its users' groups as a constant
	constT    []bool // tensor is an initializer or the output of an absorbed node
	invisible []bool // a view folded into a neighbour's group
	// transparent: patterns look through invisible views (RuleSet.TransparentViews)
	transparent bool
	srcNodes    [][]int
	srcTens     [][]int
}

// resolve follows a tensor back through invisible views to the tensor they alias, when
// views are transparent.
func (e *env) resolve(t int) int {
	for e.transparent {
		p := e.g.Tensors[t].Producer
		if p < 0 || !e.invisible[p] {
			return t
		}
		n := &e.g.Nodes[p]
		if len(n.Inputs) == 0 || n.Inputs[0] < 0 {
			return t
		}
		t = n.Inputs[0]
	}
	return t
}

// index fills srcNodes and srcTens; call after the invisible views are known.
func (e *env) index() {
	n := len(e.g.Nodes)
	e.srcNodes = make([][]int, n)
	e.srcTens = make([][]int, n)
	for v := range e.g.Nodes {
		if e.absorbed[v] {
			continue
		}
		var ts, ns []int
		for _, t := range e.g.Nodes[v].Deps() {
			if e.constT[t] {
				continue
			}
			r := e.resolve(t)
			ts = append(ts, r)
			if p := e.g.Tensors[r].Producer; p >= 0 {
				ns = append(ns, p)
			}
		}
		e.srcTens[v] = sortedUnique(ts)
		e.srcNodes[v] = sortedUnique(ns)
	}
}

func sortedUnique(s []int) []int { return dag.SortedUnique(s) }

func contains(sorted []int, x int) bool {
	i := sort.SearchInts(sorted, x)
	return i < len(sorted) && sorted[i] == x
}

// consumes reports whether node a reads an output of node b (through folded views).
func (e *env) consumes(a, b int) bool { return contains(e.srcNodes[a], b) }

// shares reports whether nodes a and b read a common non-constant tensor.
func (e *env) shares(a, b int) bool {
	x, y := e.srcTens[a], e.srcTens[b]
	for i, j := 0, 0; i < len(x) && j < len(y); {
		switch {
		case x[i] == y[j]:
			return true
		case x[i] < y[j]:
			i++
		default:
			j++
		}
	}
	return false
}

// accepts checks the node-local predicates of a step: op, attributes.
func (e *env) accepts(st *Step, v int) bool {
	if !st.ops[e.op[v]] {
		return false
	}
	n := &e.g.Nodes[v]
	for _, p := range st.Attrs {
		if !p.holds(n) {
			return false
		}
	}
	return true
}

// match is one way of laying a sequence of nodes over a window of a rule's steps.
type match struct {
	rule     *Rule
	start    int   // first step of the window
	end      int   // last step of the window
	pos      []int // step of each node of the sequence
	last     []int // index in the sequence of the last node of each step, -1 outside the window
	complete bool  // the window is the whole rule
}

// matchRule enumerates the ways seq lies over a contiguous window of r's steps, honouring
// every connection constraint inside the window; references to steps before the window are
// checked one level deep (some producer of the node has an op the earlier step accepts).
// visit returns true to stop; matchRule returns whether some visit did.
func (e *env) matchRule(r *Rule, seq []int, visit func(*match) bool) bool {
	L := len(r.Steps)
	m := &match{rule: r, pos: make([]int, len(seq)), last: make([]int, L)}
	fits := func(k, v int) bool {
		st := &r.Steps[k]
		if !e.accepts(st, v) {
			return false
		}
		for _, f := range st.From {
			if f >= m.start {
				if !e.consumes(v, seq[m.last[f]]) {
					return false
				}
				continue
			}
			ok := false
			for _, p := range e.srcNodes[v] {
				if r.Steps[f].ops[e.op[p]] {
					ok = true
					break
				}
			}
			if !ok {
				return false
			}
		}
		for _, j := range st.SameInput {
			if j >= m.start && !e.shares(v, seq[m.last[j]]) {
				return false
			}
		}
		if st.ConstOther && len(e.srcTens[v]) > max(1, len(st.From)+len(st.SameInput)) {
			return false
		}
		return true
	}
	var rec func(i, k int) bool
	rec = func(i, k int) bool {
		if i == len(seq) {
			m.end = k
			m.complete = m.start == 0 && k == L-1
			return visit(m)
		}
		v := seq[i]
		if st := &r.Steps[k]; st.Repeat && e.accepts(st, v) && e.consumes(v, seq[i-1]) &&
			(!st.ConstOther || len(e.srcTens[v]) <= 1) {
			prev := m.last[k]
			m.last[k], m.pos[i] = i, k
			if rec(i+1, k) {
				return true
			}
			m.last[k] = prev
		}
		if k+1 < L && fits(k+1, v) {
			m.last[k+1], m.pos[i] = i, k+1
			if rec(i+1, k+1) {
				return true
			}
			m.last[k+1] = -1
		}
		return false
	}
	for a := 0; a < L; a++ {
		for k := range m.last {
			m.last[k] = -1
		}
		m.start = a
		if fits(a, seq[0]) {
			m.last[a], m.pos[0] = 0, a
			if rec(1, a) {
				return true
			}
		}
	}
	return false
}

// mayMatch is a cheap filter: every node's op appears somewhere in the rule.
func (e *env) mayMatch(r *Rule, seq []int) bool {
	if len(seq) > 1 && !r.hasRepeat && len(seq) > len(r.Steps) {
		return false
	}
	for _, v := range seq {
		if !r.allOps[e.op[v]] {
			return false
		}
	}
	return true
}
