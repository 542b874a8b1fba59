package pipebench

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/feeds"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/verify"
	"github.com/onnxpart/onnxpart/verify/npy"
)

// Format is the format string of a Report (schema bench.v1).
const Format = "onnxpart.bench/v1"

// Defaults of Options.
const (
	DefaultRequests = 200
	DefaultWarmup   = 10
	// DrainTimeout bounds the wait for the requests in flight after ctx is cancelled.
	DrainTimeout = 10 * time.Second
	// inputSets is the number of distinct input sets used in turn.
	inputSets = 4
)

// Device says how a device of the plan runs: its ONNX Runtime intra-op threads and the
// logical CPUs its worker is pinned to (none: not pinned).
type Device struct {
	Name    string
	Threads int
	CPUs    []int
}

// Options control Run.
type Options struct {
	// Requests is the number of measured requests (default DefaultRequests, unless Duration
	// is set); Duration measures for that long instead.
	Requests int
	Duration time.Duration
	// Warmup is the number of requests run one at a time before measuring (default
	// DefaultWarmup; negative: none).
	Warmup int
	// InFlight caps the requests in the pipeline at once (default: the number of stages, all
	// routes together).
	InFlight int
	// Seed of the random inputs; Inputs gives real data for model inputs (name → .npy file).
	Seed   int64
	Inputs map[string]string
	// Dims binds symbolic dimensions the stages kept (default: the size the manifest
	// records, else verify.DefaultDim). A dim the model ties to others (a decoder's total =
	// past + seq) and Dims leaves out follows them rather than its recorded size.
	Dims map[string]int64
	// Names are the caller's names of these options, by field, for errors to name them
	// ("Dims": "--dim", "Inputs": "--input", "ModelPath": "--model"); without them errors
	// name the Go fields (Options.Dims["batch"]).
	Names diag.Names
	// ModelPath is the original model, for inputs made as verify makes them (default: the
	// manifest's model path; when it is missing, inputs are made from the stage files).
	ModelPath string
	// Devices gives threads and CPUs by device name; devices not listed get the defaults
	// (DefaultDevices).
	Devices []Device
	// NoOptimize runs the stages with ONNX Runtime's graph optimizations off.
	NoOptimize bool
	// Spin is how long an idle worker polls its queue before it sleeps (0: it sleeps at
	// once). A sleeping worker is woken by the kernel when its next input arrives, which
	// costs microseconds on an idle machine and up to a scheduler slice on a busy one, on
	// every hand-off of the pipeline; spinning trades CPU time for that latency, as ONNX
	// Runtime's own thread pools do.
	Spin time.Duration
	// Phase, when set, is told what the bench is doing ("loading", "warm-up", "measuring").
	Phase func(string)
}

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

// drive admits requests (total of them, or until deadline when total < 0) with at most
// inflight in the pipeline, calls done for each completion (n counts them from 1), and
// returns when every admitted request has completed, when a stage fails, or, after ctx is
// cancelled, when those in flight have drained (or DrainTimeout passed).
func (b *bench) drive(ctx context.Context, id *int, total int, deadline time.Time, inflight int, done func(*request, int)) (interrupted bool, err error) {
	admitted, completed := 0, 0
	stopAdmit := total == 0
	ctxDone := ctx.Done()
	var drain <-chan time.Time
	for {
		for !stopAdmit && admitted-completed < inflight {
			if total >= 0 && admitted >= total || !deadline.IsZero() && !time.Now().Before(deadline) {
				stopAdmit = true
				break
			}
			if err := b.admit(*id); err != nil {
				return interrupted, err
			}
			*id++
			admitted++
		}
		if total >= 0 && admitted >= total {
			stopAdmit = true
		}
		if stopAdmit && completed == admitted {
			return interrupted, nil
		}
		select {
		case r := <-b.done:
			completed++
			done(r, completed)
		case err := <-b.failed:
			return interrupted, err
		case <-ctxDone:
			interrupted, stopAdmit, ctxDone = true, true, nil
			drain = time.After(DrainTimeout)
		case <-drain:
			return true, nil
		}
	}
}

