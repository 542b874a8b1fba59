// Package verify checks that the stage files emit wrote compute what the model computed.
//
// What goes in: an output directory (manifest.json and the stage files, as package emit
// writes them), the original model the manifest names, and Options: seeded random inputs
// (RandomFeeds, InputRanges) or the user's .npy files (package verify/npy), dim sizes,
// graph optimizations on or off. What comes out: a Report with every model output's
// comparison (bit for bit, or the largest relative and absolute differences), or an error
// when something cannot be run; Check alone returns the manifest or an error listing the
// structural problems (a *diag.Error of kind input about the directory, one note per
// problem). Errors are *diag.Error (see Run for their kinds); MismatchOf turns a failed
// comparison into one of kind mismatch, whose *Mismatch cause holds the report.
//
// Check performs the structural checks (every input produced earlier or a graph input, no
// dangling names, topological order, typed boundaries, data files inside the directory and
// of the recorded sizes) without running anything.
//
// Run runs the original model and the chain of stages in ONNX Runtime on the same seeded
// (or user-supplied .npy) inputs and compares every model output: bit for bit with graph
// optimizations disabled, within a relative tolerance with them enabled (by the least
// precise float type an output is computed through: 1e-4 for float32, 1e-2 for float16,
// 8e-2 for bfloat16; integer outputs exact). Symbolic dimensions the stages kept are bound
// by the input files, Options.Dims, the size the plan bound them to, or DefaultDim (1); a
// dim the model ties to others (a decoder's total = past + seq) is derived from them, so
// --dim past=0 alone runs a prefill. A dim the plan bound and nothing else sized is run
// again at a second size (Report.OtherSizes). Models of 512 MiB of weights or more run in
// ONNX Runtime's low-memory mode, one session at a time. For float16 models the reference
// rounds the float16 tensors that cross stage boundaries, because ONNX Runtime's CPU
// provider computes float16 graphs in float32 between operators without float16 kernels and
// never rounds there (see Report.Reference); the difference to the unmodified model is
// reported as well. A batched plan's routes are verified each in its own directory.
//
// This is the package that loads ONNX Runtime (through internal/ort); emit, which writes
// the files, does not.
package verify
