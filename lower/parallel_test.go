package lower

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestInParallelFindsTheFirstFailureInOrder(t *testing.T) {
	done := make([]bool, 1000)
	inParallel(len(done), func(i int) bool {
		done[i] = true
		return i != 500 && i != 700
	})
	for i := range 501 {
		assert.True(t, done[i], "index %d below the first failure ran", i)
	}

	// A panic is raised in the caller when it is the first failure, not otherwise.
	assert.PanicsWithValue(t, "at 3", func() {
		inParallel(100, func(i int) bool {
			if i == 3 {
				panic("at 3")
			}
			return i != 50
		})
	})
	assert.NotPanics(t, func() {
		inParallel(100, func(i int) bool {
			if i == 50 {
				panic("at 50")
			}
			return i != 3
		})
	})
	inParallel(0, func(int) bool { t.Fatal("called with no work"); return true })
}
