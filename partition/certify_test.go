package partition_test

// The certificate harness: random small instances of every problem package partition
// certifies, solved by Solve (and, on some, by every LowerBound method) and by the exhaustive
// reference of certify_ref_test.go. On every instance:
//   - every lower bound ≤ exhaustive optimum ≤ reported objective;
//   - a plan reported optimal (gap 0) has the exhaustive optimum as its objective;
//   - "infeasible" only when exhaustive search finds no plan;
//   - the reported objective equals the reference's evaluation of the returned plan.
//
// `go test` runs a few thousand instances; ONNXPART_CERT_N=100000 (make fuzz-certificates)
// runs more, and FuzzCertificates drives the same generators from the fuzzer's bytes.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/partition"
	"github.com/onnxpart/onnxpart/partition/instances"
)

// certKinds are the generator families; the fuzz target and the long run cycle through them.
var certKinds = []string{"pipeline", "hetero", "unordered", "dnn-inference", "dnn-training"}

// certCase is one generated instance with its exhaustive answer.
type certCase struct {
	name string
	p    *partition.Problem
	ref  refResult
}

// genCase builds instance i of kind from seed.
func genCase(t testing.TB, dir, kind string, seed int64) certCase {
	rng := rand.New(rand.NewSource(seed))
	name := fmt.Sprintf("%s/seed=%d", kind, seed)
	switch kind {
	case "pipeline", "hetero", "unordered":
		p := genProblem(rng, kind)
		p.Name = name
		return certCase{name: name, p: p, ref: refSolveProblem(p)}
	default:
		f, k, cpus := genDNN(rng, kind == "dnn-training")
		path := filepath.Join(dir, fmt.Sprintf("%s-%d.json", kind, seed))
		data, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := instances.LoadDNN(path, k, cpus)
		if err != nil {
			t.Fatalf("%s: LoadDNN: %v\n%s", name, err, data)
		}
		return certCase{name: name + " " + string(data), p: d.Problem, ref: refSolveDNN(f, k, cpus)}
	}
}

// small integers keep the sums exact, so ties are real ties.
func smallInt(rng *rand.Rand, hi int) float64 { return float64(rng.Intn(hi + 1)) }

// genProblem draws a Problem with the edge cases the harness must cover: zero costs, no
// edges, disconnected parts, tight and exactly-full memory caps, colocation, heavy or free
// communication, fast memory with overflow, one node per stage and more stages than nodes,
// heterogeneous devices, and cost-only (unordered) tensors.
func genProblem(rng *rand.Rand, kind string) *partition.Problem {
	n := 1 + rng.Intn(6)
	p := &partition.Problem{Work: make([]float64, n), Params: make([]float64, n), Bandwidth: 1}
	zeroWork := rng.Intn(6) == 0
	for v := 0; v < n; v++ {
		if !zeroWork {
			p.Work[v] = smallInt(rng, 6)
		}
		p.Params[v] = smallInt(rng, 4)
	}
	edgeP := []float64{0, 0.3, 0.6, 1}[rng.Intn(4)]
	split := n // disconnected halves: no edge crosses split
	if rng.Intn(4) == 0 {
		split = rng.Intn(n + 1)
	}
	sizeHi := []int{0, 2, 8, 40}[rng.Intn(4)] // 40: heavy communication
	for u := 0; u < n; u++ {
		var cons []int
		for v := u + 1; v < n; v++ {
			if (u < split) == (v < split) && rng.Float64() < edgeP {
				cons = append(cons, v)
			}
		}
		for len(cons) > 0 {
			m := 1 + rng.Intn(len(cons))
			p.Tensors = append(p.Tensors, partition.Tensor{Producer: u, Consumers: cons[:m], Size: smallInt(rng, sizeHi)})
			cons = cons[m:]
		}
	}
	if kind == "unordered" {
		for i := rng.Intn(3) + 1; i > 0 && n > 1; i-- {
			a, b := rng.Intn(n), rng.Intn(n)
			if a != b {
				p.Tensors = append(p.Tensors, partition.Tensor{Producer: a, Consumers: []int{b}, Size: smallInt(rng, sizeHi), Unordered: true})
			}
		}
	}
	if rng.Intn(4) == 0 && n > 1 {
		a, b := rng.Intn(n), rng.Intn(n)
		if a != b {
			p.Colocate = append(p.Colocate, []int{a, b})
		}
	}
	switch rng.Intn(5) {
	case 0:
		p.Bandwidth = math.Inf(1)
	case 1:
		p.Bandwidth = 0.5
	}
	if rng.Intn(5) == 0 {
		p.FastMemory = smallInt(rng, 4) + 1
	}
	totalParams := 0.0
	maxParam := 0.0
	for _, w := range p.Params {
		totalParams += w
		maxParam = math.Max(maxParam, w)
	}
	K := 1 + rng.Intn(4) // may exceed n
	capOf := func(stages int) float64 {
		switch rng.Intn(5) {
		case 0: // tight: the largest node exactly
			return maxParam
		case 1: // exactly full on average
			return math.Ceil(totalParams / float64(stages))
		case 2: // likely infeasible
			return math.Max(1, maxParam-1)
		}
		return 0
	}
	if kind == "hetero" {
		c0, c1 := 1+rng.Intn(2), rng.Intn(3)
		w1 := make([]float64, n)
		for v := range w1 {
			w1[v] = smallInt(rng, 9)
		}
		bw1 := []float64{0, math.Inf(1), 2}[rng.Intn(3)]
		p.Devices = []partition.Device{
			{Name: "fast", Count: c0, MemoryCap: capOf(c0 + c1)},
			{Name: "slow", Count: c1, Work: w1, Bandwidth: bw1, MemoryCap: capOf(c0 + c1)},
		}
		return p
	}
	p.K = K
	p.MemoryCap = capOf(K)
	return p
}

