package linediff

import (
	"math/rand"
	"strings"
	"testing"
)

func TestLinesRebuildsAndIsShortest(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	words := []string{"a", "b", "c", "d"}
	for trial := 0; trial < 500; trial++ {
		gen := func() []string {
			n := rng.Intn(12)
			xs := make([]string, n)
			for i := range xs {
				xs[i] = words[rng.Intn(len(words))]
			}
			return xs
		}
		a, b := gen(), gen()
		old, new := lines(a), lines(b)
		d := Lines(old, new, Limits{MaxEdits: 100, MaxLines: 1000, Context: 2})
		if got, err := Apply(old, d); err != nil || got != new {
			t.Fatalf("%q -> %q: diff rebuilds %q, %v (%+v)", old, new, got, err, d)
		}
		// A shortest script keeps a longest common subsequence (computed here by
		// dynamic programming, independently of Myers' search).
		lcs := make([][]int, len(a)+1)
		for i := range lcs {
			lcs[i] = make([]int, len(b)+1)
		}
		for i := len(a) - 1; i >= 0; i-- {
			for j := len(b) - 1; j >= 0; j-- {
				if a[i] == b[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		if want := len(a) + len(b) - 2*lcs[0][0]; d.Added+d.Removed != want {
			t.Fatalf("%q -> %q: %d edits, the shortest has %d", old, new, d.Added+d.Removed, want)
		}
	}
}

// lines joins xs as a text of lines, each ending in a newline.
func lines(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return strings.Join(xs, "\n") + "\n"
}

func TestApplyRejectsADiffOfAnotherText(t *testing.T) {
	d := Lines("a\nb\nc\n", "a\nx\nc\n", DefaultLimits)
	_, err := Apply("a\ny\nc\n", d)
	if err == nil {
		t.Fatal("a diff applied to a text it was not made from")
	}
}

func TestLinesHunksAndBudgets(t *testing.T) {
	var a []string
	for i := 0; i < 100; i++ {
		a = append(a, "line "+string(rune('A'+i%26)))
	}
	b := append([]string(nil), a...)
	b[10], b[80] = "changed 10", "changed 80"
	d := Lines(strings.Join(a, "\n"), strings.Join(b, "\n"), Limits{MaxEdits: 50, MaxLines: 100, Context: 3})
	if len(d.Hunks) != 2 || d.Added != 2 || d.Removed != 2 || d.Replaced {
		t.Fatalf("two separate changes: %+v", d)
	}
	if h := d.Hunks[0]; h.OldStart != 8 || len(h.Lines) != 8 {
		t.Fatalf("first hunk starts at old line %d with %d lines, want 8 and 8", h.OldStart, len(h.Lines))
	}
	r := Lines("x\ny\nz", "p\nq\nr", Limits{MaxEdits: 2, MaxLines: 100, Context: 3})
	if !r.Replaced || r.Added != 3 || r.Removed != 3 {
		t.Fatalf("past the edit budget the text is replaced: %+v", r)
	}
	c := Lines(strings.Join(a, "\n"), "", Limits{MaxEdits: 10, MaxLines: 5, Context: 3})
	if !c.Truncated || c.Removed != 100 || len(c.Hunks[0].Lines) != 5 {
		t.Fatalf("the line budget cuts hunks: %+v", c)
	}
}
