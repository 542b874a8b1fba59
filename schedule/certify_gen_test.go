package schedule_test

// Random instances for the certificate harness, small enough for the exhaustive reference
// (latency: 1–7 nodes, 1–3 devices; batched: 1–4 nodes, 2–3 granules), with the edge cases
// the issue lists: zero costs, no edges, disconnected parts, tight and exactly-full memory,
// heavy communication, one node per device, more devices than nodes, identical devices, plus
// nodes that cannot run everywhere, missing links (routed, or unreachable), explicit transfer
// times (free edges among them), parallel edges, congestion, batch sizes and batch times.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/onnxpart/onnxpart/schedule"
)

// source yields the generator's choices: a seeded PCG, or the bytes of a fuzz input.
type source interface{ intn(n int) int }

type randSource struct{ r *rand.Rand }

func (s randSource) intn(n int) int { return s.r.IntN(n) }

type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) intn(n int) int {
	if s.i >= len(s.b) {
		return 0
	}
	x := int(s.b[s.i])
	s.i++
	return x % n
}

// instance is a generated problem with the flavours it was drawn with.
type instance struct {
	p       *schedule.Problem
	flavour []string
}

func (x *instance) String() string { return strings.Join(x.flavour, ",") }

func pick(s source, pct int) bool { return s.intn(100) < pct }

// genInstance draws one problem; batched selects batched throughput (Batch 2–3).
func genInstance(s source, batched bool) *instance {
	x := &instance{p: &schedule.Problem{}}
	fl := func(f string, args ...any) { x.flavour = append(x.flavour, fmt.Sprintf(f, args...)) }
	p := x.p
	var n, k int
	switch shape := s.intn(10); {
	case shape == 0: // one node per device
		k = 1 + s.intn(3)
		n = k
		fl("node-per-device")
	case shape == 1: // more devices than nodes
		k = 2 + s.intn(2)
		n = 1 + s.intn(k-1)
		fl("more-devices")
	case batched:
		n, k = 1+s.intn(4), 1+s.intn(3)
	default:
		n, k = 2+s.intn(6), 1+s.intn(3)
	}
	if batched {
		p.Batch = 2 + s.intn(2)
		// Keep the exhaustive search small: (K^L)^n granule maps.
		for math.Pow(math.Pow(float64(k), float64(p.Batch)), float64(n)) > 20000 && n > 1 {
			n--
		}
		p.GranuleSize = s.intn(4)
		fl("batch=%d", p.Batch)
	}
	fl("n=%d", n)
	fl("k=%d", k)
	identical := k > 1 && pick(s, 20)
	if identical {
		fl("identical")
	}
	zero := pick(s, 12)
	if zero {
		fl("zero-costs")
	}
	cost := func(hi int) float64 {
		if zero || pick(s, 15) {
			return 0
		}
		return float64(1 + s.intn(hi))
	}
	p.Devices = make([]schedule.Device, k)
	for u := range p.Devices {
		p.Devices[u].Name = fmt.Sprintf("d%d", u)
	}
	p.Nodes = make([]schedule.Node, n)
	for i := range p.Nodes {
		nd := &p.Nodes[i]
		nd.Name = fmt.Sprintf("n%d", i)
		nd.Time = make([]float64, k)
		base := cost(9)
		for u := range nd.Time {
			nd.Time[u] = base
			if !identical {
				nd.Time[u] = cost(9)
			}
		}
		if !identical && k > 1 && pick(s, 15) {
			nd.Time[s.intn(k)] = math.Inf(1) // cannot run there
			fl("pinned")
		}
		nd.Weight = float64(s.intn(5))
		nd.Act = float64(s.intn(3))
	}
	// Edges.
	addEdge := func(a, b int) {
		p.Edges = append(p.Edges, schedule.Edge{From: a, To: b, Bytes: float64(s.intn(8))})
	}
	switch e := s.intn(7); e {
	case 0:
		fl("no-edges")
	case 6: // a chain of modules: cut nodes, each followed by a few parallel branches that
		// the next cut joins (the module DP's blocks, bounds_modules.go)
		fl("modules")
		cut := 0
		for i := 1; i < n; {
			w := 1 + s.intn(3) // branches of one node
			if i+w >= n {
				w = n - 1 - i
			}
			if w <= 0 {
				addEdge(cut, i)
				break
			}
			for b := i; b < i+w; b++ {
				addEdge(cut, b)
				addEdge(b, i+w)
				if b > i && pick(s, 30) {
					addEdge(b-1, b) // a branch feeding the next
				}
			}
			cut, i = i+w, i+w+1
		}
	case 1:
		fl("chain")
		for i := 1; i < n; i++ {
			addEdge(i-1, i)
		}
	case 2: // two disconnected parts
		fl("disconnected")
		h := n / 2
		for a := 0; a < n; a++ {
			for b := a + 1; b < n; b++ {
				if (a < h) == (b < h) && pick(s, 50) {
					addEdge(a, b)
				}
			}
		}
	default:
		dens := 25 + 25*s.intn(3)
		fl("dag%d", dens)
		for a := 0; a < n; a++ {
			for b := a + 1; b < n; b++ {
				if pick(s, dens) {
					addEdge(a, b)
				}
			}
		}
	}
	if len(p.Edges) > 0 && pick(s, 10) {
		p.Edges = append(p.Edges, p.Edges[s.intn(len(p.Edges))]) // a parallel edge
		fl("parallel-edge")
	}
	// Communication.
	heavy := pick(s, 15)
	if heavy {
		fl("heavy-comm")
		for e := range p.Edges {
			p.Edges[e].Bytes = float64(20 + s.intn(30))
		}
	}
	switch c := s.intn(8); {
	case c == 0:
		fl("no-links") // no transfer is possible: communicating nodes share a device
	case c == 1:
		fl("edge-times")
		for e := range p.Edges {
			if pick(s, 25) {
				p.Edges[e].Time = square(k, func(u, v int) float64 { return 0 }) // free
				continue
			}
			p.Edges[e].Time = square(k, func(u, v int) float64 {
				if u == v {
					return 0
				}
				if heavy {
					return float64(10 + s.intn(30))
				}
				return float64(s.intn(6))
			})
		}
	default:
		partial := k > 2 && pick(s, 30)
		if partial {
			fl("partial-links")
		}
		bw, lat := float64(1+s.intn(4)), float64(s.intn(3))
		p.Links = make([][]schedule.Link, k)
		for u := range p.Links {
			p.Links[u] = make([]schedule.Link, k)
			for v := range p.Links[u] {
				if u == v {
					continue
				}
				if !identical {
					bw, lat = float64(1+s.intn(4)), float64(s.intn(3))
				}
				if partial && pick(s, 40) {
					continue
				}
				p.Links[u][v] = schedule.Link{Bandwidth: bw, Latency: lat}
			}
		}
	}
	p.Congestion = pick(s, 40)
	if p.Congestion {
		fl("congestion")
	}
	if batched {
		genBatch(s, x, fl)
	}
	genMemory(s, x, fl)
	if pick(s, 50) {
		// Stage calls: one cost for all devices (identical devices stay identical), or one
		// per device.
		fl("calls")
		same := float64(s.intn(4))
		each := !identical && pick(s, 50)
		for u := range p.Devices {
			p.Devices[u].CallCost = same
			if each {
				p.Devices[u].CallCost = float64(s.intn(5))
			}
		}
	}
	// Keep the exhaustive search small: drop edges, then nodes, while it is too large.
	for newRef(p).cost(refBudget) > refBudget {
		if len(p.Edges) > 0 {
			p.Edges = p.Edges[:len(p.Edges)-1]
			continue
		}
		if len(p.Nodes) == 1 {
			break
		}
		p.Nodes = p.Nodes[:len(p.Nodes)-1]
	}
	if len(p.Nodes) < n {
		fl("shrunk-to-n=%d", len(p.Nodes))
	}
	return x
}

