package pipebench

import (
	"math"
	"sort"

	"github.com/onnxpart/onnxpart/emit"
)

// Report is what a bench measured, beside what the manifest predicted (JSON schema
// bench.v1). Times are in seconds; a ratio is measured ÷ predicted (null without a
// prediction).
type Report struct {
	Format     string `json:"format"`
	Dir        string `json:"dir"`
	Model      string `json:"model"`
	ORTVersion string `json:"onnxruntime_version"`
	Optimize   bool   `json:"optimize"`
	Objective  string `json:"objective"`
	Routes     int    `json:"route_count"`
	Stages     int    `json:"stages"`
	// Warmup requests ran one at a time; InFlight capped the measured phase.
	Warmup   int `json:"warmup"`
	InFlight int `json:"in_flight"`
	// SpinS is how long an idle worker polled its queue before sleeping (Options.Spin).
	SpinS float64 `json:"spin_s"`
	// Requests measured over Seconds (the window between the completion that filled the
	// pipeline and the last measured one).
	Requests    int     `json:"requests"`
	Seconds     float64 `json:"seconds"`
	Interrupted bool    `json:"interrupted"`
	// Throughput in inferences per second.
	Throughput Compared `json:"throughput"`
	// Latency of the measured requests (admission to last stage), with InFlight in flight.
	Latency Percentiles `json:"latency"`
	// LatencySingle is the latency of a request alone (the warm-up after its first
	// request), compared with the plan's latency (the sum of its stage times on the critical
	// path), which assumes no queueing.
	LatencySingle *Percentiles `json:"latency_alone"`
	LatencyVsPlan Compared     `json:"latency_vs_plan"`
	// Batch compares the time of one batch (its inputs ÷ the measured throughput) with the
	// batched plan's makespan; nil for unbatched plans.
	Batch   *BatchCompared `json:"batch,omitempty"`
	Devices []DeviceReport `json:"devices"`
	// StageTimes are per stage, per request.
	StageTimes []StageReport `json:"stage_times"`
	Notes      []string      `json:"notes"`
}

// Compared is a measured value beside its prediction.
type Compared struct {
	Measured float64  `json:"measured"`
	Planned  *float64 `json:"planned"`
	Ratio    *float64 `json:"ratio"`
}

func compared(measured float64, predicted float64) Compared {
	c := Compared{Measured: measured}
	if predicted > 0 && !math.IsInf(predicted, 0) && !math.IsNaN(predicted) {
		p := predicted
		c.Planned = &p
		if measured > 0 {
			r := measured / predicted
			c.Ratio = &r
		}
	}
	return c
}

