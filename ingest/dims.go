package ingest

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/onnxpart/onnxpart/graph"
)

// Dimension arithmetic that keeps symbolic names where the result is still that name.

var unknownDim = graph.Symbolic("")

// maxRank bounds the rank of any inferred shape: a larger one comes from a corrupt or
// hostile model and is left unknown instead of allocated.
const maxRank = 64

// unknownOfRank returns a shape of n unknown dimensions, or nil (rank unknown) when n is out
// of range.
func unknownOfRank(n int64) graph.Shape {
	if n < 0 || n > maxRank {
		return nil
	}
	s := make(graph.Shape, n)
	for i := range s {
		s[i] = unknownDim
	}
	return s
}

func dimMul(a, b graph.Dim) graph.Dim {
	switch {
	case a.Known() && b.Known():
		if a.Value != 0 && b.Value > math.MaxInt64/a.Value {
			return unknownDim
		}
		return graph.Static(a.Value * b.Value)
	case a.Known() && a.Value == 1:
		return b
	case b.Known() && b.Value == 1:
		return a
	case (a.Known() && a.Value == 0) || (b.Known() && b.Value == 0):
		return graph.Static(0)
	}
	return symDim('*', a, b)
}

// symDim computes a dim symbolically (see symexpr.go), or unknown.
func symDim(op byte, a, b graph.Dim) graph.Dim {
	if r, ok := symArith(op, a, b, false); ok {
		return r
	}
	return unknownDim
}

func dimAdd(a, b graph.Dim) graph.Dim {
	switch {
	case a.Known() && b.Known():
		return graph.Static(a.Value + b.Value)
	case a.Known() && a.Value == 0:
		return b
	case b.Known() && b.Value == 0:
		return a
	}
	return symDim('+', a, b)
}

func dimSub(a, b graph.Dim) graph.Dim {
	switch {
	case a.Known() && b.Known():
		return graph.Static(a.Value - b.Value)
	case b.Known() && b.Value == 0:
		return a
	}
	return symDim('-', a, b)
}

// dimDiv is integer division (floor for non-negative operands).
func dimDiv(a, b graph.Dim) graph.Dim {
	switch {
	case a.Known() && b.Known() && b.Value != 0:
		return graph.Static(floorDiv(a.Value, b.Value))
	case b.Known() && b.Value == 1:
		return a
	case a == b && a.Param != "":
		return graph.Static(1)
	}
	return symDim('/', a, b)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

// product multiplies dims; symbolic factors survive only when all others are 1.
func product(ds []graph.Dim) graph.Dim {
	p := graph.Static(1)
	for _, d := range ds {
		p = dimMul(p, d)
	}
	return p
}

// normAxis maps a possibly negative axis into [0, rank).
func normAxis(a int64, rank int) (int, error) {
	if a < 0 {
		a += int64(rank)
	}
	if a < 0 || a >= int64(rank) {
		return 0, fmt.Errorf("axis %d out of range for rank %d", a, rank)
	}
	return int(a), nil
}

// broadcast applies ONNX multidirectional (numpy) broadcasting.
func broadcast(shapes ...graph.Shape) (graph.Shape, error) {
	rank := 0
	for _, s := range shapes {
		if s == nil {
			return nil, nil
		}
		if len(s) > rank {
			rank = len(s)
		}
	}
	out := make(graph.Shape, rank)
	for i := 0; i < rank; i++ {
		var res graph.Dim
		first := true
		for _, s := range shapes {
			j := i - (rank - len(s))
			if j < 0 {
				continue
			}
			d := s[j]
			if first {
				res, first = d, false
				continue
			}
			var ok bool
			if res, ok = broadcastDim(res, d); !ok {
				return nil, fmt.Errorf("shapes %v are not broadcastable", shapesString(shapes))
			}
		}
		out[i] = res
	}
	return out, nil
}

// broadcastDim broadcasts two dims; ok is false when they are known, differ and neither is 1.
func broadcastDim(a, b graph.Dim) (graph.Dim, bool) {
	switch {
	case a == b:
		return a, true
	case a.Known() && a.Value == 1:
		return b, true
	case b.Known() && b.Value == 1:
		return a, true
	case a.Known() && b.Known():
		return graph.Dim{}, false
	case a.Known():
		return a, true // the symbolic side must be a or 1
	case b.Known():
		return b, true
	}
	return unknownDim, true
}

func shapesString(ss []graph.Shape) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", ")
}

// reshapeTarget resolves a Reshape target given in value encoding (ONNX semantics: 0 copies
// the input dim unless allowzero, -1 is inferred) against the input shape.
func reshapeTarget(in graph.Shape, target []graph.Dim, allowZero bool) graph.Shape {
	out := make(graph.Shape, len(target))
	infer := -1
	for i, d := range target {
		switch {
		case !vKnown(d):
			out[i] = graph.Symbolic(d.Param)
		case d.Value == 0 && !allowZero:
			if in != nil && i < len(in) {
				out[i] = in[i]
			} else {
				out[i] = unknownDim
			}
		case d.Value == -1:
			infer = i
		case d.Value < -1:
			out[i] = unknownDim
		default:
			out[i] = graph.Static(d.Value)
		}
	}
	if infer < 0 {
		return out
	}
	out[infer] = unknownDim
	if in == nil {
		return out
	}
	// Cancel known and symbolic factors between input and the rest of the target; a dim
	// named by a one-term expression (2*batch*seq) contributes its coefficient and names.
	var knownIn, knownOut int64 = 1, 1
	var symIn, symOut []string
	factor := func(d graph.Dim, known *int64, sym *[]string) bool {
		if d.Known() {
			*known *= d.Value
			return true
		}
		if d.Param == "" {
			return false
		}
		if p, ok := parsePoly(d.Param); ok && len(p) == 1 {
			for mono, c := range p {
				if mono == "" || c <= 0 {
					break
				}
				*known *= c
				*sym = append(*sym, strings.Split(mono, "*")...)
				return true
			}
		}
		*sym = append(*sym, d.Param)
		return true
	}
	for _, d := range in {
		if !factor(d, &knownIn, &symIn) {
			return out
		}
	}
	for i, d := range out {
		if i != infer && !factor(d, &knownOut, &symOut) {
			return out
		}
	}
	rest, ok := subtractMultiset(symIn, symOut)
	if !ok || knownOut == 0 || knownIn%knownOut != 0 {
		return out
	}
	out[infer] = polyDim(symPoly{strings.Join(rest, "*"): knownIn / knownOut})
	return out
}

// subtractMultiset removes b's names from a; ok is false if b has a name a lacks.
func subtractMultiset(a, b []string) ([]string, bool) {
	count := map[string]int{}
	for _, x := range a {
		count[x]++
	}
	for _, x := range b {
		if count[x] == 0 {
			return nil, false
		}
		count[x]--
	}
	var rest []string
	for k, v := range count {
		for i := 0; i < v; i++ {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return rest, true
}