// refBudget bounds the exhaustive search's assignments and sequences per instance.
const refBudget = 3e4

func square(k int, f func(u, v int) float64) [][]float64 {
	m := make([][]float64, k)
	for u := range m {
		m[u] = make([]float64, k)
		for v := range m[u] {
			m[u][v] = f(u, v)
		}
	}
	return m
}

// genBatch draws supported batch sizes and batch times.
func genBatch(s source, x *instance, fl func(string, ...any)) {
	p := x.p
	L := p.Batch
	if pick(s, 30) {
		fl("batch-sizes")
		for u := range p.Devices {
			var sizes []int
			for c := 1; c <= L; c++ {
				if c == 1 || pick(s, 50) {
					sizes = append(sizes, c)
				}
			}
			if pick(s, 30) && len(sizes) > 1 {
				sizes = sizes[1:] // no single granules on this device
			}
			p.Devices[u].BatchSizes = sizes
		}
	}
	if pick(s, 40) {
		fl("batch-times")
		for i := range p.Nodes {
			nd := &p.Nodes[i]
			nd.BatchTime = make([][]float64, len(p.Devices))
			for u := range nd.BatchTime {
				if pick(s, 20) {
					continue // nil row: c·Time
				}
				row := make([]float64, L)
				for c := 1; c <= L; c++ {
					// Sublinear: t, then a fraction of t per extra granule.
					row[c-1] = nd.Time[u] * (1 + float64(c-1)*float64(s.intn(4))/4)
					if math.IsInf(nd.Time[u], 1) {
						row[c-1] = math.Inf(1)
					}
				}
				nd.BatchTime[u] = row
			}
		}
	}
}

// genMemory draws capacities: unlimited, exactly full for some plan, one short of that, or
// random (possibly infeasible).
func genMemory(s source, x *instance, fl func(string, ...any)) {
	p := x.p
	n, k, L := len(p.Nodes), len(p.Devices), max(p.Batch, 1)
	switch m := s.intn(5); m {
	case 0, 1:
		fl("no-memory-cap")
		return
	case 2, 3: // exactly full for a random plan (feasible), maybe one device made tighter
		load := make([]float64, k)
		for i := range n {
			var ok []int
			for u := range k {
				if !math.IsInf(p.Nodes[i].Time[u], 1) {
					ok = append(ok, u)
				}
			}
			u := ok[s.intn(len(ok))]
			load[u] += p.Nodes[i].Weight + float64(L)*p.Nodes[i].Act
		}
		tight := m == 3
		if tight {
			fl("tight-memory")
		} else {
			fl("exactly-full")
		}
		for u := range k {
			c := load[u]
			if tight && c > 1 && pick(s, 50) {
				c-- // one byte short on this device
			}
			if c == 0 {
				c = 1 + float64(s.intn(2)) // 0 would mean unlimited
			}
			p.Devices[u].Memory = c
		}
	default:
		fl("random-memory")
		total := 0.0
		for i := range n {
			total += p.Nodes[i].Weight + float64(L)*p.Nodes[i].Act
		}
		for u := range k {
			p.Devices[u].Memory = float64(1 + s.intn(int(total)/max(k-1, 1)+2))
		}
	}
}
