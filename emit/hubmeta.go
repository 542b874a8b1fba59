package emit

import "github.com/onnxpart/onnxpart/onnxpb"

// Model-hub conventions: a stage file says where it came from, so that a tool that finds it
// on its own (a model hub, a serving repository) can trace it back to its model. The
// source's doc strings, domain, model_version and metadata_props are carried over unchanged
// (Layout.stageModel); producer_name and producer_version become onnxpart's, and the
// source's are kept in metadata_props under these keys, beside onnxpart.source_model,
// onnxpart.source_sha256, onnxpart.stage and onnxpart.stages.
const (
	metaSourceProducer        = "onnxpart.source_producer_name"
	metaSourceProducerVersion = "onnxpart.source_producer_version"
)

// sourceProducer returns the metadata entries that keep the source's producer, leaving out
// empty ones.
func sourceProducer(src *onnxpb.ModelProto) [][2]string {
	var out [][2]string
	if v := src.GetProducerName(); v != "" {
		out = append(out, [2]string{metaSourceProducer, v})
	}
	if v := src.GetProducerVersion(); v != "" {
		out = append(out, [2]string{metaSourceProducerVersion, v})
	}
	return out
}
