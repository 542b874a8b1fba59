// Command llmplan (make bench-llm) plans generated Llama-style decoders (internal/llamagen)
// on catalog GPUs and prints, as Markdown, what crosses the stage boundaries when cuts may
// fall anywhere and when they fall between layers (--cut-at any and blocks), at a prefill
// and at a decode step, and the plan for a workload of both (--workload). -large adds
// TinyLlama-1.1B's shape (2.05 GiB of fp16 external data, written to a temporary directory).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/onnxpart/onnxpart"
	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/llamagen"
)

func main() {
	large := flag.Bool("large", false, "also plan TinyLlama-1.1B's shape (writes 2.05 GiB to a temporary directory)")
	devices := flag.String("devices", "4xA100-80G", "catalog devices")
	limit := flag.Duration("time-limit", 20*time.Second, "planning time limit per plan")
	flag.Parse()
	configs := []llamagen.Config{llamagen.Small}
	if *large {
		configs = append(configs, llamagen.TinyLlama1B)
	}
	ctx := context.Background()
	c, err := hw.Resolve(ctx, *devices, hw.Options{})
	check(err)
	fmt.Printf("Devices: %s. Each plan: --seed 1, --time-limit %s.\n\n", *devices, *limit)
	for _, cfg := range configs {
		dir, err := os.MkdirTemp("", "llmplan")
		check(err)
		path, err := llamagen.Write(dir, cfg)
		check(err)
		fmt.Printf("## %s: %d layers, hidden %d, %d heads / %d KV heads, vocab %d, %s, %d parameters\n\n",
			cfg.Name, cfg.Layers, cfg.Hidden, cfg.Heads, cfg.KVHeads, cfg.Vocab, cfg.DType, cfg.Params())
		fmt.Println("| phase | cuts | stage boundaries: tensors (bytes) | bytes sent per call | bottleneck | bound |")
		fmt.Println("| --- | --- | --- | ---: | ---: | ---: |")
		for _, ph := range []struct {
			name string
			dims map[string]int64
		}{
			{"prefill seq=512", map[string]int64{"batch": 1, "seq": 512, "past": 0}},
			{"decode past=1024", map[string]int64{"batch": 1, "seq": 1, "past": 1024}},
		} {
			m, err := ingest.Load(path, ingest.Options{Dims: ph.dims})
			check(err)
			for _, cut := range []onnxpart.Cut{onnxpart.CutAny, onnxpart.CutBlocks} {
				r, err := onnxpart.Plan(ctx, m, c, onnxpart.Options{Seed: 1, Reproducible: true, TimeLimit: *limit, CutAt: cut})
				check(err)
				l, err := onnxpart.Prepare(m, r, emit.Options{}, 1)
				check(err)
				fmt.Printf("| %s | %s | %s | %d | %s | %s |\n", ph.name, cut, boundaries(l.Manifest), sent(l.Manifest), dur(r.Upper), dur(r.Lower))
			}
		}
		fmt.Println()
		phases := []onnxpart.Phase{}
		for _, s := range []string{"prefill:seq=512,past=0@1", "decode:seq=1,past=1024@128"} {
			p, err := onnxpart.ParsePhase(s)
			check(err)
			p.Dims["batch"] = 1
			pm, err := ingest.Load(path, ingest.Options{Dims: p.Dims})
			check(err)
			p.Graph = pm.Graph
			phases = append(phases, p)
		}
		m, err := ingest.Load(path, ingest.Options{Dims: phases[0].Dims})
		check(err)
		r, err := onnxpart.Plan(ctx, m, c, onnxpart.Options{Seed: 1, Reproducible: true, TimeLimit: *limit, Workload: phases})
		check(err)
		fmt.Printf("Workload `--workload prefill:seq=512,past=0@1 --workload decode:seq=1,past=1024@128` (cuts: auto): busiest stage %s per request (%.3g requests/s), bound %s, request latency %s.\n\n",
			dur(r.Upper), r.ThroughputPerS, dur(r.Lower), dur(r.LatencyS))
		fmt.Println("| phase | calls per request | bottleneck per call | calls/s alone | latency per call |")
		fmt.Println("| --- | ---: | ---: | ---: | ---: |")
		for _, f := range r.Workload {
			fmt.Printf("| %s | %g | %s | %.4g | %s |\n", f.Name, f.Weight, dur(f.BottleneckS), f.ThroughputPerS, dur(f.LatencyS))
		}
		fmt.Println()
		for _, n := range r.Notes {
			if strings.HasPrefix(n.Msg, "cuts ") || strings.Contains(n.Msg, "computed again") {
				fmt.Printf("- %s\n", n)
			}
		}
		fmt.Println()
		os.RemoveAll(dir)
	}
}

// boundaries lists the distinct tensors crossing stage boundaries with their bytes.
func boundaries(m *emit.Manifest) string {
	seen := map[string]int64{}
	for _, t := range m.Transfers {
		seen[t.Tensor] = t.Bytes
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		out = append(out, fmt.Sprintf("`%s` (%d)", n, seen[n]))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// sent is the bytes every transfer of one call moves.
func sent(m *emit.Manifest) int64 {
	var s int64
	for _, t := range m.Transfers {
		s += max(t.Bytes, 0)
	}
	return s
}

func dur(s float64) string {
	switch {
	case s >= 1:
		return fmt.Sprintf("%.3g s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.3g ms", s*1e3)
	}
	return fmt.Sprintf("%.3g µs", s*1e6)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "llmplan:", err)
		os.Exit(1)
	}
}
