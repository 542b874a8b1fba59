package schedule

import (
	"math"
	"testing"
)

// Small instances with optima verified by brute force (digest-003 §12.5).

// uniformComm returns a K×K transfer-time matrix with c off the diagonal.
func uniformComm(k int, c float64) [][]float64 {
	m := make([][]float64, k)
	for u := range m {
		m[u] = make([]float64, k)
		for v := range m[u] {
			if u != v {
				m[u][v] = c
			}
		}
	}
	return m
}

func devs(names ...string) []Device {
	d := make([]Device, len(names))
	for x, n := range names {
		d[x].Name = n
	}
	return d
}

// build makes a latency problem from times and edges with one uniform transfer time.
func build(devices []Device, times map[string][]float64, order []string, edges [][2]string, comm float64) *Problem {
	p := &Problem{Devices: devices}
	idx := map[string]int{}
	for _, name := range order {
		idx[name] = len(p.Nodes)
		p.Nodes = append(p.Nodes, Node{Name: name, Time: times[name]})
	}
	for _, e := range edges {
		p.Edges = append(p.Edges, Edge{From: idx[e[0]], To: idx[e[1]], Time: uniformComm(len(devices), comm)})
	}
	return p
}

func t1a(comm float64) *Problem {
	return build(devs("G", "C"), map[string][]float64{"A": {1, 5}, "B": {5, 1}}, []string{"A", "B"}, [][2]string{{"A", "B"}}, comm)
}

func t2() *Problem {
	return build(devs("G", "C"),
		map[string][]float64{"A": {1, 10}, "B": {5, 6}, "C": {5, 6}, "D": {1, 10}},
		[]string{"A", "B", "C", "D"}, [][2]string{{"A", "B"}, {"A", "C"}, {"B", "D"}, {"C", "D"}}, 1)
}

func t3(branchCPU float64) *Problem {
	br := []float64{5, 6.5, branchCPU}
	return build(devs("G1", "G2", "CPU"),
		map[string][]float64{"A": {1, 1.3, 10}, "B": br, "C": br, "E": br, "D": {1, 1.3, 10}},
		[]string{"A", "B", "C", "E", "D"}, [][2]string{{"A", "B"}, {"A", "C"}, {"A", "E"}, {"B", "D"}, {"C", "D"}, {"E", "D"}}, 1)
}

func t4() *Problem {
	ab := map[string][]float64{"A": {1, 10}, "B": {5, 6}, "C": {5, 6}, "D": {1, 10}, "A2": {1, 10}, "B2": {5, 6}, "C2": {5, 6}, "D2": {1, 10}}
	return build(devs("G", "C"), ab, []string{"A", "B", "C", "D", "A2", "B2", "C2", "D2"},
		[][2]string{{"A", "B"}, {"A", "C"}, {"B", "D"}, {"C", "D"}, {"D", "A2"}, {"A2", "B2"}, {"A2", "C2"}, {"B2", "D2"}, {"C2", "D2"}}, 1)
}

func t5() *Problem {
	return &Problem{Devices: devs("G1", "G2"), Batch: 4,
		Nodes: []Node{{Name: "A", Time: []float64{2, 3}, BatchTime: [][]float64{{2, 3, 4, 5}, {3, 5, 7, 9}}}}}
}

func t6() *Problem {
	return &Problem{Devices: devs("G1", "G2"), Batch: 2,
		Nodes: []Node{
			{Name: "X", Time: []float64{1, 3}, BatchTime: [][]float64{{1, 2}, {3, 6}}},
			{Name: "Y", Time: []float64{3, 1}, BatchTime: [][]float64{{3, 6}, {1, 2}}},
		},
		Edges: []Edge{{From: 0, To: 1, Time: uniformComm(2, 1)}}}
}

func t7() *Problem {
	p := t1a(2)
	p.Devices[0].Memory = 10
	p.Nodes[0].Weight = 11
	return p
}

// bruteForce returns the best simulated makespan over all placements and all topological
// orders of a small latency problem (exact without congestion).
func bruteForce(t *testing.T, p *Problem) float64 {
	t.Helper()
	in, err := prepare(p)
	if err != nil {
		t.Fatal(err)
	}
	var orders [][]int
	var rec func(done []bool, cur []int)
	rec = func(done []bool, cur []int) {
		if len(cur) == in.numNodes {
			orders = append(orders, append([]int(nil), cur...))
			return
		}
		for i := range in.numNodes {
			if done[i] {
				continue
			}
			ok := true
			for _, pr := range in.preds[i] {
				if !done[pr] {
					ok = false
				}
			}
			if ok {
				done[i] = true
				rec(done, append(cur, i))
				done[i] = false
			}
		}
	}
	rec(make([]bool, in.numNodes), nil)
	best := math.Inf(1)
	dev := make([]int, in.numNodes)
	s := newLatSim(in)
	var place func(i int)
	place = func(i int) {
		if i == in.numNodes {
			if o := in.overflow(in.memoryLatency(dev)); o > 0 {
				return
			}
			for _, ord := range orders {
				if mk := s.eval(dev, ord); mk < best {
					best = mk
				}
			}
			return
		}
		for u := range in.numDevices {
			if in.canRun(i, u) {
				dev[i] = u
				place(i + 1)
			}
		}
	}
	place(0)
	return best
}

func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
