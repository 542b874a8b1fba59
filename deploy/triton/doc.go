// Package triton writes a Triton Inference Server model repository that serves the stage
// files emit wrote as one pipeline.
//
// What goes in: an *emit.Manifest and the directory holding its stage files. What comes
// out: a repository directory (Write; by default DIR/triton, written through
// emit.Options.Extras inside emit's atomic write) with one onnxruntime_onnx model per stage,
// pinned to its device's instance group, and an ensemble model wiring the stages by tensor
// name; or the config.pbtxt files alone (Models). A leading symbolic batch dim becomes
// max_batch_size with dynamic batching. A batched plan of several routes becomes one
// repository in the top directory (batched.go): every route's stages under unique names, an
// ensemble per route, and one ensemble that splits the planned batch among the routes and
// joins their outputs; Write in a route's directory writes nothing. Errors are *diag.Error of kind input: a manifest
// Triton cannot serve as it stands ("triton: …", about the stage or tensor), an existing
// repository without Force.
package triton
