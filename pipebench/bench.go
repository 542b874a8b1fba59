package pipebench

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/verify/npy"
)

// stageErr is a stage that failed at run time (request ≥ 0) or could not be loaded (request
// -1): a *diag.Error of kind input about the stage, naming its file and device and the
// request, wrapping ONNX Runtime's error. route is 0 unless the plan is batched.
func stageErr(route, stage int, file, device string, request int, err error) *diag.Error {
	where := fmt.Sprintf("stage %d (%s on %s)", stage, file, device)
	if route > 0 {
		where = fmt.Sprintf("route %d %s", route, where)
	}
	var e *diag.Error
	if request < 0 {
		e = diag.Input("%s could not be loaded: %w", where, err)
	} else {
		e = diag.Input("%s failed at run time on request %d: %w", where, request, err)
	}
	return e.About(diag.Stage, strconv.Itoa(stage))
}

// record is one run of a stage.
type record struct {
	req               int
	ready, start, end time.Time
	cpu               float64
}

type stageRT struct {
	route, index int
	st           *emit.Stage
	path         string
	dev          *worker
	sess         *ort.Session
	ins, outs    []string
	hints        map[string]ort.OutputHint
	inShapes     map[string]ort.OutputHint // bound input shapes (where known)
	deps         int                       // stages of the route producing an input
	succ         []int                     // stages of the route consuming an output
	recs         []record
	// bound is the stage's call prepared once over inBufs (nil: every input's shape is not
	// known, or one is a scalar; the stage then runs through Session.Run).
	bound  *ort.Bound
	inBufs []*ort.Tensor
}

type routeRT struct {
	index  int
	dir    string
	man    *emit.Manifest
	stages []*stageRT
	roots  []*stageRT
	weight int
	credit int // smooth weighted round robin
	// perRequest is the inputs one request carries: 1, or, for a batched plan whose stage
	// files take the batch (emit.Batch.Dim), the route's whole share, which its stage calls
	// run as one batch as the plan priced them; feeds are then the route's own.
	perRequest int
	feeds      []map[string]*ort.Tensor
}

type request struct {
	id        int
	route     *routeRT
	admitted  time.Time
	done      time.Time
	mu        sync.Mutex
	pool      map[string]*ort.Tensor
	owned     []*ort.Tensor // tensors of pool over recycled buffers
	remaining []int
	left      int
}

type task struct {
	req   *request
	stage *stageRT
	ready time.Time
}

type worker struct {
	name, provider string
	threads        int
	cpus           []int
	queue          chan task
	stages         []*stageRT
	cpuProvider    bool // the stages run on the CPU provider
}

type bench struct {
	opt     Options
	routes  []*routeRT
	workers []*worker
	feeds   []map[string]*ort.Tensor
	given   map[string]*npy.Array // the input files, by model input (feeds.Sizes.Given)
	done    chan *request
	failed  chan error
	ctx     context.Context // the workers' context
	notes   []string
	bound   map[string]int64 // the dims the run binds (feeds and shapes)
	bufs    buffers
	nextRt  int
}

func (b *bench) phase(s string) {
	if b.opt.Phase != nil {
		b.opt.Phase(s)
	}
}

// Run benchmarks the stage files in dir (see the package documentation).
func Run(ctx context.Context, dir string, opt Options) (*Report, error) {
	if opt.Requests < 0 || opt.Duration < 0 || opt.InFlight < 0 {
		return nil, diag.Input("requests, duration and in-flight cap must not be negative")
	}
	if opt.Requests == 0 && opt.Duration == 0 {
		opt.Requests = DefaultRequests
	}
	if opt.Warmup == 0 {
		opt.Warmup = DefaultWarmup
	}
	if opt.Warmup < 0 {
		opt.Warmup = 0
	}
	if err := ort.Init(); err != nil {
		return nil, err
	}
	b := &bench{opt: opt}
	man, err := b.load(dir)
	if err != nil {
		return nil, err
	}
	rep := newReport(dir, man, b)
	nstages := 0
	for _, r := range b.routes {
		nstages += len(r.stages)
	}
	if b.opt.InFlight == 0 {
		b.opt.InFlight = nstages
	}
	rep.InFlight, rep.Warmup, rep.SpinS = b.opt.InFlight, b.opt.Warmup, b.opt.Spin.Seconds()
	rep.Notes = append(rep.Notes, providerNote(b.workers))
	rep.Notes = append(rep.Notes, b.notes...)

	// The workers: one per device, on its own pinned OS thread, with its stages' sessions.
	// Each holds a P of the Go scheduler while it runs a stage (a cgo call gives its P up
	// only when the runtime's monitor takes it, up to milliseconds later), so the goroutine
	// that admits requests and collects completions gets Ps of its own: otherwise it waits
	// behind the workers on every hand-off.
	if want := len(b.workers) + 2; runtime.GOMAXPROCS(0) < want {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(want))
	}
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ctx = wctx
	b.done = make(chan *request, b.opt.InFlight+1)
	b.failed = make(chan error, len(b.workers)+1)
	maxOn := 1
	for _, w := range b.workers {
		maxOn = max(maxOn, len(w.stages))
	}
	var wg sync.WaitGroup
	ready := make(chan error, len(b.workers))
	b.phase("loading the stages")
	for _, w := range b.workers {
		w.queue = make(chan task, b.opt.InFlight*maxOn+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.work(w, ready)
		}()
	}
	stop := func() {
		cancel()
		wg.Wait()
	}
	var loadErr error
	for range b.workers {
		if err := <-ready; err != nil && loadErr == nil {
			loadErr = err
		}
	}
	if loadErr != nil {
		stop()
		return nil, loadErr
	}
	if err := ctx.Err(); err != nil {
		stop()
		rep.Interrupted = true
		rep.Notes = append(rep.Notes, "interrupted while loading: nothing was measured")
		return rep, nil
	}

	// Warm-up, one request at a time.
	b.phase("warm-up")
	var single []float64
	id := 0
	interrupted, err := b.drive(ctx, &id, b.opt.Warmup, time.Time{}, 1, func(r *request, n int) {
		if n > 1 {
			single = append(single, r.done.Sub(r.admitted).Seconds())
		}
	})
	if err != nil {
		stop()
		return nil, err
	}
	if len(single) > 0 {
		p := percentiles(single)
		rep.LatencySingle = &p
	}
	if interrupted {
		stop()
		rep.Interrupted = true
		rep.finish(b, nil, nil, 0, 0)
		return rep, nil
	}

	// The measured phase.
	b.phase("measuring")
	fill := b.opt.InFlight
	total := -1
	if opt.Duration == 0 {
		total = fill + b.opt.Requests + b.opt.InFlight
	}
	var tStart, tEnd time.Time
	var deadline time.Time
	measured := map[int]bool{}
	var lat []float64
	begin := time.Now()
	if opt.Duration > 0 {
		deadline = begin.Add(opt.Duration)
	}
	tStart = begin
	interrupted, err = b.drive(ctx, &id, total, deadline, b.opt.InFlight, func(r *request, n int) {
		switch {
		case n == fill:
			tStart = r.done
		case n > fill:
			if opt.Duration > 0 && r.done.After(deadline) {
				return
			}
			if opt.Duration == 0 && n > fill+b.opt.Requests {
				return
			}
			measured[r.id] = true
			lat = append(lat, r.done.Sub(r.admitted).Seconds())
			tEnd = r.done
		}
	})
	stop()
	if err != nil {
		return nil, err
	}
	rep.Interrupted = interrupted
	rep.finish(b, measured, lat, tEnd.Sub(tStart).Seconds(), len(measured))
	return rep, nil
}