// Percentiles summarise a sample of times.
type Percentiles struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	Min   float64 `json:"min"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// percentiles uses the nearest rank.
func percentiles(x []float64) Percentiles {
	p := Percentiles{Count: len(x)}
	if len(x) == 0 {
		return p
	}
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	rank := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	var sum float64
	for _, v := range s {
		sum += v
	}
	p.Mean, p.Min, p.Max = sum/float64(len(s)), s[0], s[len(s)-1]
	p.P50, p.P90, p.P99 = rank(0.5), rank(0.9), rank(0.99)
	return p
}

// BatchCompared is the time of one batch of a batched plan.
type BatchCompared struct {
	Inputs int      `json:"inputs"`
	TimeS  Compared `json:"time_s"`
}

// DeviceReport is one device worker.
type DeviceReport struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Threads  int    `json:"threads"`
	CPUs     []int  `json:"cpus"`
	Stages   int    `json:"stages"`
	// Utilization is the share of the window the device spent running its stages.
	Utilization float64 `json:"utilization"`
}

// StageReport is one stage's time per request.
type StageReport struct {
	Route  int    `json:"route"`
	Stage  int    `json:"stage"`
	Device string `json:"device"`
	File   string `json:"file"`
	Runs   int    `json:"runs"`
	// Busy is the mean wall time of the stage's ONNX Runtime call, against the stage's
	// predicted time; BusyP50 its median; CPU the mean CPU time of the worker's thread during
	// the call (less than Busy when other processes took the core).
	Busy    Compared `json:"busy"`
	BusyP50 float64  `json:"busy_p50_s"`
	CPU     float64  `json:"cpu_s"`
	// Wait is the time per request the stage does not run (the measured cycle, window ÷
	// requests of its route, less Busy), against the plan's (its bottleneck less the stage's
	// time): the pipeline's idle time at this stage, the queue before it included.
	Wait Compared `json:"wait"`
	// Queue is the mean time the stage's input waited, ready, for its device.
	Queue float64 `json:"queue_s"`
}

func newReport(dir string, man *emit.Manifest, b *bench) *Report {
	r := &Report{Format: Format, Dir: dir, Model: man.Model.Path, ORTVersion: ortVersion(), Optimize: !b.opt.NoOptimize,
		Objective: string(man.Objective), Routes: len(b.routes), Notes: []string{}, Devices: []DeviceReport{}, StageTimes: []StageReport{}}
	for _, rt := range b.routes {
		r.Stages += len(rt.stages)
	}
	return r
}

// finish fills the measured figures: measured holds the ids of the measured requests, lat
// their latencies, over window seconds.
func (r *Report) finish(b *bench, measured map[int]bool, lat []float64, window float64, n int) {
	man := b.routes[0].man
	r.Requests, r.Seconds = n, window
	tp := 0.0
	if n > 0 && window > 0 {
		tp = float64(n) / window
	}
	// Requests that carry a route's whole share count its inputs (see routeRT.perRequest).
	inputs, perReq := 0, false
	for _, rt := range b.routes {
		if rt.perRequest > 1 {
			perReq = true
		}
		for _, s := range rt.stages[:1] {
			for _, rec := range s.recs {
				if measured[rec.req] {
					inputs += max(rt.perRequest, 1)
				}
			}
		}
	}
	if perReq && window > 0 {
		tp = float64(inputs) / window
		r.Notes = append(r.Notes, "each request is one route's whole share of the batch, run as one batch per stage call as the plan priced it: throughput counts inputs, and latency is a share's")
	}
	batched := man.Batch != nil
	var predTP, predLat, predBott float64
	if batched {
		predTP = man.Batch.ThroughputPerS
	} else if man.Predicted != nil {
		predTP, predLat, predBott = man.Predicted.ThroughputPerS, man.Predicted.LatencyS, man.Predicted.BottleneckS
		if predBott <= 0 && predTP > 0 {
			predBott = 1 / predTP
		}
	}
	// A workload plan's figures are per request (every phase's calls); one run binds one
	// phase's dims, so it is compared with that phase's per-call figures, or with nothing.
	var phaseStage []float64
	workload := !batched && man.Predicted != nil && len(man.Predicted.Workload) > 0
	if workload {
		predTP, predLat, predBott = 0, 0, 0
		if p := phaseOf(man.Predicted.Workload, b.bound); p != nil {
			predTP, predLat, predBott, phaseStage = p.ThroughputPerS, p.LatencyS, p.BottleneckS, p.StageS
			r.Notes = append(r.Notes, "a workload plan: compared with its phase "+p.Name+"'s figures per call, whose dims this run binds")
		} else {
			r.Notes = append(r.Notes, "a workload plan's figures are per request of every phase; this run binds no phase's dims, so nothing is compared with the plan (bind a phase's dims to compare)")
		}
	}
	r.Throughput = compared(tp, predTP)
	r.Latency = percentiles(lat)
	single := 0.0
	if r.LatencySingle != nil {
		single = r.LatencySingle.P50
	}
	r.LatencyVsPlan = compared(single, predLat)
	if batched && man.Batch.Inputs > 0 {
		bt := 0.0
		if tp > 0 {
			bt = float64(man.Batch.Inputs) / tp
		}
		r.Batch = &BatchCompared{Inputs: man.Batch.Inputs, TimeS: compared(bt, man.Batch.MakespanS)}
		how := "taking requests in proportion to its inputs"
		if perReq {
			how = "taking its whole share of the batch per request, in turn"
		}
		r.Notes = append(r.Notes, "batched plan: every route runs, "+how+"; the plan's per-stage times are batch totals, so stages are compared by throughput and batch time only")
	}
	// Requests per route in the window.
	perRoute := map[int]int{}
	for _, rt := range b.routes {
		for _, s := range rt.stages[:1] {
			for _, rec := range s.recs {
				if measured[rec.req] {
					perRoute[rt.index]++
				}
			}
		}
	}
	busyOn := map[string]float64{}
	for _, rt := range b.routes {
		for _, s := range rt.stages {
			var busy, cpu, queue []float64
			for _, rec := range s.recs {
				if !measured[rec.req] {
					continue
				}
				busy = append(busy, rec.end.Sub(rec.start).Seconds())
				cpu = append(cpu, rec.cpu)
				queue = append(queue, rec.start.Sub(rec.ready).Seconds())
			}
			bp, cp, qp := percentiles(busy), percentiles(cpu), percentiles(queue)
			busyOn[s.dev.name] += bp.Mean * float64(bp.Count)
			pred := 0.0
			switch {
			case workload:
				if s.index < len(phaseStage) {
					pred = phaseStage[s.index]
				}
			case !batched && s.st.Predicted != nil:
				pred = s.st.Predicted.TotalS
			}
			wait := 0.0
			if k := perRoute[rt.index]; k > 0 && window > 0 {
				wait = math.Max(window/float64(k)-bp.Mean, 0)
			}
			predWait := 0.0
			if pred > 0 && predBott > 0 {
				predWait = predBott - pred
			}
			r.StageTimes = append(r.StageTimes, StageReport{Route: rt.index, Stage: s.index, Device: s.dev.name, File: s.st.File,
				Runs: bp.Count, Busy: compared(bp.Mean, pred), BusyP50: bp.P50, CPU: cp.Mean, Wait: compared(wait, predWait), Queue: qp.Mean})
		}
	}
	for _, w := range b.workers {
		d := DeviceReport{Name: w.name, Provider: "CPUExecutionProvider", Threads: w.threads, CPUs: w.cpus, Stages: len(w.stages)}
		if d.CPUs == nil {
			d.CPUs = []int{}
		}
		if window > 0 {
			d.Utilization = math.Min(busyOn[w.name]/window, 1)
		}
		r.Devices = append(r.Devices, d)
	}
	if n == 0 {
		r.Notes = append(r.Notes, "no request completed in the measured window")
	}
}

// phaseOf is the workload phase whose every dim the run binds to the same size (nil: none).
func phaseOf(phases []emit.PhasePrediction, dims map[string]int64) *emit.PhasePrediction {
	for i := range phases {
		p := &phases[i]
		match := len(p.Dims) > 0
		for k, v := range p.Dims {
			if dims[k] != v {
				match = false
			}
		}
		if match {
			return p
		}
	}
	return nil
}
