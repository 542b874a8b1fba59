// Command overshoot measures how well schedule.Solve keeps its time limit: for each instance,
// method and limit it prints the elapsed time and the ratio elapsed ÷ limit (issue 9's
// "--time-limit honoured within 10%"). Instances: the corpus's RandWire ONNX model on
// cpu,t4,a100-80g (latency, and batched with -batch), and seed 003's RandWire stacks.
//
// Run it from the repository root: go run ./bench/overshoot [-limits 5s,10s,30s].
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/planner"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/schedule"
	"github.com/onnxpart/onnxpart/schedule/instances"
)

func main() {
	limits := flag.String("limits", "5s,10s,30s", "comma list of time limits")
	methods := flag.String("methods", "split,milp", "comma list of methods")
	models := flag.String("models", "randwire_ws_small_small", "comma list of corpus models (in -dir)")
	dir := flag.String("dir", "../shared/models", "corpus directory")
	stacks := flag.Bool("stacks", true, "also seed 003's RandWire stacks (10 modules, 1-ch and sd 4-ch)")
	batch := flag.Int("batch", 0, "also the batched mode with this batch (ONNX models: granules of 1; stacks: 4 granules)")
	flag.Parse()
	type inst struct {
		name string
		p    *schedule.Problem
	}
	var list []inst
	cl, err := devices.Resolve(context.Background(), "cpu,t4,a100-80g", devices.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cm := profile.NewCostModel(cl, profile.CostOptions{})
	for _, name := range strings.Split(*models, ",") {
		if name == "" {
			continue
		}
		m, err := ingest.Load(filepath.Join(*dir, name+".onnx"), ingest.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		// The planner's own problems (times in seconds), latency and batched in 4 granules.
		pr := planner.Price(m.Graph, cm)
		devs := []int{0, 1, 2}
		list = append(list, inst{name, planner.PlacementProblem(m.Graph, cl, pr, devs, 1, 1)})
		if *batch > 1 {
			if *batch%4 != 0 {
				fmt.Fprintf(os.Stderr, "-batch %d: want a multiple of 4 granules\n", *batch)
				os.Exit(2)
			}
			list = append(list, inst{fmt.Sprintf("%s B=%d", name, *batch), planner.PlacementProblem(m.Graph, cl, pr, devs, 4, *batch/4)})
		}
	}
	if *stacks {
		for _, ch := range []int{1, 4} {
			for _, b := range []int{1, *batch} {
				if b == 0 {
					continue
				}
				s, _ := instances.NewStack(instances.StackConfig{Model: instances.ER, P: 0.2, N: 10, Modules: 10, Channels: ch, Strong: true, Seed: 1})
				cc := instances.ThesisCosts()
				cc.Seed = 1
				if b > 1 {
					cc.Batch, cc.Granules = b, 4
				}
				p, err := s.Problem(instances.ThesisPlatform(), cc)
				if err != nil {
					panic(err)
				}
				list = append(list, inst{fmt.Sprintf("stack %d-ch B=%d", ch, b), p})
			}
		}
	}
	fmt.Printf("| instance | nodes | method | limit | elapsed | ratio | makespan | notes |\n|---|---|---|---|---|---|---|---|\n")
	for _, in := range list {
		for _, m := range strings.Split(*methods, ",") {
			for _, ls := range strings.Split(*limits, ",") {
				lim, err := time.ParseDuration(ls)
				if err != nil {
					panic(err)
				}
				t0 := time.Now()
				r, err := schedule.Solve(context.Background(), in.p, schedule.Options{Method: m, TimeLimit: lim, Seed: 1})
				el := time.Since(t0)
				if err != nil {
					fmt.Printf("| %s | %d | %s | %v | %.2f | %.3f | – | %v |\n", in.name, len(in.p.Nodes), m, lim, el.Seconds(), el.Seconds()/lim.Seconds(), err)
					continue
				}
				notes := diag.NoteStrings(r.Notes)
				for _, c := range r.Candidates {
					if c.Method == m || (m == schedule.Auto && (c.Method == schedule.MILP || c.Method == schedule.Split)) {
						notes = append(notes, fmt.Sprintf("%s after %.2f s: %s", c.Method, c.Seconds, c.Note))
					}
				}
				fmt.Printf("| %s | %d | %s | %v | %.2f | %.3f | %.5g | %s |\n", in.name, len(in.p.Nodes), m, lim, el.Seconds(), el.Seconds()/lim.Seconds(), r.Makespan, strings.Join(notes, "; "))
			}
		}
	}
}
