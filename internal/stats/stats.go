// Package stats holds the summary statistics the cost model and the benchmark programs
// share: the median of measured times and the geometric mean of ratios.
package stats

import (
	"math"
	"slices"
)

// Median is the middle value of v (the mean of the two middle values when len(v) is even),
// NaN when v is empty. v is not modified.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// GeoMean is the geometric mean of v, NaN when v is empty. Values at or below 1e-12 count
// as 1e-12, so a zero ratio pulls the mean down without making it 0.
func GeoMean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += math.Log(math.Max(x, 1e-12))
	}
	return math.Exp(s / float64(len(v)))
}