// genDNN draws a dnn-partitioning file. Training files pair forward nodes with backward
// nodes through colour classes, with mirrored backward edges, forward → backward edges (the
// activations a gradient reads), backward nodes without a forward mate and nodes without a
// class; inference files may colocate forward nodes.
func genDNN(rng *rand.Rand, training bool) (f *dnnJSON, k, cpus int) {
	f = &dnnJSON{}
	m := 1 + rng.Intn(4)
	if !training {
		m = 1 + rng.Intn(6)
	}
	id := func(i int) int { return 10 + 3*i } // ids that are not indices
	cls := func(c int) *int { return &c }
	for i := 0; i < m; i++ {
		nd := dnnJSONNode{ID: id(i), SupportedOnFpga: true, FPGALatency: smallInt(rng, 5), CPULatency: smallInt(rng, 10), Size: smallInt(rng, 4)}
		if training || rng.Intn(3) == 0 {
			nd.ColorClass = cls(100 + i)
			if !training && rng.Intn(2) == 0 && i > 0 {
				nd.ColorClass = cls(100 + rng.Intn(i))
			}
		}
		f.Nodes = append(f.Nodes, nd)
	}
	cost := make([]float64, 64)
	for i := range cost {
		cost[i] = smallInt(rng, []int{0, 2, 6}[rng.Intn(3)])
	}
	edgeP := []float64{0, 0.4, 0.8}[rng.Intn(3)]
	var fwdEdges [][2]int
	for u := 0; u < m; u++ {
		for v := u + 1; v < m; v++ {
			if rng.Float64() < edgeP {
				fwdEdges = append(fwdEdges, [2]int{u, v})
				f.Edges = append(f.Edges, dnnJSONEdge{SourceID: id(u), DestID: id(v), Cost: cost[u]})
			}
		}
	}
	if training {
		// Backward nodes: the mate of forward node i sits at index m+i when present; a few
		// orphans follow. Backward edges run against the forward ones (a DAG in reverse order).
		mate := make([]int, m)
		var bwd []int
		for i := 0; i < m; i++ {
			mate[i] = -1
			if rng.Intn(5) != 0 {
				mate[i] = len(f.Nodes)
				f.Nodes = append(f.Nodes, dnnJSONNode{ID: id(len(f.Nodes)), SupportedOnFpga: true, IsBackwardNode: true,
					FPGALatency: smallInt(rng, 6), CPULatency: smallInt(rng, 10), Size: smallInt(rng, 3), ColorClass: cls(100 + i)})
				bwd = append(bwd, mate[i])
			}
		}
		for o := rng.Intn(3); o > 0; o-- {
			nd := dnnJSONNode{ID: id(len(f.Nodes)), SupportedOnFpga: true, IsBackwardNode: true,
				FPGALatency: smallInt(rng, 4), CPULatency: smallInt(rng, 6), Size: smallInt(rng, 2)}
			if rng.Intn(2) == 0 {
				nd.ColorClass = cls(200 + o)
			}
			// Orphans go first in the backward order (bwd is traversed so that edges run from
			// later to earlier entries), so they can feed or read any mate.
			bwd = append([]int{len(f.Nodes)}, bwd...)
			f.Nodes = append(f.Nodes, nd)
		}
		for _, e := range fwdEdges {
			if mate[e[0]] >= 0 && mate[e[1]] >= 0 && rng.Intn(4) != 0 {
				f.Edges = append(f.Edges, dnnJSONEdge{SourceID: f.Nodes[mate[e[1]]].ID, DestID: f.Nodes[mate[e[0]]].ID, Cost: cost[mate[e[1]]]})
			}
		}
		// Random backward → backward edges from a later to an earlier entry of bwd (acyclic).
		for a := 0; a < len(bwd); a++ {
			for b := a + 1; b < len(bwd); b++ {
				if rng.Intn(5) == 0 {
					f.Edges = append(f.Edges, dnnJSONEdge{SourceID: f.Nodes[bwd[b]].ID, DestID: f.Nodes[bwd[a]].ID, Cost: cost[bwd[b]]})
				}
			}
		}
		// Forward → backward edges: stashed activations.
		for u := 0; u < m; u++ {
			for _, b := range bwd {
				if rng.Intn(4) == 0 {
					f.Edges = append(f.Edges, dnnJSONEdge{SourceID: id(u), DestID: f.Nodes[b].ID, Cost: cost[u]})
				}
			}
		}
	}
	// One cost per source, as the format promises.
	for i := range f.Edges {
		for j := range f.Nodes {
			if f.Nodes[j].ID == f.Edges[i].SourceID {
				f.Edges[i].Cost = cost[j]
			}
		}
	}
	total, maxSize := 0.0, 0.0
	for _, nd := range f.Nodes {
		total += nd.Size
		maxSize = math.Max(maxSize, nd.Size)
	}
	k = 1 + rng.Intn(3)
	if rng.Intn(3) == 0 {
		cpus = 1
	}
	switch rng.Intn(4) {
	case 0:
		f.MaxSizePerFPGA = maxSize
	case 1:
		f.MaxSizePerFPGA = math.Ceil(total / float64(k))
	case 2:
		f.MaxSizePerFPGA = math.Max(0, maxSize-1)
	default:
		f.MaxSizePerFPGA = total + 1
	}
	f.MaxFPGAs, f.MaxCPUs = k, cpus
	return f, k, cpus
}

