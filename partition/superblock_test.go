package partition

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// TestSuperblockBelowOPT: the superblock bound is ≤ the brute-force optimum on random small
// DAGs (with every composition solved to optimality), and it is not vacuous: on some of
// them it beats Lemma 3.3 and the communication-aware bounds.
func TestSuperblockBelowOPT(t *testing.T) {
	rng := rand.New(rand.NewSource(33))
	stronger := 0
	for it := 0; it < 40; it++ {
		n := 4 + rng.Intn(4)
		k := 3 + rng.Intn(2)
		p := randomDAG(rng, n, k, 0.45)
		opt := bruteOPT(t, p)
		pl, err := Solve(context.Background(), p, Options{Seed: 1, Bounds: BoundsSimple, BRKGA: BRKGAOptions{Population: 10, Generations: 3}})
		if err != nil {
			t.Fatal(err)
		}
		info, _, err := LowerBound(context.Background(), p, pl, BoundSuperblock, BoundOptions{TimeLimit: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if info.Status == "fault" || info.Value > opt*(1+1e-9) {
			t.Fatalf("it %d: superblock bound %v (%s) > OPT %v", it, info.Value, info.Status, opt)
		}
		comb := 0.0
		for _, b := range pl.Bounds {
			if b.Method != BoundIdealDP { // the DP over ideals is exact on these
				comb = max(comb, b.Value)
			}
		}
		if info.Value > comb*(1+1e-6) {
			stronger++
		}
	}
	if stronger == 0 {
		t.Fatalf("the superblock bound never beat the combinatorial bounds")
	}
	t.Logf("superblock above the combinatorial bounds on %d of 40", stronger)
}

func TestSuperblockCompositions(t *testing.T) {
	if got := fmt.Sprint(superblockCompositions(16)); got != "[[8 8] [5 6 5] [12 4] [4 12] [15 1] [4 4 4 4]]" {
		t.Fatalf("K=16: %s", got)
	}
	if got := fmt.Sprint(superblockCompositions(3)); got != "[[1 2] [2 1]]" {
		t.Fatalf("K=3: %s", got)
	}
	for K := 3; K <= 64; K++ {
		seen := map[string]bool{}
		for _, c := range superblockCompositions(K) {
			if seen[fmt.Sprint(c)] {
				t.Fatalf("K=%d: %v twice", K, c)
			}
			seen[fmt.Sprint(c)] = true
			sum := 0
			for _, s := range c {
				if s < 1 {
					t.Fatalf("K=%d: bad composition %v", K, c)
				}
				sum += s
			}
			if len(c) < 2 || len(c) >= K || sum != K {
				t.Fatalf("K=%d: bad composition %v", K, c)
			}
		}
	}
}
