// Package devices turns a --devices value into a profile.Cluster.
//
// The value is "auto" (NVML discovery through go-nvml, falling back to the host CPU with a
// one-line reason), a list of built-in catalog devices ("4xH100-SXM", "a100-80g,t4,cpu")
// with a --link choice, the host CPU split into devices ("cpu:2x1"), or a YAML/JSON spec file
// for any cluster (asymmetric link matrices, per-device memory caps, per-op-type
// efficiencies). The host CPU is probed here: model, cores, ISA flags and RAM from the
// operating system, and microbenchmarks (cached under the user's cache directory) for its
// peak, memory bandwidth and read sweep.
//
// The cost model is package profile; measurements in ONNX Runtime are internal/measure.
// The planner imports neither this package nor that one: the command resolves devices and
// hands the cluster to the planner as data.
package devices
