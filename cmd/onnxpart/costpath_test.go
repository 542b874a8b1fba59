package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/onnxpart/onnxpart/emit"
)

// TestProfileStageEqualsPlan is the one cost path (#38 item 4): a plan is written with a
// fixed seed, and `onnxpart profile` on each stage file it wrote, with the plan's devices and
// dims, predicts the stage's compute_s and call_s of the manifest to 1e-9 (relative). The
// planner prices its fused groups with profile.CostModel.KernelTimes on the whole model, the
// profile command coarsens the stage file alone by the same rule set (PriceGraph): equal
// figures mean the stage files hold exactly the planned groups and that no group's price
// depends on what lies outside its stage.
//
// Two terms of a kernel's price depend on what lies around it, and the planner, which prices
// each kernel once before it knows the stages, takes them from the whole model:
//   - the rate at which weights stream is that of the working set of all the model's weights
//     (profile.WeightRate): stages on one host share its caches, and a stage file priced
//     alone streams only its own. On a device with a measured read sweep (the host CPU) the
//     two rates differ a little; the test allows 1e-3 there.
//   - on a CPU that computes float16 in float32, a float16 tensor that a stage receives from
//     another stage, or hands to one, is cast by the stage's runtime; in the whole model both
//     ends are priced on the same CPU and the casts cancel. A stage file priced alone pays
//     them (more, never less; the test allows up to 30%).
//
// What the figures leave out, on purpose: a stage's communication (comm_s: transfers, and on
// host CPUs with measured call costs the binding of its inputs and outputs, which profile
// shows apart as binding_seconds) belongs to the boundary between stages, not to the stage.
// Batched placements (compute_s scales each kernel's variable part by the inputs it serves)
// and workloads (compute_s weighs the phases by their calls) are figures of many calls and
// are not planned here.
func TestProfileStageEqualsPlan(t *testing.T) {
	models, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "models"))
	local, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "models"))
	if _, err := os.Stat(models); err != nil {
		t.Skip("the shared model corpus is not present")
	}
	type tc struct {
		model string
		args  []string
	}
	cases := []tc{
		{filepath.Join(local, "resnet50_small.onnx"), []string{"--devices", "2xT4"}},
		{filepath.Join(local, "resnet50_small.onnx"), []string{"--devices", "a100-80g,t4,cpu", "--objective", "latency", "--stages-per-device", "0"}},
		{filepath.Join(models, "squeezenet1_1.onnx"), []string{"--devices", "a100-80g,t4,cpu", "--objective", "throughput"}},
		{filepath.Join(models, "bert_base_like_small.onnx"), []string{"--devices", "4xA100-80G"}},
		{filepath.Join(models, "googlenet_small.onnx"), []string{"--devices", "a100-80g,t4,cpu", "--objective", "latency", "-k", "4"}},
		{filepath.Join(models, "mobilenet_v2_small.onnx"), []string{"--devices", "cpu:2x1"}},
		{filepath.Join(models, "efficientnet_b0_small.onnx"), []string{"--devices", "3xT4", "--fusion", "tensorrt"}},
		{filepath.Join(models, "resnet50_small_fp16.onnx"), []string{"--devices", "t4,cpu", "--objective", "throughput"}},
		{filepath.Join(models, "vgg16_small.onnx"), []string{"--devices", "2xcpu", "--fusion", "none"}},
	}
	if testing.Short() {
		cases = cases[:3]
	}
	for _, c := range cases {
		name := filepath.Base(c.model) + fmt.Sprint(c.args)
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(c.model); err != nil {
				t.Skip(err)
			}
			dir := filepath.Join(t.TempDir(), "out")
			args := append([]string{c.model, "--seed", "1", "--time-limit", "2s", "-q", "-o", dir, "--emit", "onnx,manifest"}, c.args...)
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), &env{stdout: &stdout, stderr: &stderr}, args); code != 0 {
				t.Fatalf("plan: exit %d: %s", code, stderr.String())
			}
			man, err := emit.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			devices, fusionArgs := "", []string(nil)
			for i := 0; i < len(c.args); i++ {
				switch c.args[i] {
				case "--devices":
					devices = c.args[i+1]
				case "--fusion":
					fusionArgs = c.args[i : i+2]
				}
			}
			if len(man.Stages) < 2 {
				t.Logf("a %d-stage plan", len(man.Stages))
			}
			for _, st := range man.Stages {
				pargs := append([]string{"profile", "--json", "--devices", devices}, fusionArgs...)
				for k, v := range man.Model.Dims {
					pargs = append(pargs, "--dim", fmt.Sprintf("%s=%d", k, v))
				}
				pargs = append(pargs, filepath.Join(dir, st.File))
				var out, errb bytes.Buffer
				if code := run(context.Background(), &env{stdout: &out, stderr: &errb}, pargs); code != 0 {
					t.Fatalf("%v: exit %d: %s", pargs, code, errb.String())
				}
				var rep profileReport
				if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
					t.Fatal(err)
				}
				d := -1
				for i, dr := range rep.Device {
					if dr.Name == st.Device {
						d = i
					}
				}
				if d < 0 || rep.Model == nil {
					t.Fatalf("stage %d: device %s not among profile's devices %v", st.Index, st.Device, rep.Device)
				}
				p := st.Predicted
				got := rep.Model
				t.Logf("stage %d on %s: %d nodes in %d kernels (%s); compute %.6g s, profile %.6g s; call %.3g s, profile %.3g s",
					st.Index, st.Device, got.Nodes, got.NumKernels, got.Fusion, p.ComputeS, got.Compute[d], p.CallS, got.Overhead[d])
				tol, why := 1e-9, ""
				for _, f := range rep.Device[d].Facts {
					if f.Key == "read sweep" {
						tol, why = 1e-3, " (weights stream at the rate of the stage's working set, not the model's)"
					}
				}
				halfCut := false
				for _, io := range append(slices.Clone(st.Inputs), st.Outputs...) {
					halfCut = halfCut || io.DType == "float16" && !io.ModelInput && !io.ModelOutput
				}
				if halfCut && rep.Device[d].Kind == "cpu" {
					// The casts of float16 tensors at the cut: only ever more.
					if got.Compute[d] < p.ComputeS*(1-tol) || got.Compute[d] > 1.3*p.ComputeS {
						t.Errorf("stage %d on %s: profile predicts compute %.12g s, the manifest %.12g s: float16 cut tensors should add casts, and not %+.3g%%",
							st.Index, st.Device, got.Compute[d], p.ComputeS, 100*(got.Compute[d]/p.ComputeS-1))
					}
				} else if !relNear(got.Compute[d], p.ComputeS, tol) {
					t.Errorf("stage %d on %s: profile predicts compute %.12g s, the manifest %.12g s (%+.3g%%)%s",
						st.Index, st.Device, got.Compute[d], p.ComputeS, 100*(got.Compute[d]/p.ComputeS-1), why)
				}
				if !relNear(got.Overhead[d], p.CallS, 1e-9) {
					t.Errorf("stage %d on %s: profile's run overhead %g s, the manifest's call %g s", st.Index, st.Device, got.Overhead[d], p.CallS)
				}
			}
		})
	}
}

func relNear(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))+1e-15
}
