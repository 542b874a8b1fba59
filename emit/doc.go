// Package emit turns a stage assignment of an ONNX model into runnable stage models and
// writes them with a manifest. It only writes: verify checks in ONNX Runtime that the chain
// of stages computes what the model computed, report renders report.html, deploy/triton and
// deploy/genai write serving configurations; emit itself never loads ONNX Runtime.
//
// What goes in: an *ingest.Model (decoded protobuf plus graph.Graph; never modified) and an
// Assignment giving a stage label to every node (from a planner, or from the manual split
// helpers CutAfter, EqualFLOPs and ReadAssignment). What comes out: a directory holding
// stage<i>.onnx (+ stage<i>.onnx.data when weights are stored externally) for every stage
// and manifest.json (format onnxpart.manifest/v1, see Manifest; its JSON Schema is
// emit/schema's manifest.v1), written atomically.
//
// Rules the stage models follow:
//
//   - Inputs are every tensor a stage reads and does not produce: graph inputs, outputs of
//     earlier stages, and outer-scope names captured by If/Loop/Scan bodies. Outputs are the
//     tensors a later stage or the model's outputs need; a tensor read by several later
//     stages is produced once and sent to each (one Transfer per receiving stage).
//   - Weights a stage reads are copied into it; a weight read by several stages is copied into
//     each and listed under duplicated_weights.
//   - Nodes computed only from weights and constants (graph.Node.Static: Constant nodes,
//     Sigmoid(weight), shape arithmetic on constants) go with their consumers: they are
//     emitted in every stage that reads them, whatever stage the assignment gave them.
//     Shape-only nodes (Shape/Size of an activation and arithmetic on the result) are
//     recomputed in a consuming stage when that stage holds the activation anyway, and
//     transferred otherwise.
//   - Stage labels need not be dense or in pipeline order: the stage graph is ordered
//     topologically (ties: smaller label first) and renumbered 0..k-1. An assignment whose
//     stage graph has a cycle is refused with graph.StageCycle's error (kind input) naming
//     the tensors that close it. A label left with no node of its own (all its nodes were weight-only
//     and went with their consumers) is dropped, with a note in the manifest.
//   - Boundary tensors carry their element type and onnxpart's inferred shape (symbolic
//     dimensions as dim_param; an unknown rank leaves the shape out, with a note). Dims the
//     model was loaded with bound (--dim) stay symbolic in the stage files, which then serve
//     any size; the bound sizes only size costs and checks (Options.FreezeDims writes them
//     in instead). Nodes
//     keep the source's order; ir_version, opset_import, the model-local functions used,
//     doc strings, domain, model_version and metadata_props are carried over.
//   - Provenance (model-hub conventions): producer_name is "onnxpart" and producer_version
//     Options.Producer; metadata_props gain onnxpart.source_model (the source's file name),
//     onnxpart.source_sha256, onnxpart.source_producer_name and
//     onnxpart.source_producer_version (the source's producer, when it names one),
//     onnxpart.stage (the stage index) and onnxpart.stages (the stage count), so that a
//     stage file found on its own can be traced back to its model.
//   - Weights are written as external data (stage<i>.onnx.data, relative location) where
//     the source stored them externally, or when a stage would not fit protobuf's 2 GiB limit.
//
// Besides the stage files, a directory can get more files inside the same atomic write:
// Options.Extras is called after the manifest (report.html from package report, a Triton
// model repository from deploy/triton), Options.BeforeManifest before it
// (genai_config.json from deploy/genai, whose notes the manifest carries). When Force
// replaces a previous output, those entries count as onnxpart's own.
//
// Errors are *diag.Error: a --cut that cannot be applied or a stage count the model does not
// allow is kind usage (about the tensor; a *StageCount cause keeps the counts); a bad
// assignment, a cyclic stage graph and an output directory that cannot be written, exists or
// holds a file onnxpart did not write (a *ForeignFile cause names it) are kind input.
//
// The JSON Schemas of every machine-readable output (the manifest's among them) are in
// emit/schema, where the manifest's format has been published since its first version.
package emit
