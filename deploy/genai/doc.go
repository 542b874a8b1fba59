// Package genai writes genai_config.json, the configuration with which onnxruntime-genai
// runs the stage files emit wrote as one decoder (og.Model(dir), model type
// "decoder-pipeline"), step after step, keeping the KV cache between steps.
//
// What goes in: the loaded *ingest.Model, the *emit.Manifest of its stages and Options
// (--genai KEY=VALUE settings, parsed by Parse, and the Hugging Face config.json to read
// the values the graph does not hold). What comes out: genai_config.json in the output
// directory (Write, set as emit.Options.BeforeManifest so that it is written inside emit's
// atomic write) and manifest notes naming what it could not find or what genai will not
// run as cut. Config is the file's shape.
package genai
