package familygen

import (
	"fmt"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
)

// DenseNet is torchvision's DenseNet (Huang et al., CVPR 2017) as exported in eval mode:
// every layer of a dense block concatenates the block's input and all earlier layers'
// outputs (one Concat per layer), then BN–ReLU–Conv1×1 (its second BN folded)–ReLU–Conv3×3;
// transitions are BN–ReLU–Conv1×1–AvgPool 2×2, halving the channels.
type DenseNet struct {
	Blocks  []int // layers per dense block (DenseNet-121: 6, 12, 24, 16)
	Growth  int64 // channels each layer adds (DenseNet-121: 32)
	Init    int64 // channels of the stem (DenseNet-121: 64)
	BNSize  int64 // bottleneck width in multiples of Growth (4)
	Image   int64 // input height and width (224)
	Classes int64
}

func (d DenseNet) build(b *builder) (int64, error) {
	if len(d.Blocks) == 0 || d.Growth < 1 || d.Init < 1 || d.BNSize < 1 || d.Image < 32 || d.Classes < 1 {
		return 0, fmt.Errorf("familygen: densenet needs blocks, growth, init, bn size ≥ 1, image ≥ 32 and classes (got %+v)", d)
	}
	x := fmap{b.input("input", graph.Float, 1, 3, d.Image, d.Image), 3, d.Image, d.Image}
	x = b.relu("features/relu0", b.conv("features.conv0", x, d.Init, 7, 7, 2, 3, 3, 1))
	x = b.pool(optype.MaxPool, "features/pool0", x, 3, 2, 1, false)
	for i, n := range d.Blocks {
		feats := []fmap{x}
		for j := range n {
			s := fmt.Sprintf("features.denseblock%d.denselayer%d", i+1, j+1)
			// torch.cat of the one-element list exports as a Concat of one input too.
			y := b.concatAll(s, feats)
			y = b.relu(s+"/relu1", b.batchNorm(s+".norm1", y))
			y = b.relu(s+"/relu2", b.conv(s+".conv1", y, d.BNSize*d.Growth, 1, 1, 1, 0, 0, 1))
			y = b.conv(s+".conv2", y, d.Growth, 3, 3, 1, 1, 1, 1)
			feats = append(feats, y)
		}
		x = b.concat(fmt.Sprintf("features.denseblock%d", i+1), feats)
		if i < len(d.Blocks)-1 {
			s := fmt.Sprintf("features.transition%d", i+1)
			x = b.relu(s+"/relu", b.batchNorm(s+".norm", x))
			x = b.conv(s+".conv", x, x.c/2, 1, 1, 1, 0, 0, 1)
			x = b.pool(optype.AveragePool, s+"/pool", x, 2, 2, 0, false)
		}
	}
	x = b.relu("features/relu5", b.batchNorm("features.norm5", x))
	b.head("classifier", x, d.Classes)
	return 14, nil
}