// admit starts request id on the next route.
func (b *bench) admit(id int) error {
	rt := b.pickRoute()
	r := &request{id: id, route: rt, admitted: time.Now(), pool: map[string]*ort.Tensor{},
		remaining: make([]int, len(rt.stages)), left: len(rt.stages)}
	feeds := b.feeds
	if rt.feeds != nil {
		feeds = rt.feeds
	}
	for k, v := range feeds[id%len(feeds)] {
		r.pool[k] = v
	}
	for i, s := range rt.stages {
		r.remaining[i] = s.deps
	}
	for _, s := range rt.roots {
		if err := b.enqueue(task{req: r, stage: s, ready: r.admitted}); err != nil {
			return err
		}
	}
	return nil
}

// pickRoute chooses routes in proportion to their weights (smooth weighted round robin).
func (b *bench) pickRoute() *routeRT {
	if len(b.routes) == 1 {
		return b.routes[0]
	}
	sum := 0
	var best *routeRT
	for _, r := range b.routes {
		r.credit += r.weight
		sum += r.weight
		if best == nil || r.credit > best.credit {
			best = r
		}
	}
	best.credit -= sum
	return best
}

// enqueue hands a ready task to its device. Queues hold every task the requests in flight
// can have at once, so this never waits; a full queue is a bug, reported rather than hung on.
func (b *bench) enqueue(t task) error {
	select {
	case t.stage.dev.queue <- t:
		return nil
	default:
		return fmt.Errorf("internal error: the queue of device %s is full", t.stage.dev.name)
	}
}

func (b *bench) fail(err error) {
	select {
	case b.failed <- err:
	default:
	}
}

// work is a device's worker: it pins its OS thread, loads its stages there and runs their
// tasks until the bench ends.
func (b *bench) work(w *worker, ready chan<- error) {
	// The thread stays locked and exits with the goroutine, so its pinning never reaches
	// another goroutine.
	runtime.LockOSThread()
	defer func() {
		for _, s := range w.stages {
			if s.bound != nil {
				s.bound.Close()
			}
			if s.sess != nil {
				s.sess.Close()
			}
		}
	}()
	if err := devices.PinThread(w.cpus); err != nil {
		ready <- fmt.Errorf("device %s: %w", w.name, err)
		return
	}
	for _, s := range w.stages {
		sess, err := ort.NewSession(s.path, s.ins, s.outs, ort.Options{Optimize: !b.opt.NoOptimize, Threads: w.threads})
		if err != nil {
			ready <- stageErr(s.route, s.index, s.st.File, w.name, -1, err)
			return
		}
		s.sess = sess
		if err := s.prepare(); err != nil {
			ready <- stageErr(s.route, s.index, s.st.File, w.name, -1, err)
			return
		}
	}
	ready <- nil
	for {
		t, ok := b.next(w)
		if !ok {
			return
		}
		if err := b.runTask(t); err != nil {
			b.fail(err)
			// Wait for the end: the bench stops at the first failure.
			<-b.ctx.Done()
			return
		}
	}
}

// next waits for the worker's next task; ok is false when the bench ends. With
// Options.Spin it polls the queue that long before it sleeps.
func (b *bench) next(w *worker) (task, bool) {
	if b.opt.Spin > 0 {
		until := time.Now().Add(b.opt.Spin)
		for time.Now().Before(until) {
			select {
			case t := <-w.queue:
				return t, true
			default:
			}
		}
	}
	select {
	case <-b.ctx.Done():
		return task{}, false
	case t := <-w.queue:
		return t, true
	}
}

