package familygen

import (
	"fmt"
	"math"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// fmap is a feature map NCHW (batch 1) by name.
type fmap struct {
	name    string
	c, h, w int64
}

// conv is a convolution with its batch norm folded into weight and bias, as the exporter
// writes an eval-mode Conv–BN pair; kernel (kh, kw), stride s, padding (ph, pw), groups g.
func (b *builder) conv(scope string, x fmap, cout, kh, kw, s, ph, pw, g int64) fmap {
	return b.convBias(scope, x, cout, kh, kw, s, ph, pw, g, true)
}

// convBias is conv with or without a bias (a depthwise convolution followed by a pointwise
// one, which carries the folded BN, has none).
func (b *builder) convBias(scope string, x fmap, cout, kh, kw, s, ph, pw, g int64, bias bool) fmap {
	fanIn := x.c / g * kh * kw
	ins := []string{x.name, b.weight(scope+".weight", float32(math.Sqrt(6/float64(fanIn))), 0, cout, x.c/g, kh, kw)}
	if bias {
		ins = append(ins, b.weight(scope+".bias", 0.05, 0, cout))
	}
	y := b.op(optype.Conv, "/"+scope, ins,
		attrInts("dilations", 1, 1), attrInt("group", g), attrInts("kernel_shape", kh, kw),
		attrInts("pads", ph, pw, ph, pw), attrInts("strides", s, s))
	return fmap{y, cout, (x.h+2*ph-kh)/s + 1, (x.w+2*pw-kw)/s + 1}
}

// convRelu is torchvision's BasicConv2d: Conv (BN folded) then ReLU.
func (b *builder) convRelu(scope string, x fmap, cout, kh, kw, s, ph, pw int64) fmap {
	y := b.conv(scope+".conv", x, cout, kh, kw, s, ph, pw, 1)
	return b.relu(scope, y)
}

func (b *builder) relu(scope string, x fmap) fmap {
	x.name = b.op(optype.Relu, "/"+scope, []string{x.name})
	return x
}

// batchNorm is an eval-mode BatchNormalization that precedes a convolution (so cannot be
// folded into one): DenseNet's norm1 and transition norms.
func (b *builder) batchNorm(scope string, x fmap) fmap {
	s := b.weight(scope+".weight", 0.2, 1, x.c)
	bias := b.weight(scope+".bias", 0.1, 0, x.c)
	mean := b.weight(scope+".running_mean", 0.1, 0, x.c)
	v := b.weight(scope+".running_var", 0.2, 1, x.c)
	x.name = b.op(optype.BatchNormalization, "/"+scope, []string{x.name, s, bias, mean, v},
		attrFloat("epsilon", 1e-5), attrFloat("momentum", 0.9))
	return x
}

func (b *builder) pool(op, scope string, x fmap, k, s, p int64, countPad bool) fmap {
	attrs := []*onnxpb.AttributeProto{attrInt("ceil_mode", 0), attrInts("kernel_shape", k, k),
		attrInts("pads", p, p, p, p), attrInts("strides", s, s)}
	if op == optype.AveragePool && countPad {
		attrs = append(attrs, attrInt("count_include_pad", 1))
	}
	y := b.op(op, "/"+scope, []string{x.name}, attrs...)
	return fmap{y, x.c, (x.h+2*p-k)/s + 1, (x.w+2*p-k)/s + 1}
}

func (b *builder) concat(scope string, xs []fmap) fmap {
	if len(xs) == 1 {
		return xs[0]
	}
	return b.concatAll(scope, xs)
}

// concatAll is a Concat along the channels, of one input too.
func (b *builder) concatAll(scope string, xs []fmap) fmap {
	names := make([]string, len(xs))
	c := int64(0)
	for i, x := range xs {
		names[i] = x.name
		c += x.c
	}
	y := b.op(optype.Concat, "/"+scope, names, attrInt("axis", 1))
	return fmap{y, c, xs[0].h, xs[0].w}
}

// head is global average pooling, Flatten and the classifier (Gemm) to classes logits,
// written as the graph output "output".
func (b *builder) head(scope string, x fmap, classes int64) {
	p := b.op(optype.GlobalAveragePool, "/"+scope, []string{x.name})
	f := b.op(optype.Flatten, "/"+scope, []string{p}, attrInt("axis", 1))
	w := b.weight(scope+".fc.weight", float32(math.Sqrt(3/float64(x.c))), 0, classes, x.c)
	bias := b.weight(scope+".fc.bias", 0.05, 0, classes)
	g := b.node(optype.Gemm, "/"+scope+"/fc", []string{f, w, bias}, 1,
		attrFloat("alpha", 1), attrFloat("beta", 1), attrInt("transB", 1))
	b.g.Node[len(b.g.Node)-1].Output[0] = "output"
	_ = g
	b.output("output", graph.Float, 1, classes)
}

func scope(parts ...any) string { return fmt.Sprint(parts...) }
