package instances

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/schedule"
)

func TestReadMoiraiExample(t *testing.T) {
	p, err := ReadMoiraiFile("testdata/example-1.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Nodes) != 14 || len(p.Edges) != 19 || len(p.Devices) != 3 {
		t.Fatalf("got %d nodes, %d edges, %d devices; want 14, 19, 3", len(p.Nodes), len(p.Edges), len(p.Devices))
	}
	if !p.Congestion || p.Batch > 1 {
		t.Errorf("congestion %v batch %d: want a latency problem with congestion", p.Congestion, p.Batch)
	}
	for u, want := range []float64{14, 14, 16} {
		if p.Devices[u].Memory != want {
			t.Errorf("device %d memory %v, want %v", u, p.Devices[u].Memory, want)
		}
	}
	idx := map[string]int{}
	for i, n := range p.Nodes {
		idx[n.Name] = i
	}
	// op14 sends comm task 16 to op19 and 17 to op23: pc01 = "1,3", pc12 = "4,3".
	found := 0
	for _, e := range p.Edges {
		if e.From != idx["op14"] {
			continue
		}
		found++
		switch e.To {
		case idx["op19"]:
			if e.Time[0][1] != 1 || e.Time[1][2] != 4 || e.Time[0][0] != 0 {
				t.Errorf("op14→op19 times %v", e.Time)
			}
		case idx["op23"]:
			if e.Time[0][1] != 3 || e.Time[1][2] != 3 {
				t.Errorf("op14→op23 times %v", e.Time)
			}
		default:
			t.Errorf("unexpected edge op14→%s", p.Nodes[e.To].Name)
		}
	}
	if found != 2 {
		t.Errorf("op14 has %d out-edges, want 2", found)
	}
	// The virtual source's edges are free (no communication task).
	for _, e := range p.Edges {
		if e.From == idx["op0"] {
			for u := range e.Time {
				for v := range e.Time[u] {
					if e.Time[u][v] != 0 {
						t.Errorf("source edge to %s costs %v", p.Nodes[e.To].Name, e.Time[u][v])
					}
				}
			}
		}
	}
	if p.Nodes[idx["op5"]].Time[1] != 5 || p.Nodes[idx["op19"]].Weight != 6 {
		t.Errorf("op5 times %v, op19 memory %v", p.Nodes[idx["op5"]].Time, p.Nodes[idx["op19"]].Weight)
	}
}

