package sampling_test

import (
	"fmt"

	"github.com/wasmlm/wasmlm/sampling"
)

// Greedy decoding is the zero Params; a positive temperature with a seed
// draws reproducibly. (The seeded ids below were checked against the Python
// reference in testdata/reference_draws.py.)
func Example() {
	logits := []float32{1.0, 3.5, 0.2, 3.5, 2.0}

	greedy, err := sampling.New(sampling.Params{}, len(logits))
	if err != nil {
		panic(err)
	}
	fmt.Println("greedy:", greedy.Sample(logits)) // ids 1 and 3 tie: the lower wins

	s, err := sampling.New(sampling.Params{Temperature: 0.8, TopK: 3, Seed: 42}, len(logits))
	if err != nil {
		panic(err)
	}
	var ids []int
	for range 8 {
		id := s.Sample(logits)
		s.Accept(id)
		ids = append(ids, id)
	}
	fmt.Println("seeded:", ids)

	_, err = sampling.New(sampling.Params{TopP: 1.5}, len(logits))
	fmt.Println(err)
	// Output:
	// greedy: 1
	// seeded: [1 3 3 1 3 3 1 3]
	// sampling: invalid params: top_p must be in [0, 1] (0 or 1 = off), got 1.5
}

// SampleTrace shows how each stage reshapes the distribution: temperature 0.5
// sharpens it, top-k 3 cuts ids 0 and 2 and renormalises the rest. (The
// numbers were checked against a plain softmax computed in Python.)
func ExampleSampler_SampleTrace() {
	logits := []float32{1.0, 3.5, 0.2, 3.5, 2.0}
	s, err := sampling.New(sampling.Params{Temperature: 0.5, TopK: 3, Seed: 1}, len(logits))
	if err != nil {
		panic(err)
	}
	var tr sampling.Trace
	s.SampleTrace(logits, &tr)
	fmt.Println("id  logit   p(T=1)  p(T)   final")
	for _, e := range tr.Top[:tr.N] {
		fmt.Printf("%d  %5.2f  %6.4f  %6.4f  %6.4f\n", e.ID, e.Logit, e.Prob, e.ProbTemp, e.ProbFinal)
	}
	fmt.Printf("kept %d, chose %d (rank %d)\n", tr.Kept, tr.Chosen, tr.ChosenRank)
	// Output:
	// id  logit   p(T=1)  p(T)   final
	// 1   3.50  0.4270  0.4859  0.4879
	// 3   3.50  0.4270  0.4859  0.4879
	// 4   2.00  0.0953  0.0242  0.0243
	// 0   1.00  0.0350  0.0033  0.0000
	// 2   0.20  0.0157  0.0007  0.0000
	// kept 3, chose 1 (rank 0)
}
