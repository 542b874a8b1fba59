// Package pipebench runs a plan's stage files as a real pipeline in ONNX Runtime and
// measures it against the plan's prediction.
//
// What goes in: a directory written by the planner or `onnxpart split` (stage files and
// manifest.json; for a batched plan, the route directories its manifest lists) and Options.
// What comes out: a Report with the measured throughput, latency percentiles and each
// stage's busy and waiting time, each beside the manifest's prediction and their ratio.
//
// How it runs, as a deployment would:
//
//   - one ONNX Runtime session per stage file, with the stage's execution provider and its
//     device's thread count, graph optimizations on (as deployed; Options.NoOptimize turns
//     them off);
//   - one worker per device: a goroutine on a locked OS thread pinned to the device's CPUs
//     (profile.Device.CPUs, e.g. `--devices cpu:2x1`), which creates the sessions of its
//     stages there (so ONNX Runtime's own pool threads inherit the pinning) and runs them;
//     stages that share a device run in turn, in the order their inputs became ready;
//   - each stage's call is bound once to input buffers and preallocated outputs (ONNX
//     Runtime's I/O binding; ort.Session.Prepare): a run copies its inputs in and its outputs
//     out to buffers recycled between requests, so the steady state allocates nothing (fresh
//     buffers of a few hundred KiB per call cost more in page faults than small stages take);
//   - a stage becomes ready for a request when every stage producing one of its inputs has
//     run; its task then goes to its device's queue. Queues are bounded: at most
//     Options.InFlight requests are in the pipeline at once, so no queue can fill;
//   - the dispatcher (admission, completions) runs beside the workers: Run raises GOMAXPROCS to
//     the number of workers + 2 while it runs, so that a worker busy in ONNX Runtime never holds
//     the only P the dispatcher could run on;
//   - a batched plan runs every route at once on the shared device workers, each route
//     taking requests in proportion to the inputs the plan gives it.
//
// Phases: Options.Warmup requests one at a time (the first loads caches; the others give the
// latency of a lone request, which is what the plan's latency predicts), then the measured
// phase with Options.InFlight requests in flight: the first InFlight completions fill the
// pipeline and are not counted, then Options.Requests completions (or as many as complete in
// Options.Duration) are measured, while as many more requests keep the pipeline full behind
// them.
//
// Inputs are random and seeded as `onnxpart verify` makes them (verify.RandomFeeds; the two
// share one maker and one binding of the dims), from the original model (four input sets,
// seeds Seed … Seed+3, used in turn), or real data from .npy files (Options.Inputs).
//
// Failure: a stage whose run fails stops the whole bench at once; Run returns a *diag.Error
// about the stage, naming its file, its device and the request (wrapping ONNX Runtime's
// error), and every worker and queue is released (no goroutine is left waiting). Cancelling
// ctx (Ctrl-C) stops admitting requests, lets those in flight finish (for up to DrainTimeout)
// and returns what was measured so far with Report.Interrupted set.
package pipebench
