// Package seeded makes reproducible pseudo-random values from a seed and a name, for the
// model generators (internal/genaigen, internal/familygen): the same seed and tensor name give
// the same values on every machine, whatever order the tensors are made in.
package seeded

import "hash/fnv"

// Source is a splitmix64 stream started from a seed mixed with a name's FNV-1a hash.
type Source struct{ s uint64 }

// New returns the stream of seed and name.
func New(seed uint64, name string) *Source {
	h := fnv.New64a()
	h.Write([]byte(name))
	return &Source{s: seed ^ h.Sum64()}
}

// Uint64 is the next value of the stream.
func (r *Source) Uint64() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Sym is uniform in (−1, 1), on a grid of 2⁻²³.
func (r *Source) Sym() float32 { return float32(r.Uint64()>>40)/float32(1<<23) - 1 }

// Uniform returns n values scale·U(−1, 1) of the stream of seed and name.
func Uniform(seed uint64, name string, n int, scale float32) []float32 {
	r := New(seed, name)
	v := make([]float32, n)
	for i := range v {
		v[i] = scale * r.Sym()
	}
	return v
}