func (b *bench) runTask(t task) error {
	s, r := t.stage, t.req
	in := make([]*ort.Tensor, len(s.ins))
	r.mu.Lock()
	for k, n := range s.ins {
		in[k] = r.pool[n]
	}
	r.mu.Unlock()
	c0 := threadCPU()
	start := time.Now()
	out, err := s.call(b, in)
	end := time.Now()
	c1 := threadCPU()
	if err != nil {
		return stageErr(s.route, s.index, s.st.File, s.dev.name, r.id, err)
	}
	s.recs = append(s.recs, record{req: r.id, ready: t.ready, start: start, end: end, cpu: c1 - c0})
	var next []*stageRT
	r.mu.Lock()
	for k, v := range out {
		r.pool[k] = v
		if s.bound != nil {
			r.owned = append(r.owned, v)
		}
	}
	for _, c := range s.succ {
		r.remaining[c]--
		if r.remaining[c] == 0 {
			next = append(next, r.route.stages[c])
		}
	}
	r.left--
	finished := r.left == 0
	r.mu.Unlock()
	for _, c := range next {
		if err := b.enqueue(task{req: r, stage: c, ready: end}); err != nil {
			return err
		}
	}
	if finished {
		r.done = end
		for _, t := range r.owned {
			b.bufs.put(t.Data)
		}
		r.pool, r.owned = nil, nil
		select {
		case b.done <- r:
		case <-b.ctx.Done():
		}
	}
	return nil
}

// prepare binds the stage's call to input buffers and preallocated outputs when every
// input's shape is known and none is a scalar, so that a run allocates nothing: the inputs
// are copied in, the outputs copied out to recycled buffers (what a deployment's I/O binding
// does). Otherwise the stage runs through Session.Run, which allocates its inputs' and
// outputs' copies on every call.
func (s *stageRT) prepare() error {
	feeds := map[string]*ort.Tensor{}
	for _, n := range s.ins {
		h, ok := s.inShapes[n]
		if !ok || len(h.Shape) == 0 {
			return nil
		}
		size, err := graph.ByteSize(h.DType, graph.ShapeOf(h.Shape...))
		if err != nil || size <= 0 {
			return nil
		}
		t := &ort.Tensor{DType: h.DType, Shape: h.Shape, Data: make([]byte, size)}
		feeds[n] = t
		s.inBufs = append(s.inBufs, t)
	}
	bd, err := s.sess.Prepare(feeds, s.hints)
	if err != nil {
		s.inBufs = nil
		return err
	}
	s.bound = bd
	return nil
}

// call runs the stage on inputs in (in the order of s.ins) and returns its outputs.
func (s *stageRT) call(b *bench, in []*ort.Tensor) (map[string]*ort.Tensor, error) {
	if s.bound == nil {
		feeds := make(map[string]*ort.Tensor, len(in))
		for k, n := range s.ins {
			feeds[n] = in[k]
		}
		return s.sess.Run(feeds, s.hints)
	}
	for k, t := range in {
		dst := s.inBufs[k]
		if t == nil || len(t.Data) != len(dst.Data) {
			return nil, fmt.Errorf("input %q: %d bytes, the stage takes %d", s.ins[k], len(t.Data), len(dst.Data))
		}
		copy(dst.Data, t.Data)
	}
	if err := s.bound.Run(); err != nil {
		return nil, err
	}
	out := make(map[string]*ort.Tensor, len(s.outs))
	for _, n := range s.outs {
		t, err := s.bound.Output(n)
		if err != nil {
			return nil, err
		}
		data := b.bufs.get(len(t.Data))
		copy(data, t.Data)
		out[n] = &ort.Tensor{DType: t.DType, Shape: t.Shape, Data: data}
	}
	return out, nil
}

// buffers recycles the byte slices of stage outputs by size, so that the pipeline's steady
// state allocates (and page-faults) nothing.
type buffers struct {
	mu   sync.Mutex
	free map[int][][]byte
}

func (p *buffers) get(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.free[n]; len(l) > 0 {
		b := l[len(l)-1]
		p.free[n] = l[:len(l)-1]
		return b
	}
	return make([]byte, n)
}

func (p *buffers) put(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free == nil {
		p.free = map[int][][]byte{}
	}
	p.free[len(b)] = append(p.free[len(b)], b)
}

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

