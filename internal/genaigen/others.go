package genaigen

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/seeded"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// CNNConfig describes an int8 CNN in QDQ form: input [batch, 3, Size, Size] float32; per
// stage a 3×3 Conv (stride 1 for the first, 2 after) with per-channel int8 weights behind
// DequantizeLinear (axis 0) and float32 bias, Relu, and a QuantizeLinear/DequantizeLinear
// pair (uint8) on every activation; GlobalAveragePool, Flatten, and a MatMul by int8
// weights (per-tensor) plus bias to Classes logits.
type CNNConfig struct {
	Name     string
	Size     int
	Channels []int
	Classes  int
	// Float writes the float32 twin: the same dequantized weights, no Q/DQ pairs.
	Float bool
	Seed  uint64
}

// TinyCNN is the fast test's CNN.
var TinyCNN = CNNConfig{Name: "qdq-cnn", Size: 32, Channels: []int{16, 32, 32}, Classes: 10, Seed: 1}

// WriteCNN writes dir/<Name>.onnx and returns its path.
func WriteCNN(dir string, c CNNConfig) (string, error) {
	if c.Size < 4 || len(c.Channels) == 0 || c.Classes < 1 {
		return "", fmt.Errorf("genaigen: CNN size %d, channels %v, classes %d", c.Size, c.Channels, c.Classes)
	}
	b := newBuilder("qdq_cnn")
	b.g.Input = append(b.g.Input, valueInfo("input", graph.Float, "batch", 3, c.Size, c.Size))
	b.g.Output = append(b.g.Output, valueInfo("logits", graph.Float, "batch", c.Classes))
	// activation quantization parameters: uint8, scale 1/32 (input: zero point 128)
	scalar := func(name string, dt graph.DType, v float64) string {
		switch dt {
		case graph.Float:
			return b.initF32(name, []float32{float32(v)})
		default:
			return b.init(name, dt, []byte{byte(int8(v))})
		}
	}
	qdq := func(name, x string, zp int, shape dims) string {
		if c.Float {
			return x
		}
		s := scalar(name+"_scale", graph.Float, 1.0/32)
		z := scalar(name+"_zero_point", graph.Uint8, float64(zp))
		q := b.op("QuantizeLinear", name+"_QuantizeLinear", []string{x, s, z}, graph.Uint8, shape)
		return b.op("DequantizeLinear", name+"_DequantizeLinear", []string{q, s, z}, graph.Float, shape)
	}
	// weight returns w's dequantized form: DequantizeLinear of int8 values, per channel on
	// axis 0 when perChannel, or the float32 twin's initializer.
	weight := func(name string, n, per int, wdims []int64, perChannel bool) string {
		w := seeded.Uniform(c.Seed, name, n*per, float32(math.Sqrt(3/float64(per))))
		nch := 1
		if perChannel {
			nch = n
		}
		q := make([]byte, n*per)
		scales := make([]float32, nch)
		deq := make([]float32, n*per)
		for ch := range nch {
			lo, hi := ch*per, (ch+1)*per
			if !perChannel {
				lo, hi = 0, n*per
			}
			var amax float32
			for i := lo; i < hi; i++ {
				amax = max(amax, float32(math.Abs(float64(w[i]))))
			}
			s := amax / 127
			scales[ch] = s
			for i := lo; i < hi; i++ {
				v := int8(min(max(math.Round(float64(w[i]/s)), -127), 127))
				q[i] = byte(v)
				deq[i] = float32(v) * s
			}
		}
		if c.Float {
			return b.initF32(name, deq, wdims...)
		}
		qi := b.init(name+"_quantized", graph.Int8, q, wdims...)
		var si, zi string
		var attrs []*onnxpb.AttributeProto
		if perChannel {
			si = b.initF32(name+"_scale", scales, int64(n))
			zi = b.init(name+"_zero_point", graph.Int8, make([]byte, n), int64(n))
			attrs = append(attrs, attrInt("axis", 0))
		} else {
			si = b.initF32(name+"_scale", scales)
			zi = b.init(name+"_zero_point", graph.Int8, []byte{0})
		}
		var wd dims
		for _, d := range wdims {
			wd = append(wd, int(d))
		}
		return b.op("DequantizeLinear", name+"_DequantizeLinear", []string{qi, si, zi}, graph.Float, wd, attrs...)
	}
	size := c.Size
	x := qdq("input", "input", 128, dims{"batch", 3, size, size})
	in := 3
	for i, ch := range c.Channels {
		stride := 1
		if i > 0 {
			stride = 2
			size = (size-1)/2 + 1
		}
		name := fmt.Sprintf("conv%d", i)
		w := weight(name+".weight", ch, in*9, []int64{int64(ch), int64(in), 3, 3}, true)
		bias := b.initF32(name+".bias", seeded.Uniform(c.Seed, name+".bias", ch, 0.1), int64(ch))
		shape := dims{"batch", ch, size, size}
		y := b.op("Conv", "/"+name+"/Conv", []string{x, w, bias}, graph.Float, shape,
			attrInts("kernel_shape", 3, 3), attrInts("pads", 1, 1, 1, 1), attrInts("strides", int64(stride), int64(stride)))
		y = b.op("Relu", "/"+name+"/Relu", []string{y}, graph.Float, shape)
		x = qdq("/"+name+"/Relu_output_0", y, 0, shape)
		in = ch
	}
	x = b.op("GlobalAveragePool", "/pool/GlobalAveragePool", []string{x}, graph.Float, dims{"batch", in, 1, 1})
	x = b.op("Flatten", "/flatten/Flatten", []string{x}, graph.Float, dims{"batch", in}, attrInt("axis", 1))
	x = qdq("/flatten/Flatten_output_0", x, 0, dims{"batch", in})
	w := weight("fc.weight", in, c.Classes, []int64{int64(in), int64(c.Classes)}, false)
	y := b.op("MatMul", "/fc/MatMul", []string{x, w}, graph.Float, dims{"batch", c.Classes})
	b.op("Add", "/fc/Add", []string{y, b.initF32("fc.bias", seeded.Uniform(c.Seed, "fc.bias", c.Classes, 0.1), int64(c.Classes))}, graph.Float, dims{"batch", c.Classes})
	last := b.g.Node[len(b.g.Node)-1]
	last.Output[0] = "logits"
	b.vi = b.vi[:len(b.vi)-1]
	data, err := b.model("onnxruntime.quantization (genaigen)", 21, true)
	if err != nil {
		return "", err
	}
	name := c.Name
	if name == "" {
		name = "qdq-cnn"
	}
	p := filepath.Join(dir, name+".onnx")
	return p, os.WriteFile(p, data, 0o644)
}

