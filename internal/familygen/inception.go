package familygen

import (
	"fmt"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
)

// Inception is torchvision's Inception-v3 (Szegedy et al., CVPR 2016) without the auxiliary
// classifier, as exported in eval mode: every BasicConv2d a Conv (BN folded) and a ReLU;
// blocks A (5×5 and double 3×3 branches), B (grid reduction), C (factorised 1×7/7×1
// branches), D (reduction with 7×7 factorised) and E (1×3/3×1 splits concatenated), each
// ending in a Concat of its branches. Channel widths are torchvision's divided by Div.
type Inception struct {
	Div     int64 // channel divisor (1: full width)
	Image   int64 // input height and width (299)
	Classes int64
}

func (n Inception) build(b *builder) (int64, error) {
	if n.Div < 1 || n.Image < 75 || n.Classes < 1 {
		return 0, fmt.Errorf("familygen: inception needs div ≥ 1, image ≥ 75 and classes (got %+v)", n)
	}
	c := func(ch int64) int64 { return max(1, ch/n.Div) }
	bc := func(s string, x fmap, ch, kh, kw, st, ph, pw int64) fmap {
		return b.convRelu(s, x, c(ch), kh, kw, st, ph, pw)
	}
	x := fmap{b.input("input", graph.Float, 1, 3, n.Image, n.Image), 3, n.Image, n.Image}
	x = bc("Conv2d_1a_3x3", x, 32, 3, 3, 2, 0, 0)
	x = bc("Conv2d_2a_3x3", x, 32, 3, 3, 1, 0, 0)
	x = bc("Conv2d_2b_3x3", x, 64, 3, 3, 1, 1, 1)
	x = b.pool(optype.MaxPool, "maxpool1", x, 3, 2, 0, false)
	x = bc("Conv2d_3b_1x1", x, 80, 1, 1, 1, 0, 0)
	x = bc("Conv2d_4a_3x3", x, 192, 3, 3, 1, 0, 0)
	x = b.pool(optype.MaxPool, "maxpool2", x, 3, 2, 0, false)
	blockA := func(s string, x fmap, pool int64) fmap {
		b1 := bc(s+".branch1x1", x, 64, 1, 1, 1, 0, 0)
		b5 := bc(s+".branch5x5_2", bc(s+".branch5x5_1", x, 48, 1, 1, 1, 0, 0), 64, 5, 5, 1, 2, 2)
		b3 := bc(s+".branch3x3dbl_1", x, 64, 1, 1, 1, 0, 0)
		b3 = bc(s+".branch3x3dbl_3", bc(s+".branch3x3dbl_2", b3, 96, 3, 3, 1, 1, 1), 96, 3, 3, 1, 1, 1)
		bp := bc(s+".branch_pool", b.pool(optype.AveragePool, s, x, 3, 1, 1, true), pool, 1, 1, 1, 0, 0)
		return b.concat(s, []fmap{b1, b5, b3, bp})
	}
	x = blockA("Mixed_5b", x, 32)
	x = blockA("Mixed_5c", x, 64)
	x = blockA("Mixed_5d", x, 64)
	{
		s := "Mixed_6a"
		b3 := bc(s+".branch3x3", x, 384, 3, 3, 2, 0, 0)
		bd := bc(s+".branch3x3dbl_1", x, 64, 1, 1, 1, 0, 0)
		bd = bc(s+".branch3x3dbl_3", bc(s+".branch3x3dbl_2", bd, 96, 3, 3, 1, 1, 1), 96, 3, 3, 2, 0, 0)
		bp := b.pool(optype.MaxPool, s, x, 3, 2, 0, false)
		x = b.concat(s, []fmap{b3, bd, bp})
	}
	blockC := func(s string, x fmap, c7 int64) fmap {
		b1 := bc(s+".branch1x1", x, 192, 1, 1, 1, 0, 0)
		b7 := bc(s+".branch7x7_1", x, c7, 1, 1, 1, 0, 0)
		b7 = bc(s+".branch7x7_2", b7, c7, 1, 7, 1, 0, 3)
		b7 = bc(s+".branch7x7_3", b7, 192, 7, 1, 1, 3, 0)
		bd := bc(s+".branch7x7dbl_1", x, c7, 1, 1, 1, 0, 0)
		bd = bc(s+".branch7x7dbl_2", bd, c7, 7, 1, 1, 3, 0)
		bd = bc(s+".branch7x7dbl_3", bd, c7, 1, 7, 1, 0, 3)
		bd = bc(s+".branch7x7dbl_4", bd, c7, 7, 1, 1, 3, 0)
		bd = bc(s+".branch7x7dbl_5", bd, 192, 1, 7, 1, 0, 3)
		bp := bc(s+".branch_pool", b.pool(optype.AveragePool, s, x, 3, 1, 1, true), 192, 1, 1, 1, 0, 0)
		return b.concat(s, []fmap{b1, b7, bd, bp})
	}
	x = blockC("Mixed_6b", x, 128)
	x = blockC("Mixed_6c", x, 160)
	x = blockC("Mixed_6d", x, 160)
	x = blockC("Mixed_6e", x, 192)
	{
		s := "Mixed_7a"
		b3 := bc(s+".branch3x3_2", bc(s+".branch3x3_1", x, 192, 1, 1, 1, 0, 0), 320, 3, 3, 2, 0, 0)
		b7 := bc(s+".branch7x7x3_1", x, 192, 1, 1, 1, 0, 0)
		b7 = bc(s+".branch7x7x3_2", b7, 192, 1, 7, 1, 0, 3)
		b7 = bc(s+".branch7x7x3_3", b7, 192, 7, 1, 1, 3, 0)
		b7 = bc(s+".branch7x7x3_4", b7, 192, 3, 3, 2, 0, 0)
		bp := b.pool(optype.MaxPool, s, x, 3, 2, 0, false)
		x = b.concat(s, []fmap{b3, b7, bp})
	}
	blockE := func(s string, x fmap) fmap {
		b1 := bc(s+".branch1x1", x, 320, 1, 1, 1, 0, 0)
		b3 := bc(s+".branch3x3_1", x, 384, 1, 1, 1, 0, 0)
		b3 = b.concat(s+"/branch3x3", []fmap{bc(s+".branch3x3_2a", b3, 384, 1, 3, 1, 0, 1), bc(s+".branch3x3_2b", b3, 384, 3, 1, 1, 1, 0)})
		bd := bc(s+".branch3x3dbl_1", x, 448, 1, 1, 1, 0, 0)
		bd = bc(s+".branch3x3dbl_2", bd, 384, 3, 3, 1, 1, 1)
		bd = b.concat(s+"/branch3x3dbl", []fmap{bc(s+".branch3x3dbl_3a", bd, 384, 1, 3, 1, 0, 1), bc(s+".branch3x3dbl_3b", bd, 384, 3, 1, 1, 1, 0)})
		bp := bc(s+".branch_pool", b.pool(optype.AveragePool, s, x, 3, 1, 1, true), 192, 1, 1, 1, 0, 0)
		return b.concat(s, []fmap{b1, b3, bd, bp})
	}
	x = blockE("Mixed_7b", x)
	x = blockE("Mixed_7c", x)
	b.head("fc", x, n.Classes)
	return 14, nil
}