// DefaultDevices gives the devices of a plan threads and CPUs when nothing else does: one
// device gets every core, unpinned (as `--devices cpu` plans it); several share the
// process's CPUs equally, each pinned to its own consecutive share (as `--devices Nxcpu`
// and `cpu:NxT` plan them), or, with more devices than CPUs, one thread each, unpinned.
func DefaultDevices(names []string) map[string]Device {
	out := map[string]Device{}
	cpus := devices.AllowedCPUs()
	if len(names) == 1 {
		out[names[0]] = Device{Name: names[0], Threads: len(cpus)}
		return out
	}
	per := len(cpus) / max(len(names), 1)
	for i, n := range names {
		if per < 1 {
			out[n] = Device{Name: n, Threads: 1}
			continue
		}
		out[n] = Device{Name: n, Threads: per, CPUs: append([]int(nil), cpus[i*per:(i+1)*per]...)}
	}
	return out
}

// DevicesFrom takes threads and CPUs from a resolved cluster (the --devices the plan was
// made with): host devices by their Threads and CPUs.
func DevicesFrom(c *profile.Cluster) []Device {
	var out []Device
	for _, d := range c.Devices {
		if d.Kind == profile.CPU {
			out = append(out, Device{Name: d.Name, Threads: max(d.Threads, 1), CPUs: d.CPUs})
		}
	}
	return out
}

// dims binds every symbolic dimension the stages kept. Dims the stage files fixed keep the
// manifest's sizes; --dim (Options.Dims) and the shapes of .npy inputs size the others.
// The sizes the manifest records for the rest, else verify.DefaultDim, are defaults only
// (ingest's DefaultDims): a dim the model ties to others (a decoder's total = past + seq)
// is derived from them instead, so that --dim past=0 alone runs a prefill. The ties are
// read from the original model when it is there (returned, for the inputs), else from the
// stage files. The derived dims are noted.
func (b *bench) dims(dir string, man *emit.Manifest) (map[string]int64, *ingest.Model, error) {
	sizes, err := feeds.Bind(man, feeds.Options{Inputs: b.opt.Inputs, Dims: b.opt.Dims, Names: b.opt.Names})
	if err != nil {
		return nil, nil, err
	}
	b.given = sizes.Given
	explicit, defaults := sizes.Split()

	modelPath := b.opt.ModelPath
	if modelPath == "" {
		modelPath = man.ModelFile(dir)
	}
	m, err := ingest.Load(modelPath, ingest.Options{Dims: explicit, DefaultDims: defaults})
	if err == nil && m.SHA256 == man.Model.SHA256 {
		b.derivedNote(m.DerivedNotes())
		return m.Dims(), m, nil
	}
	if b.opt.ModelPath != "" {
		if err != nil {
			return nil, nil, err
		}
		return nil, nil, diag.Input("%s is not the model the stages were cut from (sha256 differs)", b.opt.Names.Say("ModelPath", b.opt.ModelPath)).About(diag.Option, b.opt.Names.Name("ModelPath"))
	}
	// Without the original model, each stage file whose inputs carry a dim not sized yet
	// settles its dims, with the sizes settled so far.
	dims := map[string]int64{}
	for k, v := range explicit {
		dims[k] = v
	}
	var notes []string
	for i, st := range man.Stages {
		has := map[string]bool{}
		open := false
		for _, in := range st.Inputs {
			for _, d := range in.Shape {
				if d.Param != "" && !d.Known() {
					has[d.Param] = true
					_, sized := dims[d.Param]
					open = open || !sized
				}
			}
		}
		if !open {
			continue
		}
		given, def := map[string]int64{}, map[string]int64{}
		for k, v := range dims {
			if has[k] {
				given[k] = v
			}
		}
		for k, v := range defaults {
			if _, sized := dims[k]; !sized && has[k] {
				def[k] = v
			}
		}
		sm, err := ingest.Load(filepath.Join(dir, st.File), ingest.Options{Dims: given, DefaultDims: def})
		if err != nil {
			return nil, nil, fmt.Errorf("stage %d: %w", i, err)
		}
		for k, v := range sm.Dims() {
			if has[k] {
				dims[k] = v
			}
		}
		for _, n := range sm.DerivedNotes() {
			if !containsString(notes, n) {
				notes = append(notes, n)
			}
		}
	}
	for k, v := range defaults {
		if _, ok := dims[k]; !ok {
			dims[k] = v
		}
	}
	b.derivedNote(notes)
	return dims, nil, nil
}

