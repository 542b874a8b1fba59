// Package measure measures models and calls in ONNX Runtime on this machine: a model's
// profile attributed to its nodes (MeasureORT), the fixed and per-byte costs of a call and of
// layout conversions (MeasureIO), kernel timings behind the CPU defaults (MeasureKernels),
// and the host CPU's calibration for `--costs measured` (CalibrateHost). What it measures is
// data for the cost model in package profile (Measurement, Calibration).
package measure
