package llamagen

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"os"
	"runtime"
	"sync"

	"github.com/onnxpart/onnxpart/graph"

	"github.com/x448/float16"
)

// weightKind says how a tensor's values are made.
type weightKind uint8

const (
	uniform weightKind = iota // scale·U(−1, 1)
	norm                      // 1 + 0.1·U(−1, 1): RMSNorm gains near one
	rotCos                    // cos(pos·θ_j), the rotary table [MaxPositions, head_dim]
	rotSin                    // sin(pos·θ_j)
)

// tensor is one initializer: its name, shape, element type and how its values are made.
// Values are a function of the tensor's seed and the element index alone, so any chunk can be
// made independently (in parallel, straight into the data file) and tests can recompute them.
type tensor struct {
	name  string
	dims  []int64
	dtype graph.DType
	kind  weightKind
	scale float32
	seed  uint64
	// headDim and theta parametrise the rotary tables.
	headDim int64
	theta   float64
}

func (t *tensor) elements() int64 {
	n := int64(1)
	for _, d := range t.dims {
		n *= d
	}
	return n
}

func (t *tensor) elemSize() int64 { return int64(t.dtype.Bits() / 8) }

func (t *tensor) bytes() int64 { return t.elements() * t.elemSize() }

// tensorSeed derives a tensor's seed from the model's seed and the tensor's name.
func tensorSeed(seed uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return mix(seed ^ h.Sum64())
}

// mix is the splitmix64 finaliser.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// value is element i (row-major) as float32, before any rounding to the tensor's dtype.
func (t *tensor) value(i int64) float32 {
	switch t.kind {
	case norm:
		return 1 + 0.1*t.sym(i)
	case rotCos, rotSin:
		pos, j := i/t.headDim, i%t.headDim
		half := t.headDim / 2
		// HF: inv_freq = 1/θ^(2k/d) for k < d/2, freqs = pos ⊗ inv_freq in fp32, emb = cat(freqs, freqs).
		inv := float32(1 / math.Pow(t.theta, float64(2*(j%half))/float64(t.headDim)))
		angle := float32(pos) * inv
		if t.kind == rotCos {
			return float32(math.Cos(float64(angle)))
		}
		return float32(math.Sin(float64(angle)))
	}
	return t.scale * t.sym(i)
}

// sym is a pseudo-random value in [−1, 1) determined by the tensor's seed and i.
func (t *tensor) sym(i int64) float32 {
	h := mix(t.seed + uint64(i+1)*0x9e3779b97f4a7c15)
	return float32(h>>40)/(1<<23) - 1
}

// float32s returns every value of the tensor as float32, rounded through its dtype (so an
// fp16 tensor's values are those ONNX Runtime sees). For tests of small models.
func (t *tensor) float32s() []float32 {
	out := make([]float32, t.elements())
	for i := range out {
		v := t.value(int64(i))
		if t.dtype == graph.Float16 {
			v = float16.Frombits(float16.Fromfloat32(v).Bits()).Float32()
		}
		out[i] = v
	}
	return out
}

// encode writes elements [start, start+len(dst)/size) of t into dst, little-endian.
func (t *tensor) encode(dst []byte, start int64) {
	if t.kind == uniform || t.kind == norm {
		t.encodeRandom(dst, start)
		return
	}
	switch t.dtype {
	case graph.Float16:
		for k := 0; k+2 <= len(dst); k += 2 {
			binary.LittleEndian.PutUint16(dst[k:], float16.Fromfloat32(t.value(start+int64(k/2))).Bits())
		}
	default:
		for k := 0; k+4 <= len(dst); k += 4 {
			binary.LittleEndian.PutUint32(dst[k:], math.Float32bits(t.value(start+int64(k/4))))
		}
	}
}

// encodeRandom is encode for the pseudo-random kinds, the bulk of a model: value and sym
// inlined into one loop.
func (t *tensor) encodeRandom(dst []byte, start int64) {
	scale, bias := t.scale, float32(0)
	if t.kind == norm {
		scale, bias = 0.1, 1
	}
	const golden = 0x9e3779b97f4a7c15
	h := t.seed + uint64(start)*golden
	if t.dtype == graph.Float16 {
		for k := 0; k+2 <= len(dst); k += 2 {
			h += golden
			v := bias + scale*(float32(mix(h)>>40)/(1<<23)-1)
			binary.LittleEndian.PutUint16(dst[k:], float16.Fromfloat32(v).Bits())
		}
		return
	}
	for k := 0; k+4 <= len(dst); k += 4 {
		h += golden
		v := bias + scale*(float32(mix(h)>>40)/(1<<23)-1)
		binary.LittleEndian.PutUint32(dst[k:], math.Float32bits(v))
	}
}

// raw returns the whole tensor encoded (for weights kept inside the protobuf).
func (t *tensor) raw() []byte {
	b := make([]byte, t.bytes())
	t.encode(b, 0)
	return b
}

// chunkBytes is the unit of work of writeData: each worker makes and writes this much at a time.
const chunkBytes = 4 << 20

// writeData writes every tensor to f at its offset, in chunks, on all cores; memory use is a
// chunk per worker whatever the model's size.
func writeData(f *os.File, ts []*tensor, offsets []int64) error {
	type job struct {
		t     *tensor
		start int64 // element
		n     int64 // bytes
		off   int64 // file offset
	}
	jobs := make(chan job)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		fail error
	)
	workers := runtime.GOMAXPROCS(0)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, chunkBytes)
			for j := range jobs {
				b := buf[:j.n]
				j.t.encode(b, j.start)
				if _, err := f.WriteAt(b, j.off); err != nil {
					mu.Lock()
					if fail == nil {
						fail = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i, t := range ts {
		size, es := t.bytes(), t.elemSize()
		step := chunkBytes / es * es
		for at := int64(0); at < size; at += step {
			mu.Lock()
			stop := fail != nil
			mu.Unlock()
			if stop {
				break
			}
			jobs <- job{t: t, start: at / es, n: min(step, size-at), off: offsets[i] + at}
		}
	}
	close(jobs)
	wg.Wait()
	return fail
}
