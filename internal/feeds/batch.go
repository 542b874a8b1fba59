package feeds

import (
	"bytes"
	"fmt"
	"math/rand"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ort"
)

// Batch makes n items of random values (Tensor's) for every input, each at the input's
// shape, and the batch that stacks them along the leading axis: the leading dimension of
// every input is the batch's (its size in inputs is one item's, usually 1), and the batch
// has n times as many. The values are drawn input by input, item by item, from seed.
func Batch(seed int64, inputs []ort.IOInfo, n int) (items []map[string]*ort.Tensor, batch map[string]*ort.Tensor, err error) {
	rng := rand.New(rand.NewSource(seed))
	items = make([]map[string]*ort.Tensor, n)
	for k := range items {
		items[k] = map[string]*ort.Tensor{}
	}
	batch = map[string]*ort.Tensor{}
	for _, in := range inputs {
		if len(in.Shape) == 0 {
			return nil, nil, fmt.Errorf("input %s is a scalar: no batch axis", in.Name)
		}
		var all bytes.Buffer
		for k := range n {
			v, err := Tensor(rng, &graph.Tensor{Name: in.Name, DType: in.DType, Shape: graph.ShapeOf(in.Shape...)})
			if err != nil {
				return nil, nil, err
			}
			items[k][in.Name] = v
			all.Write(v.Data)
		}
		shape := append([]int64{int64(n) * in.Shape[0]}, in.Shape[1:]...)
		batch[in.Name] = &ort.Tensor{DType: in.DType, Shape: shape, Data: all.Bytes()}
	}
	return items, batch, nil
}
