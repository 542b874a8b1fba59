package schedule_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/schedule"
	"github.com/onnxpart/onnxpart/schedule/instances"
)

// TestRandWireCappedOptima settles "bound or plan" under the stage cap on small RandWire
// stacks (ER and WS, one module of 4 random nodes, T4 and A100 of seed 003's platform, calls
// of 20 µs): the exhaustive uncapped and capped (2 stages per device) optima against auto's
// plan within the cap and its bounds. Every capped bound must be ≤ the capped optimum, the
// plan ≥ it, and the capped optimum ≥ the uncapped one; the table is logged (-v; a capped
// bound of 0 means the plan met an uncapped bound before the capped DP ran).
func TestRandWireCappedOptima(t *testing.T) {
	if testing.Short() {
		t.Skip("exhaustive optima of 16 stacks")
	}
	const perDevice = 2
	var rows []string
	for _, model := range []string{instances.ER, instances.WS} {
		for seed := uint64(1); seed <= 8; seed++ {
			cfg := instances.StackConfig{Model: model, N: 4, Modules: 1, Channels: 1, Strong: seed%2 == 0, Seed: seed}
			if model == instances.WS {
				cfg.K = 2
			}
			p := gpuStack(t, cfg)
			ref := newRef(p).optimum()
			rc := newRef(p)
			rc.capPer = perDevice
			refCap := rc.optimum()
			res, err := schedule.Solve(context.Background(), p, schedule.Options{TimeLimit: 10 * time.Second, Seed: seed, MaxStagesPerDevice: perDevice, RelGap: relGap})
			if err != nil {
				t.Fatal(err)
			}
			unc, capped := 0.0, 0.0
			for _, b := range res.Bounds {
				if schedule.CappedBound(b.Method) {
					capped = math.Max(capped, b.Value)
				} else {
					unc = math.Max(unc, b.Value)
				}
			}
			name := fmt.Sprintf("%s seed %d (%d nodes)", model, seed, len(p.Nodes))
			if refCap.opt < ref.opt-tolOf(ref.opt) {
				t.Errorf("%s: capped optimum %g below the uncapped %g", name, refCap.opt, ref.opt)
			}
			if res.Makespan < refCap.opt-tolOf(refCap.opt) {
				t.Errorf("%s: plan %g below the capped optimum %g", name, res.Makespan, refCap.opt)
			}
			if capped > refCap.opt+tolOf(refCap.opt) || unc > ref.opt+tolOf(ref.opt) {
				t.Errorf("%s: bounds %v above the optima %g (capped %g)", name, res.Bounds, ref.opt, refCap.opt)
			}
			if capped == 0 && !res.Optimal {
				// (A plan that meets an uncapped bound stops the solve before the capped DP.)
				t.Errorf("%s: no capped bound among %v, plan not proved optimal", name, res.Bounds)
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %d | %.4g | %.4g | %.4g | %.4g | %.4g |", model, fmt.Sprint(seed), len(p.Nodes), ref.opt, refCap.opt, res.Makespan, unc, capped))
		}
	}
	t.Logf("\n| model | seed | nodes | uncapped optimum | capped optimum | plan | uncapped bound | capped bound |\n|---|---|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}

// gpuStack is the RandWire stack of cfg on the T4 and the A100 of seed 003's platform (its
// costs drawn with cfg.Seed), every device paying a call of 20 µs.
func gpuStack(t *testing.T, cfg instances.StackConfig) *schedule.Problem {
	t.Helper()
	pf := instances.ThesisPlatform()
	pf.Names, pf.Slowdown, pf.BatchExp, pf.Memory = pf.Names[1:], pf.Slowdown[1:], pf.BatchExp[1:], pf.Memory[1:]
	return stackOn(t, cfg, pf, 0.02)
}

// stackOn is the RandWire stack of cfg on platform pf, its costs drawn with cfg.Seed, every
// device paying call (ms).
func stackOn(t *testing.T, cfg instances.StackConfig, pf instances.Platform, call float64) *schedule.Problem {
	t.Helper()
	st, err := instances.NewStack(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cc := instances.ThesisCosts()
	cc.Seed = cfg.Seed
	p, err := st.Problem(pf, cc)
	if err != nil {
		t.Fatal(err)
	}
	for u := range p.Devices {
		p.Devices[u].CallCost = call
	}
	return p
}
