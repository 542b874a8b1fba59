module github.com/onnxpart/onnxpart/examples

go 1.26.0

require github.com/onnxpart/onnxpart v0.0.0

require (
	github.com/x448/float16 v0.8.4 // indirect
	github.com/yalue/onnxruntime_go v1.27.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/onnxpart/onnxpart => ../