// The README's known result: Moirai's MILP under CBC finds makespan 30; ours proves it.
func TestMoiraiExampleOptimum(t *testing.T) {
	p, err := ReadMoiraiFile("testdata/example-1.csv")
	if err != nil {
		t.Fatal(err)
	}
	r, err := schedule.Solve(context.Background(), p, schedule.Options{Method: schedule.MILP, TimeLimit: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.Makespan-30) > 1e-6 || !r.Optimal || math.Abs(r.LowerBound-30) > 1e-3 {
		t.Fatalf("makespan %v bound %v optimal %v, want 30 proved optimal (notes %v)", r.Makespan, r.LowerBound, r.Optimal, r.Notes)
	}
	for u, m := range r.Schedule.Memory {
		if m > p.Devices[u].Memory {
			t.Errorf("device %d holds %v > %v", u, m, p.Devices[u].Memory)
		}
	}
}

func TestReadMoiraiErrors(t *testing.T) {
	cases := map[string]string{
		"missing column": "task,c_task,dir_succ,p0,mi\n0,,,0,0\n",
		"bad number":     "task,c_task,dir_succ,dir_succ_add,p0,pc00,mi,m0\n0,,1,1,x,,0,5\n1,,,,1,,0,\n",
		"unknown succ":   "task,c_task,dir_succ,dir_succ_add,p0,pc00,mi,m0\n0,,7,7,0,,0,5\n1,,,,1,,0,\n",
		"comm mismatch":  "task,c_task,dir_succ,dir_succ_add,p0,p1,pc00,pc01,pc10,pc11,mi,m0,m1\n0,3,1,\"3,1\",1,1,0,\"1,2\",1,0,0,5,5\n1,,,,1,1,,,,,0,,\n",
	}
	for name, csv := range cases {
		if _, err := ReadMoirai(strings.NewReader(csv)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestRandomDAG(t *testing.T) {
	for _, model := range []string{ER, WS, BA} {
		for seed := range uint64(5) {
			rng := newRNG(seed)
			edges, err := RandomDAG(model, 12, 0, 0, 0, rng)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[[2]int]bool{}
			deg := make([]int, 12)
			for _, e := range edges {
				if e[0] >= e[1] || e[1] >= 12 || seen[e] {
					t.Fatalf("%s: edge %v not oriented low→high, out of range or repeated", model, e)
				}
				seen[e] = true
				deg[e[0]]++
				deg[e[1]]++
			}
			switch model {
			case WS:
				if len(edges) != 12*4/2 {
					t.Errorf("WS(4) on 12 nodes has %d edges, want 24 (rewiring keeps the count)", len(edges))
				}
			case BA:
				if len(edges) != (12-5)*5 {
					t.Errorf("BA(5) on 12 nodes has %d edges, want 35", len(edges))
				}
			}
		}
	}
	if _, err := RandomDAG("xx", 5, 0, 0, 0, newRNG(1)); err == nil {
		t.Error("unknown model: no error")
	}
}

func TestStack(t *testing.T) {
	for _, strong := range []bool{true, false} {
		for c := 1; c <= 4; c++ {
			cfg := StackConfig{Model: ER, N: 10, Modules: 4, Channels: c, Strong: strong, Seed: 3}
			s, err := NewStack(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if want := 2 + 4*(10+2*c); len(s.Names) != want {
				t.Fatalf("c=%d: %d nodes, want %d", c, len(s.Names), want)
			}
			// Exactly c edges between consecutive modules, all output→input.
			between := map[int]int{}
			for _, e := range s.Edges {
				a, b := s.Module[e[0]], s.Module[e[1]]
				if a >= 0 && b >= 0 && a != b {
					if b != a+1 || s.Role[e[0]] != RoleOutput || s.Role[e[1]] != RoleInput {
						t.Fatalf("edge %v crosses from module %d to %d", e, a, b)
					}
					between[a]++
				}
			}
			for m := range 3 {
				if between[m] != c {
					t.Errorf("c=%d: %d edges from module %d to %d", c, between[m], m, m+1)
				}
			}
			// Strongly dependent: every node of a module is reachable from its first input.
			if strong {
				succ := map[int][]int{}
				for _, e := range s.Edges {
					succ[e[0]] = append(succ[e[0]], e[1])
				}
				for m := range 4 {
					in0 := -1
					for x := range s.Names {
						if s.Module[x] == m && s.Role[x] == RoleInput && in0 < 0 {
							in0 = x
						}
					}
					reach := map[int]bool{in0: true}
					queue := []int{in0}
					for q := 0; q < len(queue); q++ {
						for _, y := range succ[queue[q]] {
							if s.Module[y] == m && !reach[y] {
								reach[y] = true
								queue = append(queue, y)
							}
						}
					}
					for x := range s.Names {
						if s.Module[x] == m && s.Role[x] == RoleOp && !reach[x] {
							t.Errorf("sd c=%d: %s not reachable from the module's first input", c, s.Names[x])
						}
					}
				}
			}
			again, _ := NewStack(cfg)
			if len(again.Edges) != len(s.Edges) {
				t.Fatal("same seed, different stacks")
			}
			for x := range s.Edges {
				if again.Edges[x] != s.Edges[x] {
					t.Fatal("same seed, different stacks")
				}
			}
		}
	}
}

func TestStackProblem(t *testing.T) {
	s, err := NewStack(StackConfig{Model: ER, N: 10, Modules: 2, Channels: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cc := ThesisCosts()
	cc.Batch, cc.Granules = 16, 4
	p, err := s.Problem(ThesisPlatform(), cc)
	if err != nil {
		t.Fatal(err)
	}
	if p.Batch != 4 || p.GranuleSize != 4 {
		t.Fatalf("batch %d granule %d, want 4 granules of 4", p.Batch, p.GranuleSize)
	}
	for _, nd := range p.Nodes {
		for u := range nd.BatchTime {
			for c := 1; c < 4; c++ {
				if nd.BatchTime[u][c] <= nd.BatchTime[u][c-1] {
					t.Fatalf("%s: batch times not increasing on device %d: %v", nd.Name, u, nd.BatchTime[u])
				}
				// Sub-linear: a batch of c+1 granules takes less than c+1 batches of one.
				if nd.BatchTime[u][c] > float64(c+1)*nd.BatchTime[u][0]*(1+1e-12) {
					t.Fatalf("%s: batching slower than linear on device %d", nd.Name, u)
				}
			}
		}
	}
	// In latency mode (one input) the CPU is on average about 7× slower than the A100.
	p, err = s.Problem(ThesisPlatform(), ThesisCosts())
	if err != nil {
		t.Fatal(err)
	}
	ratio := 0.0
	for _, nd := range p.Nodes {
		ratio += math.Log(nd.Time[0] / nd.Time[2])
	}
	if g := math.Exp(ratio / float64(len(p.Nodes))); g < 5 || g > 10 {
		t.Errorf("geometric mean CPU/A100 ratio %.2f, want about 7.1", g)
	}
}
