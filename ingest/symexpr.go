package ingest

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/graph"
)

// Symbolic dimension expressions: shape arithmetic on symbolic dims (Concat of past and new
// keys, Mul of a batch by the number of heads, Reshape merging two axes) gives dims named by
// a polynomial in the input dims with integer coefficients, written the way ONNX Runtime's
// symbolic shape inference writes them: "past + seq", "2*batch", "batch*seq - 1". Equal
// polynomials have equal names (terms in a canonical order), so broadcasting and value
// comparisons see that two dims are the same; binding the input dims (--dim) settles every
// dim derived from them because inference then runs on numbers.

// symPoly maps a monomial (its atoms sorted and joined by "*"; "" for the constant term) to
// its coefficient.
type symPoly map[string]int64

// maxPolyTerms bounds the size of an expression kept as a name; larger ones become unknown.
const maxPolyTerms = 8

// polyOf reads a dim (or a value element) as a polynomial: a number, an input dim's name, or
// a name this file wrote. Anonymous unknowns have no polynomial.
func polyOf(d graph.Dim, isValue bool) (symPoly, bool) {
	if isValue && vKnown(d) || !isValue && d.Known() {
		return symPoly{"": d.Value}, true
	}
	if d.Param == "" || d.Param == knownMinParam {
		return nil, false
	}
	if p, ok := parsePoly(d.Param); ok {
		return p, true
	}
	return symPoly{d.Param: 1}, true
}

// parsePoly parses a name written by polyString; any other name is an atom (ok false).
func parsePoly(s string) (symPoly, bool) {
	if !strings.ContainsAny(s, " *") {
		return nil, false
	}
	p := symPoly{}
	rest := s
	sign := int64(1)
	if strings.HasPrefix(rest, "-") {
		sign, rest = -1, rest[1:]
	}
	for {
		term := rest
		next := ""
		i := strings.Index(rest, " + ")
		if j := strings.Index(rest, " - "); j >= 0 && (i < 0 || j < i) {
			i = j
		}
		if i >= 0 {
			term, next = rest[:i], rest[i+1:] // next starts with the operator
		}
		coef, atoms := int64(1), []string{}
		for _, f := range strings.Split(term, "*") {
			if v, err := strconv.ParseInt(f, 10, 64); err == nil && len(atoms) == 0 && coef == 1 {
				coef = v
			} else if f == "" {
				return nil, false
			} else {
				atoms = append(atoms, f)
			}
		}
		p.add(strings.Join(atoms, "*"), sign*coef)
		if next == "" {
			break
		}
		sign = 1
		if next[0] == '-' {
			sign = -1
		}
		rest = next[2:]
	}
	// Only the canonical spelling is an expression; anything else is a name that happens
	// to hold spaces or stars.
	if polyString(p) != s {
		return nil, false
	}
	return p, true
}

func (p symPoly) add(mono string, c int64) {
	if v := p[mono] + c; v == 0 {
		delete(p, mono)
	} else {
		p[mono] = v
	}
}

// polyString writes p canonically: monomials by degree then name, the constant last.
func polyString(p symPoly) string {
	monos := make([]string, 0, len(p))
	for m := range p {
		monos = append(monos, m)
	}
	sort.Slice(monos, func(i, j int) bool {
		a, b := monos[i], monos[j]
		if (a == "") != (b == "") {
			return b == ""
		}
		da, db := strings.Count(a, "*"), strings.Count(b, "*")
		if da != db {
			return da > db
		}
		return a < b
	})
	var sb strings.Builder
	for i, m := range monos {
		c := p[m]
		switch {
		case i == 0 && c < 0:
			sb.WriteString("-")
		case i > 0 && c < 0:
			sb.WriteString(" - ")
		case i > 0:
			sb.WriteString(" + ")
		}
		if c < 0 {
			c = -c
		}
		switch {
		case m == "":
			sb.WriteString(strconv.FormatInt(c, 10))
		case c == 1:
			sb.WriteString(m)
		default:
			sb.WriteString(strconv.FormatInt(c, 10) + "*" + m)
		}
	}
	if sb.Len() == 0 {
		return "0"
	}
	return sb.String()
}

// constant returns the value of a polynomial without atoms.
func (p symPoly) constant() (int64, bool) {
	for m := range p {
		if m != "" {
			return 0, false
		}
	}
	return p[""], true
}

func polyAdd(a, b symPoly, sign int64) symPoly {
	out := symPoly{}
	for m, c := range a {
		out.add(m, c)
	}
	for m, c := range b {
		out.add(m, sign*c)
	}
	return out
}

func polyMul(a, b symPoly) (symPoly, bool) {
	out := symPoly{}
	for ma, ca := range a {
		for mb, cb := range b {
			if ca != 0 && (cb > math.MaxInt32 || cb < -math.MaxInt32 || ca > math.MaxInt32 || ca < -math.MaxInt32) {
				return nil, false // keep coefficients far from overflow
			}
			var atoms []string
			if ma != "" {
				atoms = append(atoms, strings.Split(ma, "*")...)
			}
			if mb != "" {
				atoms = append(atoms, strings.Split(mb, "*")...)
			}
			sort.Strings(atoms)
			out.add(strings.Join(atoms, "*"), ca*cb)
		}
	}
	return out, true
}

// polyDivExact divides by a nonzero number when every coefficient is a multiple of it.
func polyDivExact(a symPoly, d int64) (symPoly, bool) {
	out := symPoly{}
	for m, c := range a {
		if c%d != 0 {
			return nil, false
		}
		out[m] = c / d
	}
	return out, true
}

// polyDim turns a polynomial into a shape dim (a negative constant or an expression too
// large to name is unknown).
func polyDim(p symPoly) graph.Dim {
	if c, ok := p.constant(); ok {
		if c < 0 {
			return unknownDim
		}
		return graph.Static(c)
	}
	if len(p) > maxPolyTerms {
		return unknownDim
	}
	return graph.Symbolic(polyString(p))
}

// polyVal turns a polynomial into a value element.
func polyVal(p symPoly) graph.Dim {
	if c, ok := p.constant(); ok {
		return vInt(c)
	}
	if len(p) > maxPolyTerms {
		return vUnknown("")
	}
	return vUnknown(polyString(p))
}

// symArith applies op ('+', '-', '*', '/') to two dims or value elements symbolically; ok is
// false when either has no polynomial or the result has no exact form.
func symArith(op byte, a, b graph.Dim, isValue bool) (graph.Dim, bool) {
	pa, ok1 := polyOf(a, isValue)
	pb, ok2 := polyOf(b, isValue)
	if !ok1 || !ok2 {
		return graph.Dim{}, false
	}
	var r symPoly
	switch op {
	case '+':
		r = polyAdd(pa, pb, 1)
	case '-':
		r = polyAdd(pa, pb, -1)
	case '*':
		var ok bool
		if r, ok = polyMul(pa, pb); !ok {
			return graph.Dim{}, false
		}
	case '/':
		d, ok := pb.constant()
		if !ok || d == 0 {
			return graph.Dim{}, false
		}
		if r, ok = polyDivExact(pa, d); !ok {
			return graph.Dim{}, false
		}
	}
	if isValue {
		return polyVal(r), true
	}
	return polyDim(r), true
}

// dimPlus adds a constant, of either sign, to a dim (S + 2, H - 2); a known result below
// zero, or an anonymous dim, is unknown.
func dimPlus(d graph.Dim, c int64) graph.Dim {
	if c == 0 {
		return d
	}
	p, ok := polyOf(d, false)
	if !ok {
		return unknownDim
	}
	return polyDim(polyAdd(p, symPoly{"": c}, 1))
}
