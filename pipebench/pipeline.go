package pipebench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ort"
)

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