// certTol is the tolerance of the comparisons: the MIPs' (mipTol, relative 1e-6) and float
// rounding.
func certTol(x float64) float64 { return 1e-6*math.Max(1, math.Abs(x)) + 1e-9 }

// checkPlan returns the violations of Solve's answer against the reference.
func checkPlan(c certCase, plan *partition.Plan, err error) []string {
	var v []string
	bad := func(format string, a ...any) { v = append(v, fmt.Sprintf(format, a...)) }
	switch {
	case diag.KindOf(err) == diag.KindInfeasible:
		if c.ref.feasible {
			bad("reported infeasible (%v) but a plan of value %g exists", err, c.ref.opt)
		}
		return v
	case diag.KindOf(err) == diag.KindNoPlan:
		if c.ref.feasible {
			bad("no plan found (%v) on a tiny instance whose optimum is %g", err, c.ref.opt)
		}
		return v
	case err != nil:
		bad("error: %v", err)
		return v
	}
	if !c.ref.feasible {
		bad("returned a plan (objective %g) but exhaustive search finds none", plan.Objective)
		return v
	}
	tol := certTol(c.ref.opt)
	obj, ok := refEvaluate(c.p, plan.Assignment, plan.StageDevice)
	switch {
	case !ok:
		bad("the returned plan breaks a constraint of the model")
	case math.Abs(obj-plan.Objective) > tol:
		bad("reported objective %g, the plan evaluates to %g", plan.Objective, obj)
	}
	if plan.Objective < c.ref.opt-tol {
		bad("objective %g below the exhaustive optimum %g", plan.Objective, c.ref.opt)
	}
	if plan.LowerBound > c.ref.opt+tol {
		bad("lower bound %g (%s) above the exhaustive optimum %g", plan.LowerBound, plan.BoundMethod, c.ref.opt)
	}
	for _, b := range plan.Bounds {
		if b.Value > c.ref.opt+tol {
			bad("bound %s = %g (status %s) above the exhaustive optimum %g", b.Method, b.Value, b.Status, c.ref.opt)
		}
	}
	if plan.Gap <= 0 && math.Abs(plan.Objective-c.ref.opt) > tol {
		bad("proved optimal at %g but the optimum is %g", plan.Objective, c.ref.opt)
	}
	return v
}

