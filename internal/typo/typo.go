// Package typo measures how far a mistyped name is from the names it could have meant, for
// the "did you mean" of commands, device names and node names. It is the one edit distance
// onnxpart uses.
package typo

// Distance is the optimal string alignment distance of a and b, by runes: the insertions,
// deletions, substitutions and swaps of neighbours that turn a into b ("splti" is 1 from
// "split").
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1) // row i-2
	prev := make([]int, len(rb)+1)  // row i-1
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
