package schedule_test

// The independent evaluation of a returned plan: the harness checks that the Result's
// schedule is a schedule of the Result's placement under the semantics of certify_ref_test.go
// (durations, precedences through transfers, one task at a time per device and — with
// congestion — per port, memory) and that its makespan is the reported objective. It uses
// the reference's own costs, never the package's simulator.

import (
	"fmt"
	"math"
	"sort"

	"github.com/onnxpart/onnxpart/schedule"
)

func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// interval is a use of a unary resource.
type interval struct {
	s, e float64
	what string
}

func overlapping(ivs []interval) error {
	sort.Slice(ivs, func(a, b int) bool { return ivs[a].s < ivs[b].s })
	for x := 1; x < len(ivs); x++ {
		if ivs[x].s < ivs[x-1].e-1e-6*math.Max(1, ivs[x-1].e) {
			return fmt.Errorf("%s [%g,%g] overlaps %s [%g,%g]", ivs[x].what, ivs[x].s, ivs[x].e, ivs[x-1].what, ivs[x-1].s, ivs[x-1].e)
		}
	}
	return nil
}

// verifyPlan returns the makespan of res's schedule after checking it, or an error.
func (r *refInst) verifyPlan(res *schedule.Result) (float64, error) {
	pl, sc := res.Placement, res.Schedule
	if pl == nil || sc == nil {
		return 0, fmt.Errorf("result without placement or schedule")
	}
	// The map of granules (latency: one granule) of every node.
	gm := make([][]int, r.n)
	if r.L > 1 {
		if len(pl.Granules) != r.n {
			return 0, fmt.Errorf("%d granule maps for %d nodes", len(pl.Granules), r.n)
		}
		for i := range gm {
			if len(pl.Granules[i]) != r.L {
				return 0, fmt.Errorf("node %d has %d granules", i, len(pl.Granules[i]))
			}
			gm[i] = pl.Granules[i]
		}
	} else {
		if len(pl.Device) != r.n {
			return 0, fmt.Errorf("%d devices for %d nodes", len(pl.Device), r.n)
		}
		for i := range gm {
			gm[i] = []int{pl.Device[i]}
		}
	}
	for i := range gm {
		for _, u := range gm[i] {
			if u < 0 || u >= r.k {
				return 0, fmt.Errorf("node %d on device %d", i, u)
			}
		}
	}
	// Memory.
	mem := make([]float64, r.k)
	for i, g := range gm {
		for u, c := range r.counts(g) {
			if c > 0 {
				mem[u] += r.p.Nodes[i].Weight + float64(c)*r.p.Nodes[i].Act
			}
		}
	}
	for u := range mem {
		if mem[u] > r.cap[u] {
			return 0, fmt.Errorf("device %d holds %g bytes, capacity %g", u, mem[u], r.cap[u])
		}
	}
	// Tasks: exactly one per (node, device with granules), with the batch's duration.
	type key struct{ i, u int }
	start := map[key]float64{}
	end := map[key]float64{}
	use := make([][]interval, 3*r.k)
	mk := 0.0
	var sources []schedule.Task // sources on devices with a call cost
	for _, t := range sc.Tasks {
		kk := key{t.Node, t.Device}
		if t.Node < 0 || t.Node >= r.n || t.Device < 0 || t.Device >= r.k {
			return 0, fmt.Errorf("task %+v out of range", t)
		}
		if _, dup := start[kk]; dup {
			return 0, fmt.Errorf("two tasks of node %d on device %d", t.Node, t.Device)
		}
		c := r.counts(gm[t.Node])[t.Device]
		if c == 0 || t.Granules != c {
			return 0, fmt.Errorf("task of node %d on device %d has %d granules, the placement %d", t.Node, t.Device, t.Granules, c)
		}
		d := r.bt[t.Node][t.Device][c]
		{
			// The stage call: always paid after a cross-device input; by a source only when
			// it is its device's first task (checked below, once every task is known).
			always, ifFirst := r.batchCallOf(t.Node, t.Device, gm)
			switch {
			case always > 0 && t.Call != always:
				return 0, fmt.Errorf("node %d reads from another device: call %g, want %g", t.Node, t.Call, always)
			case always == 0 && t.Call != 0 && t.Call != ifFirst:
				return 0, fmt.Errorf("node %d pays call %g, want 0 or %g", t.Node, t.Call, ifFirst)
			}
			if ifFirst > 0 {
				sources = append(sources, t)
			}
			d += t.Call
		}
		if math.IsInf(d, 1) {
			return 0, fmt.Errorf("node %d cannot run %d granules on device %d", t.Node, c, t.Device)
		}
		if t.Start < -1e-9 || !near(t.End-t.Start, d) {
			return 0, fmt.Errorf("task of node %d on device %d spans [%g,%g], duration %g", t.Node, t.Device, t.Start, t.End, d)
		}
		start[kk], end[kk] = t.Start, t.End
		if d > 0 {
			use[t.Device] = append(use[t.Device], interval{t.Start, t.End, fmt.Sprintf("node %d", t.Node)})
		}
		mk = math.Max(mk, t.End)
	}
	// A source pays its call exactly when it is its device's first task: nothing of positive
	// length runs on the device before it, and when it does not pay, a call-paying task starts
	// no later than it.
	for _, src := range sources {
		paid := false
		for _, t := range sc.Tasks {
			if t.Device != src.Device || t.Node == src.Node {
				continue
			}
			if src.Call > 0 && t.End > t.Start && t.Start < src.Start-1e-9*math.Max(1, src.Start) {
				return 0, fmt.Errorf("source node %d pays a call on device %d after node %d ran there", src.Node, src.Device, t.Node)
			}
			if t.Call > 0 && t.Start <= src.Start+1e-9*math.Max(1, src.Start) {
				paid = true
			}
		}
		if src.Call == 0 && !paid {
			// A source of no duration holds no device, so it does not wait for the call that
			// opened the stage it joins: it may run earlier in time than that call. Then the
			// stage (Task.Stage) must still have been opened on its device by a paying task.
			opened := false
			for _, t := range sc.Tasks {
				opened = opened || (t.Device == src.Device && t.Stage == src.Stage && t.Call > 0)
			}
			if src.End > src.Start || !opened {
				return 0, fmt.Errorf("source node %d runs first on device %d without a call", src.Node, src.Device)
			}
		}
	}
	for i, g := range gm {
		for u, c := range r.counts(g) {
			if _, ok := start[key{i, u}]; c > 0 && !ok {
				return 0, fmt.Errorf("node %d has no task on device %d", i, u)
			}
		}
	}
	// Transfers, keyed by edge and devices.
	type tkey struct{ e, u, v int }
	trs := map[tkey]schedule.Transfer{}
	for _, tr := range sc.Transfers {
		kk := tkey{tr.Edge, tr.Src, tr.Dst}
		if _, dup := trs[kk]; dup {
			return 0, fmt.Errorf("two transfers of edge %d from %d to %d", tr.Edge, tr.Src, tr.Dst)
		}
		trs[kk] = tr
	}
	used := 0
	slack := func(x float64) float64 { return 1e-6 * math.Max(1, math.Abs(x)) }
	for e, ed := range r.p.Edges {
		pair := map[[2]int]int{}
		for l := 0; l < r.L; l++ {
			pair[[2]int{gm[ed.From][l], gm[ed.To][l]}]++
		}
		for uv, c := range pair {
			u, v := uv[0], uv[1]
			prodEnd, consStart := end[key{ed.From, u}], start[key{ed.To, v}]
			need, d := r.transfer(e, u, v, 1)
			if math.IsInf(d, 1) {
				return 0, fmt.Errorf("edge %d from device %d to %d has no route", e, u, v)
			}
			if !need {
				if consStart < prodEnd-slack(prodEnd) {
					return 0, fmt.Errorf("edge %d: node %d starts at %g before node %d ends at %g", e, ed.To, consStart, ed.From, prodEnd)
				}
				continue
			}
			tr, ok := trs[tkey{e, u, v}]
			if !ok {
				return 0, fmt.Errorf("edge %d from device %d to %d has no transfer", e, u, v)
			}
			used++
			if r.p.Congestion {
				_, d = r.transfer(e, u, v, c)
			}
			if tr.From != ed.From || tr.To != ed.To || (r.L > 1 && tr.Granules != c) {
				return 0, fmt.Errorf("transfer %+v does not match edge %d with %d granules", tr, e, c)
			}
			if !near(tr.End-tr.Start, d) || tr.Start < prodEnd-slack(prodEnd) || consStart < tr.End-slack(tr.End) {
				return 0, fmt.Errorf("transfer %+v (duration %g) between producer end %g and consumer start %g", tr, d, prodEnd, consStart)
			}
			if r.p.Congestion && d > 0 {
				what := fmt.Sprintf("transfer of edge %d", e)
				use[r.egress(u)] = append(use[r.egress(u)], interval{tr.Start, tr.End, what})
				use[r.ingress(v)] = append(use[r.ingress(v)], interval{tr.Start, tr.End, what})
			}
		}
	}
	if used != len(sc.Transfers) {
		return 0, fmt.Errorf("%d transfers reported, %d needed", len(sc.Transfers), used)
	}
	for q := range use {
		if err := overlapping(use[q]); err != nil {
			return 0, fmt.Errorf("resource %d: %v", q, err)
		}
	}
	if !near(mk, sc.Makespan) || !near(mk, res.Makespan) {
		return 0, fmt.Errorf("tasks end at %g, schedule says %g, result says %g", mk, sc.Makespan, res.Makespan)
	}
	g := max(r.p.GranuleSize, 1)
	if mk > 0 && !near(res.Throughput, float64(r.L*g)/mk) {
		return 0, fmt.Errorf("throughput %g, want %g", res.Throughput, float64(r.L*g)/mk)
	}
	return mk, nil
}