// checkBoundMethods runs every LowerBound method with the plan as incumbent.
func checkBoundMethods(ctx context.Context, c certCase, plan *partition.Plan) []string {
	var v []string
	for _, m := range partition.BoundMethods {
		b, better, err := partition.LowerBound(ctx, c.p, plan, m, partition.BoundOptions{TimeLimit: 5 * time.Second, Parallel: 1})
		if err != nil {
			continue // a method that does not apply says so and proves nothing
		}
		if b.Value > c.ref.opt+certTol(c.ref.opt) {
			v = append(v, fmt.Sprintf("LowerBound %s = %g (status %s) above the exhaustive optimum %g", m, b.Value, b.Status, c.ref.opt))
		}
		if better != nil {
			if obj, ok := refEvaluate(c.p, better.Assignment, better.StageDevice); !ok || obj < c.ref.opt-certTol(c.ref.opt) {
				v = append(v, fmt.Sprintf("LowerBound %s returned a plan that is invalid or below the optimum", m))
			}
		}
	}
	return v
}

// runCert solves one case and returns its violations.
func runCert(t testing.TB, c certCase, seed int64, withMethods bool) []string {
	ctx := context.Background()
	plan, err := partition.Solve(ctx, c.p, partition.Options{Seed: seed, Workers: 1, TimeLimit: 20 * time.Second,
		Bounds: partition.BoundsFast, MIPTimeLimit: 5 * time.Second})
	v := checkPlan(c, plan, err)
	if withMethods && err == nil && len(v) == 0 {
		v = append(v, checkBoundMethods(ctx, c, plan)...)
	}
	return v
}

// certCount is the number of instances per kind: ONNXPART_CERT_N overrides the default.
func certCount(t *testing.T, def int) int {
	if s := os.Getenv("ONNXPART_CERT_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("ONNXPART_CERT_N=%q: want a positive count", s)
		}
		return n
	}
	if testing.Short() {
		return def / 10
	}
	return def
}

// TestCertificates is the harness: zero violations over every kind.
func TestCertificates(t *testing.T) {
	n := certCount(t, 600)
	dir := t.TempDir()
	total, infeasible, methods := 0, 0, 0
	for _, kind := range certKinds {
		for i := 0; i < n; i++ {
			seed := int64(i)
			c := genCase(t, dir, kind, seed)
			// Every LowerBound method on one instance in 25 (the MIPs cost milliseconds each).
			withMethods := i%25 == 0
			if withMethods {
				methods++
			}
			if !c.ref.feasible {
				infeasible++
			}
			for _, msg := range runCert(t, c, seed, withMethods) {
				t.Errorf("%s: %s", c.name, msg)
			}
			total++
			if t.Failed() && total > 20 {
				t.FailNow()
			}
		}
	}
	t.Logf("%d instances (%d infeasible, %d with every LowerBound method) across %v: no violation", total, infeasible, methods, certKinds)
}

// FuzzCertificates drives the generators from the fuzzer's bytes: a kind and a seed.
func FuzzCertificates(f *testing.F) {
	for i := range certKinds {
		f.Add(uint8(i), int64(i*7919))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, kind uint8, seed int64) {
		c := genCase(t, dir, certKinds[int(kind)%len(certKinds)], seed)
		for _, msg := range runCert(t, c, seed, seed%16 == 0) {
			t.Errorf("%s: %s", c.name, msg)
		}
	})
}

