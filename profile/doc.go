// Package profile is the cost model: it describes devices and predicts how long graph nodes,
// pipeline stages and transfers take on them. It has no runtime dependency: package devices
// resolves --devices into a Cluster (NVML, catalog, spec files, host CPU), and
// internal/measure measures in ONNX Runtime; both hand their results here as data.
//
// What goes in: a --devices value — "auto" (NVML discovery through go-nvml, falling back to
// the host CPU with a one-line reason), a list of built-in catalog devices ("4xH100-SXM",
// "a100-80g,t4,cpu") with a --link choice, or a YAML/JSON spec file for any cluster
// (asymmetric link matrices as in Moirai's Table III, per-device memory caps, per-op-type
// efficiencies) — and a graph.Graph from package ingest. Optionally, an ONNX Runtime
// profiling run of the model (MeasureORT, MeasureIO) to calibrate the host CPU.
//
// What comes out: a Cluster (Devices with memory, peak FLOP/s per precision, memory
// bandwidth, launch and per-call overheads, stage I/O and layout-conversion rates, host
// link, NVLink; a directional Links matrix with bandwidth and latency), every figure tagged
// with its Source (nvml, catalog, spec, measured, host, default); and a CostModel giving
// NodeTime (roofline per node and device, with efficiencies per op class), StageTime (a
// pipeline stage: its nodes, the call's overhead, its boundary tensors, fusions a cut breaks),
// KernelTime (a fused group) and TransferTime (bytes / bandwidth + latency along the widest
// route, host-staged where devices have no peer-to-peer path), also as plain arrays
// (CostTable) for the partition and schedule solvers.
//
// The host CPU: model, cores, ISA flags (AVX2, AVX-512, AMX) and RAM from the operating
// system; the fp32 peak from the ISA and the clock a chain of dependent adds runs at (the
// gorgonia-tensor GEMM microbenchmark is recorded beside it, see Host.Device for why it is
// not the peak); memory bandwidth from a copy microbenchmark; and a read sweep (one thread
// scanning working sets of 1 MiB to 256 MiB) that gives the last-level cache's capacity and
// read rate and the memory's. The microbenchmarks take a few seconds and are cached in
// ${XDG_CACHE_HOME:-$HOME/.cache}/onnxpart/host-<key>.json, keyed by CPU model, core count
// and architecture. Calibrate fits per-op-class efficiencies and overheads of a device from
// measured per-node times, so that the roofline matches ONNX Runtime on that device.
//
// LLM decoders (issue 32): a decode step multiplies one row by every weight matrix, so the
// roofline prices its weights at the rate of the memory level they live in (WeightRate: the
// read sweep at the model's weight bytes; the cache while they fit, memory beyond), reads a
// gather's rows rather than its table, widens fp16 weights where the runtime computes fp16
// in fp32 (a CPU), and charges a CPU for the kernels its runtime dispatches besides the
// fused ones: views and the shape arithmetic a model with symbolic dimensions runs at every
// call. An attention group is one fused pass on a GPU and its kernels one after another on a
// CPU. MeasureKernels measures the ONNX Runtime figures behind the CPU defaults; see
// docs/benchmarks-decoder.md for the terms, their sources and the validation.
//
// The package decides nothing about placement.
package profile
