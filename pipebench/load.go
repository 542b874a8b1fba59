package pipebench

import (
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"strings"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/verify"
)

// load reads the manifest (and the routes of a batched plan), makes the inputs and lays out
// the routes, stages and device workers.
func (b *bench) load(dir string) (*emit.Manifest, error) {
	man, err := verify.Check(dir)
	if err != nil {
		return nil, err
	}
	mans := []*emit.Manifest{man}
	dirs := []string{dir}
	weights := []int{1}
	if man.Batch != nil && len(man.Batch.Routes) > 0 {
		weights = nil
		mans, dirs = nil, nil
		for _, rt := range man.Batch.Routes {
			d := dir
			m := man
			if rt.Dir != "." && rt.Dir != "" {
				if strings.ContainsAny(rt.Dir, `/\:`) || rt.Dir == ".." {
					return nil, fmt.Errorf("manifest.json: route %d's directory %q is not a plain subdirectory name", rt.Index, rt.Dir)
				}
				d = filepath.Join(dir, rt.Dir)
				if m, err = verify.Check(d); err != nil {
					return nil, fmt.Errorf("route %d (%s): %w", rt.Index, rt.Dir, err)
				}
			}
			mans, dirs = append(mans, m), append(dirs, d)
			weights = append(weights, max(rt.Inputs, 1))
		}
	}
	dims, orig, err := b.dims(dir, man)
	if err != nil {
		return nil, err
	}
	b.bound = dims
	if err := b.makeFeeds(dir, man, dims, orig); err != nil {
		return nil, err
	}
	byName := map[string]*worker{}
	given := map[string]Device{}
	for _, d := range b.opt.Devices {
		given[d.Name] = d
	}
	// A batched plan whose stage files take the batch runs as priced: each request to a
	// route is the route's whole share, one batch per stage call, and the routes take
	// requests in turn (one round is one batch of the plan).
	batchDim := ""
	if man.Batch != nil && man.Batch.Dim != "" && len(man.Batch.Routes) > 0 {
		batchDim = man.Batch.Dim
		if _, ok := dims[batchDim]; !ok {
			// The model fixes its leading dim at 1; the stage files made it the batch.
			dims = maps.Clone(dims)
			dims[batchDim] = 1
		}
	}
	for ri, m := range mans {
		rt := &routeRT{index: ri, dir: dirs[ri], man: m, weight: weights[ri], perRequest: 1}
		dims := dims
		if batchDim != "" {
			n := weights[ri]
			rt.weight, rt.perRequest = 1, n
			dims = maps.Clone(dims)
			dims[batchDim] *= int64(n)
			for _, set := range b.feeds {
				rt.feeds = append(rt.feeds, tileFeeds(set, m.Model.Inputs, n))
			}
		}
		producer := map[string]int{}
		for i := range m.Stages {
			st := &m.Stages[i]
			w := byName[st.Device]
			if w == nil {
				w = &worker{name: st.Device, provider: st.Provider}
				byName[st.Device] = w
				b.workers = append(b.workers, w)
			}
			s := &stageRT{route: ri, index: i, st: st, path: filepath.Join(dirs[ri], st.File), dev: w, hints: map[string]ort.OutputHint{},
				inShapes: map[string]ort.OutputHint{}}
			deps := map[int]bool{}
			for _, in := range st.Inputs {
				s.ins = append(s.ins, in.Name)
				if dt, ok := graph.ParseDType(in.DType); ok {
					if shape, ok := bind(in.Shape, dims); ok {
						s.inShapes[in.Name] = ort.OutputHint{DType: dt, Shape: shape}
					}
				}
				if p, ok := producer[in.Name]; ok {
					deps[p] = true
				}
			}
			for _, o := range st.Outputs {
				s.outs = append(s.outs, o.Name)
				producer[o.Name] = i
				if dt, ok := graph.ParseDType(o.DType); ok {
					if shape, ok := bind(o.Shape, dims); ok {
						s.hints[o.Name] = ort.OutputHint{DType: dt, Shape: shape}
					}
				}
			}
			s.deps = len(deps)
			for p := range deps {
				rt.stages[p].succ = append(rt.stages[p].succ, i)
			}
			if s.deps == 0 {
				rt.roots = append(rt.roots, s)
			}
			rt.stages = append(rt.stages, s)
			w.stages = append(w.stages, s)
		}
		for _, s := range rt.stages {
			sort.Ints(s.succ)
		}
		b.routes = append(b.routes, rt)
	}
	defaults := DefaultDevices(b.deviceNames())
	var missing []string
	for _, w := range b.workers {
		d, ok := given[w.name]
		if !ok {
			d = defaults[w.name]
			missing = append(missing, w.name)
		}
		w.threads, w.cpus = max(d.Threads, 1), d.CPUs
	}
	if len(given) > 0 && len(missing) > 0 {
		var names []string
		for n := range given {
			names = append(names, n)
		}
		sort.Strings(names)
		b.notes = append(b.notes, fmt.Sprintf("the devices given (%s) do not include %s: %s the default threads and cores",
			strings.Join(names, ", "), strings.Join(missing, ", "), map[bool]string{true: "it gets", false: "they get"}[len(missing) == 1]))
	}
	return man, nil
}

func (b *bench) deviceNames() []string {
	var n []string
	for _, w := range b.workers {
		n = append(n, w.name)
	}
	return n
}

// providerNote is the one line saying which providers the loaded library has, and what runs
// where when a stage asks for one it lacks.
func providerNote(workers []*worker) string {
	lib, _ := ort.LibraryPath()
	var have, missing []string
	for _, p := range []string{"CUDAExecutionProvider", "TensorrtExecutionProvider"} {
		if ok, _ := ortProvider(p); ok {
			have = append(have, p)
		} else {
			missing = append(missing, p)
		}
	}
	var fallback []string
	for _, w := range workers {
		w.cpuProvider = true
		if w.provider != "" && w.provider != "CPUExecutionProvider" {
			fallback = append(fallback, w.name+" ("+w.provider+")")
		}
	}
	msg := "providers: every stage runs on CPUExecutionProvider"
	if len(missing) > 0 {
		verb := "are"
		if len(missing) == 1 {
			verb = "is"
		}
		msg += fmt.Sprintf("; %s %s not in the loaded ONNX Runtime %s (%s)", strings.Join(missing, " and "), verb, ortVersion(), lib)
	}
	if len(have) > 0 {
		msg += fmt.Sprintf("; the library has %s, which this bench does not use yet", strings.Join(have, ", "))
	}
	if len(fallback) > 0 {
		msg += fmt.Sprintf("; the stages of %s run on the CPU provider instead, so their times do not measure that device", strings.Join(fallback, ", "))
	}
	return msg
}