// EncoderConfig describes a BERT-style encoder in the form ORT's transformer optimizer
// writes: inputs input_ids, segment_ids and input_mask (int32 [batch, sequence]);
// EmbedLayerNormalization (word, position and segment embeddings, LayerNorm, mask_index);
// per layer Attention (packed QKV weights [H, 3H] and bias, mask_index), the output
// projection's MatMul and SkipLayerNormalization (residual, bias), the FFN's MatMul,
// FastGelu with bias (or BiasGelu), MatMul and SkipLayerNormalization; output
// last_hidden_state [batch, sequence, Hidden].
type EncoderConfig struct {
	Name                                       string
	Layers, Hidden, Heads, Intermediate, Vocab int
	MaxPositions                               int
	// BiasGelu writes BiasGelu (erf GELU) instead of FastGelu (tanh approximation).
	BiasGelu bool
	Seed     uint64
}

// TinyEncoder is the fast test's encoder.
var TinyEncoder = EncoderConfig{Name: "bert-opt", Layers: 2, Hidden: 64, Heads: 4, Intermediate: 256, Vocab: 512, MaxPositions: 128, Seed: 1}

// WriteEncoder writes dir/<Name>.onnx and returns its path.
func WriteEncoder(dir string, c EncoderConfig) (string, error) {
	if c.Layers < 1 || c.Hidden < 1 || c.Heads < 1 || c.Hidden%c.Heads != 0 || c.Intermediate < 1 || c.Vocab < 1 || c.MaxPositions < 1 {
		return "", fmt.Errorf("genaigen: encoder %+v", c)
	}
	b := newBuilder("bert_opt")
	H, I := c.Hidden, c.Intermediate
	for _, in := range []string{"input_ids", "segment_ids", "input_mask"} {
		b.g.Input = append(b.g.Input, valueInfo(in, graph.Int32, "batch", "sequence"))
	}
	b.g.Output = append(b.g.Output, valueInfo("last_hidden_state", graph.Float, "batch", "sequence", H))
	w := func(name string, fanIn int, shape ...int64) string {
		n := 1
		for _, d := range shape {
			n *= int(d)
		}
		scale := float32(0.1)
		if fanIn > 0 {
			scale = float32(math.Sqrt(3 / float64(fanIn)))
		}
		return b.initF32(name, seeded.Uniform(c.Seed, name, n, scale), shape...)
	}
	gamma := func(name string) string {
		v := seeded.Uniform(c.Seed, name, H, 0.1)
		for i := range v {
			v[i]++
		}
		return b.initF32(name, v, int64(H))
	}
	hs := dims{"batch", "sequence", H}
	eps := attrFloat("epsilon", 1e-12)
	outs := b.node(msDomain, "EmbedLayerNormalization", "EmbedLayerNormalization_0",
		[]string{"input_ids", "segment_ids", w("embeddings.word_embeddings.weight", 0, int64(c.Vocab), int64(H)),
			w("embeddings.position_embeddings.weight", 0, int64(c.MaxPositions), int64(H)),
			w("embeddings.token_type_embeddings.weight", 0, 2, int64(H)),
			gamma("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias", 0, int64(H)), "input_mask"},
		[]out{{name: "embed_output", dt: graph.Float, shape: hs}, {name: "mask_index", dt: graph.Int32, shape: dims{"batch"}}}, eps)
	x := outs[0]
	for i := range c.Layers {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		a := b.ms("Attention", fmt.Sprintf("Attention_%d", i), []string{x, w(p+"attention.qkv.weight", H, int64(H), int64(3*H)),
			w(p+"attention.qkv.bias", 0, int64(3*H)), "mask_index"}, graph.Float, hs, attrInt("num_heads", int64(c.Heads)))
		o := b.op("MatMul", fmt.Sprintf("/encoder/layer.%d/attention/output/dense/MatMul", i), []string{a, w(p+"attention.output.dense.weight", H, int64(H), int64(H))}, graph.Float, hs)
		y := b.node(msDomain, "SkipLayerNormalization", fmt.Sprintf("SkipLayerNorm_AddBias_%d", 2*i), []string{o, x,
			gamma(p + "attention.output.LayerNorm.weight"), w(p+"attention.output.LayerNorm.bias", 0, int64(H)), w(p+"attention.output.dense.bias", 0, int64(H))},
			[]out{{dt: graph.Float, shape: hs}}, eps)[0]
		is := dims{"batch", "sequence", I}
		f := b.op("MatMul", fmt.Sprintf("/encoder/layer.%d/intermediate/dense/MatMul", i), []string{y, w(p+"intermediate.dense.weight", H, int64(H), int64(I))}, graph.Float, is)
		fb := w(p+"intermediate.dense.bias", 0, int64(I))
		if c.BiasGelu {
			f = b.ms("BiasGelu", fmt.Sprintf("BiasGelu_%d", i), []string{f, fb}, graph.Float, is)
		} else {
			f = b.ms("FastGelu", fmt.Sprintf("FastGelu_AddBias_%d", i), []string{f, fb}, graph.Float, is)
		}
		f = b.op("MatMul", fmt.Sprintf("/encoder/layer.%d/output/dense/MatMul", i), []string{f, w(p+"output.dense.weight", I, int64(I), int64(H))}, graph.Float, hs)
		x = b.node(msDomain, "SkipLayerNormalization", fmt.Sprintf("SkipLayerNorm_AddBias_%d", 2*i+1), []string{f, y,
			gamma(p + "output.LayerNorm.weight"), w(p+"output.LayerNorm.bias", 0, int64(H)), w(p+"output.dense.bias", 0, int64(H))},
			[]out{{dt: graph.Float, shape: hs}}, eps)[0]
	}
	last := b.g.Node[len(b.g.Node)-1]
	last.Output[0] = "last_hidden_state"
	b.vi = b.vi[:len(b.vi)-1]
	data, err := b.model("onnxruntime.transformers.optimizer (genaigen)", 17, true)
	if err != nil {
		return "", err
	}
	name := c.Name
	if name == "" {
		name = "bert-opt"
	}
	p := filepath.Join(dir, name+".onnx")
	return p, os.WriteFile(p, data, 0o644)
}
