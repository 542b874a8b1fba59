package schedule

import (
	"sort"

	"github.com/onnxpart/onnxpart/internal/milp"
)

// Symmetry breaking between identical devices (seed 003 §5.2, digest-003 §6): when two
// devices are interchangeable — swapping them maps the problem onto itself — every plan has a
// twin of equal makespan. Ordering the devices of each class by an aggregate (their task
// count, or their busy time) keeps one plan of every such orbit and cuts the MILP's search
// space by up to the product of the classes' factorials.

// Symmetry criteria.
const (
	SymmetryNone  = "none"
	SymmetryTasks = "tasks" // f(u) = number of tasks (granules) on u
	SymmetryTime  = "time"  // f(u) = busy time of u
)

type symmetry struct {
	kind    string
	classes [][]int // interchangeable devices, ascending, only classes of two or more
}

// deviceClasses groups interchangeable devices: equal memory, batch sizes and times of every
// node, and equal routes to and from every other device (and between the two).
func (in *inst) deviceClasses() [][]int {
	var classes [][]int
	assigned := make([]bool, in.numDevices)
	for u := range in.numDevices {
		if assigned[u] {
			continue
		}
		cls := []int{u}
		for v := u + 1; v < in.numDevices; v++ {
			if !assigned[v] && in.interchangeable(u, v) {
				cls = append(cls, v)
				assigned[v] = true
			}
		}
		if len(cls) > 1 {
			classes = append(classes, cls)
		}
	}
	return classes
}

func (in *inst) interchangeable(u, v int) bool {
	if in.capacity[u] != in.capacity[v] || in.callCost[u] != in.callCost[v] {
		return false
	}
	for _, g := range in.pinnedGranules {
		for _, w := range g {
			if w == u || w == v {
				return false // a pinned granule tells the two apart
			}
		}
	}
	for c := 1; c <= in.numGranules; c++ {
		if in.sizeOK[u][c] != in.sizeOK[v][c] {
			return false
		}
	}
	for i := range in.numNodes {
		if in.granuleTime[i][u] != in.granuleTime[i][v] {
			return false
		}
		for c := 1; c <= in.numGranules; c++ {
			if in.batchTime[i][u][c] != in.batchTime[i][v][c] {
				return false
			}
		}
	}
	swap := func(w int) int {
		switch w {
		case u:
			return v
		case v:
			return u
		}
		return w
	}
	same := func(get func(a, b int) float64) bool {
		for a := range in.numDevices {
			for b := range in.numDevices {
				if a != b && get(a, b) != get(swap(a), swap(b)) {
					return false
				}
			}
		}
		return true
	}
	if !same(func(a, b int) float64 { return in.routeBW[a][b] }) || !same(func(a, b int) float64 { return in.routeLat[a][b] }) {
		return false
	}
	for _, ed := range in.problem.Edges {
		if ed.Time != nil && !same(func(a, b int) float64 { return ed.Time[a][b] }) {
			return false
		}
	}
	return true
}

func (in *inst) symmetryOf(kind string) symmetry {
	if kind == "" || kind == SymmetryNone {
		return symmetry{kind: SymmetryNone}
	}
	return symmetry{kind: kind, classes: in.deviceClasses()}
}

// rows adds f(c_0) ≥ f(c_1) ≥ … for every class, with f(u) = Σ_i w(i,u)·x(i,u) over the
// columns x(i,u) ≥ 0 (w = 1 for tasks, the time for time).
func (s symmetry) rows(m *milp.Model, in *inst, x func(i, u int) int, t func(i, u int) float64) {
	s.rowsMulti(m, in, func(i, u int) []int {
		if c := x(i, u); c >= 0 {
			return []int{c}
		}
		return nil
	}, func(i, u, c int) float64 { return t(i, u) })
}

// rowsMulti is rows with several columns per (node, device) — e.g. granules — and a weight per
// column position.
func (s symmetry) rowsMulti(m *milp.Model, in *inst, cols func(i, u int) []int, t func(i, u, pos int) float64) {
	if s.kind == SymmetryNone {
		return
	}
	for _, cls := range s.classes {
		for x := 0; x+1 < len(cls); x++ {
			u, v := cls[x], cls[x+1]
			var cc []int
			var vv []float64
			for i := range in.numNodes {
				for pos, c := range cols(i, u) {
					w := 1.0
					if s.kind == SymmetryTime {
						w = t(i, u, pos)
					}
					cc, vv = append(cc, c), append(vv, w)
				}
				for pos, c := range cols(i, v) {
					w := 1.0
					if s.kind == SymmetryTime {
						w = t(i, v, pos)
					}
					cc, vv = append(cc, c), append(vv, -w)
				}
			}
			if len(cc) > 0 {
				m.AddRow(0, milp.Inf, cc, vv)
			}
		}
	}
}

// canonical relabels the devices of a placement within each class so that the aggregate is
// non-increasing along the class (so the plan satisfies the symmetry rows); the makespan is
// unchanged because the relabelling is an automorphism of the problem.
func (s symmetry) canonical(in *inst, pl *Placement) *Placement {
	if s.kind == SymmetryNone || len(s.classes) == 0 {
		return pl
	}
	f := make([]float64, in.numDevices)
	if in.latency() {
		for i, u := range pl.Device {
			if s.kind == SymmetryTime {
				f[u] += in.granuleTime[i][u]
			} else {
				f[u]++
			}
		}
	} else {
		cnt := make([]int, in.numDevices)
		for i, g := range pl.Granules {
			clear(cnt)
			for _, u := range g {
				cnt[u]++
			}
			for u, c := range cnt {
				if c == 0 {
					continue
				}
				if s.kind == SymmetryTime {
					f[u] += in.batchTime[i][u][c]
				} else {
					f[u] += float64(c)
				}
			}
		}
	}
	perm := make([]int, in.numDevices) // old device → new device
	for u := range perm {
		perm[u] = u
	}
	for _, cls := range s.classes {
		old := append([]int(nil), cls...)
		sort.SliceStable(old, func(a, b int) bool { return f[old[a]] > f[old[b]] })
		for x, u := range old {
			perm[u] = cls[x]
		}
	}
	out := pl.Clone()
	if in.latency() {
		for i, u := range out.Device {
			out.Device[i] = perm[u]
		}
	} else {
		for i := range out.Granules {
			for l, u := range out.Granules[i] {
				out.Granules[i][l] = perm[u]
			}
		}
		if out.BatchOrder != nil {
			for i := range out.BatchOrder {
				row := make([]float64, in.numDevices)
				for u := range in.numDevices {
					row[perm[u]] = pl.BatchOrder[i][u]
				}
				out.BatchOrder[i] = row
			}
		}
	}
	return out
}

// isCanonical reports whether a placement satisfies the ordering (used by tests).
func (s symmetry) isCanonical(in *inst, pl *Placement) bool {
	c := s.canonical(in, pl)
	if in.latency() {
		return equalInts(c.Device, pl.Device)
	}
	for i := range pl.Granules {
		if !equalInts(c.Granules[i], pl.Granules[i]) {
			return false
		}
	}
	return true
}