// writeDNN writes a dnn-partitioning file for the regression tests.
func writeDNN(t *testing.T, f *dnnJSON) string {
	path := filepath.Join(t.TempDir(), "instance.json")
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCertificateRegressions are the instances the independent check of issue 33 found.
func TestCertificateRegressions(t *testing.T) {
	cls := func(c int) *int { return &c }
	node := func(id int, bwd bool, c int, size float64) dnnJSONNode {
		return dnnJSONNode{ID: id, SupportedOnFpga: true, FPGALatency: 1, CPULatency: 1, IsBackwardNode: bwd, ColorClass: cls(c), Size: size}
	}
	cases := []struct {
		name    string
		f       *dnnJSON
		k       int
		optimum float64
	}{
		{
			// a → b forward, bgrad → agrad backward; each pair shares a device. Treating
			// bgrad → agrad as an order forced everything onto one stage (objective 4, "gap 0").
			name: "training-4-nodes",
			f: &dnnJSON{MaxFPGAs: 2, MaxSizePerFPGA: 10,
				Nodes: []dnnJSONNode{node(0, false, 1, 0), node(1, false, 2, 0), node(2, true, 1, 0), node(3, true, 2, 0)},
				Edges: []dnnJSONEdge{{SourceID: 0, DestID: 1}, {SourceID: 3, DestID: 2}}},
			k: 2, optimum: 2,
		},
		{
			// No edges, sizes 3, 3, 2, 2 and a cap of 5 on two stages: {n0, n2}, {n1, n3}
			// fits, but no start order slices into it ("infeasible" was claimed).
			name: "memory-4-nodes",
			f: &dnnJSON{MaxFPGAs: 2, MaxSizePerFPGA: 5,
				Nodes: []dnnJSONNode{node(0, false, 0, 3), node(1, false, 1, 3), node(2, false, 2, 2), node(3, false, 3, 2)}},
			k: 2, optimum: 2,
		},
		{
			// Forward → backward edges only (stashed activations): they cost communication
			// but do not order the stages.
			name: "training-forward-to-backward",
			f: &dnnJSON{MaxFPGAs: 3, MaxSizePerFPGA: 100,
				Nodes: []dnnJSONNode{node(0, false, 1, 0), node(1, false, 2, 0), node(2, false, 3, 0),
					node(3, true, 1, 0), node(4, true, 2, 0), node(5, true, 3, 0)},
				Edges: []dnnJSONEdge{{SourceID: 0, DestID: 1}, {SourceID: 1, DestID: 2},
					{SourceID: 2, DestID: 3}, {SourceID: 1, DestID: 3}, {SourceID: 2, DestID: 4}}},
			k: 3, optimum: 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeDNN(t, tc.f)
			d, err := instances.LoadDNN(path, tc.k, 0)
			if err != nil {
				t.Fatal(err)
			}
			ref := refSolveDNN(tc.f, tc.k, 0)
			if !ref.feasible || ref.opt != tc.optimum {
				t.Fatalf("reference: %+v, want optimum %g", ref, tc.optimum)
			}
			c := certCase{name: tc.name, p: d.Problem, ref: ref}
			plan, err := partition.Solve(context.Background(), d.Problem, partition.Options{Seed: 1, Workers: 1, TimeLimit: 10 * time.Second})
			if err != nil {
				t.Fatalf("Solve: %v", err)
			}
			for _, msg := range checkPlan(c, plan, err) {
				t.Error(msg)
			}
			if plan.Objective != tc.optimum || plan.Gap != 0 {
				t.Errorf("objective %g, gap %g; want the optimum %g proved", plan.Objective, plan.Gap, tc.optimum)
			}
		})
	}
}

// TestInfeasibleIsProved: an instance with no plan is reported infeasible (exit 3) with its
// proof, both by the counting argument and by the exact DP, and never as a plan.
func TestInfeasibleIsProved(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params []float64
		cap    float64
		want   string
	}{
		{"node above every cap", []float64{6, 1, 1}, 5, "above the largest memory cap"},
		{"total above all stages", []float64{4, 4, 4}, 5, "all stages together"},
		{"only the DP proves it", []float64{3, 3, 3}, 5, "exact DP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &partition.Problem{Work: []float64{1, 1, 1}, Params: tc.params, K: 2, Bandwidth: 1, MemoryCap: tc.cap}
			if ref := refSolveProblem(p); ref.feasible {
				t.Fatalf("the instance is feasible (%g); the test is wrong", ref.opt)
			}
			_, err := partition.Solve(context.Background(), p, partition.Options{Seed: 1, Workers: 1})
			if diag.KindOf(err) != diag.KindInfeasible {
				t.Fatalf("err = %v, want an infeasible error", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
