package longtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEvery(t *testing.T) {
	t.Setenv("WASMLM_LONG", "")
	items := []int{0, 1, 2, 3, 4, 5, 6}
	tests := []struct {
		k    int
		want []int
	}{
		{1, items},
		{0, items},
		{3, []int{0, 3, 6}},
		{4, []int{0, 4}},
		{10, []int{0}},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, Every(items, tc.k), "k=%d", tc.k)
	}
	assert.Empty(t, Every([]int{}, 3))
	t.Setenv("WASMLM_LONG", "1")
	assert.Equal(t, items, Every(items, 3), "WASMLM_LONG=1: all of them")
}
