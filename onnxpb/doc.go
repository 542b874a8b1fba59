// Package onnxpb holds the Go bindings generated from onnxpart's own proto2 schema of the
// ONNX model format (proto/onnx.proto, proto package onnxpart.onnx). The generated file is
// committed; `make proto` regenerates it. Do not edit onnx.pb.go by hand.
package onnxpb