// derivedNote notes the dims the model's ties derived (ingest's Model.DerivedNotes), once.
func (b *bench) derivedNote(notes []string) {
	if len(notes) == 0 {
		return
	}
	parts := make([]string, len(notes))
	for i, n := range notes {
		parts[i] = strings.TrimSuffix(n, " (derived)")
	}
	b.notes = append(b.notes, fmt.Sprintf("derived: %s (the model ties it to the other sizes)", strings.Join(parts, ", ")))
}

func containsString(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// bind returns the concrete shape of s with dims bound; ok is false when a dimension stays
// unknown.
// tileFeeds repeats every model input n times along its leading axis (the batch).
func tileFeeds(set map[string]*ort.Tensor, inputs []emit.TensorRef, n int) map[string]*ort.Tensor {
	out := map[string]*ort.Tensor{}
	for k, v := range set {
		out[k] = v
	}
	for _, in := range inputs {
		v := set[in.Name]
		if v == nil || len(v.Shape) == 0 {
			continue
		}
		t := &ort.Tensor{DType: v.DType, Shape: append([]int64{}, v.Shape...), Data: bytes.Repeat(v.Data, n)}
		t.Shape[0] *= int64(n)
		out[in.Name] = t
	}
	return out
}

func bind(s emit.Shape, dims map[string]int64) ([]int64, bool) {
	if s == nil {
		return nil, false
	}
	out := make([]int64, len(s))
	for i, d := range s {
		switch {
		case d.Known():
			out[i] = d.Value
		case d.Param != "" && dims[d.Param] > 0:
			out[i] = dims[d.Param]
		default:
			return nil, false
		}
	}
	return out, true
}

// makeFeeds makes inputSets input sets: real data where given, else random as verify makes
// them from the original model (orig, loaded at dims; or, when it is not there, from the
// stage files that read each input).
func (b *bench) makeFeeds(dir string, man *emit.Manifest, dims map[string]int64, orig *ingest.Model) error {
	given := map[string]*ort.Tensor{}
	for name, a := range b.given {
		given[name] = &ort.Tensor{DType: a.DType, Shape: a.Shape, Data: a.Data}
	}
	var graphs []*graph.Graph
	if orig != nil {
		graphs = []*graph.Graph{orig.Graph}
	} else {
		// Each model input from the first stage that reads it.
		loaded := map[int]bool{}
		for _, in := range man.Model.Inputs {
			for i, st := range man.Stages {
				reads := false
				for _, r := range st.Inputs {
					reads = reads || r.Name == in.Name
				}
				if !reads || loaded[i] {
					continue
				}
				loaded[i] = true
				// only the dims the stage's inputs carry: a dim the model derives (a
				// decoder's total = past + seq) may be absent from a later stage's inputs
				sd := map[string]int64{}
				for _, r := range st.Inputs {
					for _, d := range r.Shape {
						if v, ok := dims[d.Param]; ok && d.Param != "" {
							sd[d.Param] = v
						}
					}
				}
				m, err := ingest.Load(filepath.Join(dir, st.File), ingest.Options{Dims: sd})
				if err != nil {
					return fmt.Errorf("stage %d: %w", i, err)
				}
				graphs = append(graphs, m.Graph)
				break
			}
		}
	}
	for k := range inputSets {
		set := map[string]*ort.Tensor{}
		for _, g := range graphs {
			f, err := feeds.Random(g, b.opt.Seed+int64(k), verify.DefaultMaxTensorBytes, nil, b.opt.Names)
			if err != nil {
				return diag.Wrap(diag.KindInput, err)
			}
			for n, v := range f {
				if _, ok := set[n]; !ok {
					set[n] = v
				}
			}
		}
		for n, v := range given {
			set[n] = v
		}
		for _, r := range man.Model.Inputs {
			if set[r.Name] == nil {
				return diag.Input("no value for model input %q", r.Name).About(diag.Tensor, r.Name)
			}
		}
		b.feeds = append(b.feeds, set)
	}
	return nil
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
