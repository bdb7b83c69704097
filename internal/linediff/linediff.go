// Package linediff compares two texts line by line (Myers' O(ND) shortest edit
// script) and gives the differences as unified-diff hunks: what the visualisation
// shows of what a compiler pass changed. It is a leaf: it imports nothing of ours.
package linediff

import (
	"fmt"
	"strings"
)

// Hunk is one run of changes with its context: Lines start with ' ' (kept), '-'
// (only in the old text) or '+' (only in the new one). OldStart and NewStart are the
// 1-based numbers of the hunk's first line in each text.
type Hunk struct {
	OldStart int      `json:"old_start"`
	NewStart int      `json:"new_start"`
	Lines    []string `json:"lines"`
}

// Diff is the comparison of two texts.
type Diff struct {
	Hunks   []Hunk `json:"hunks"`
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	// Replaced is set when the texts differ in more than the edit budget allows to
	// align: the diff then removes every differing line and adds the new ones.
	Replaced bool `json:"replaced,omitempty"`
	// Truncated is set when the hunks were cut at the line budget (Added and Removed
	// still count every line).
	Truncated bool `json:"truncated,omitempty"`
}

// Limits bound the work and the size of a diff: MaxEdits the edit distance searched
// (Myers' cost grows with its square), MaxLines the lines kept in hunks, Context the
// unchanged lines kept around each change.
type Limits struct {
	MaxEdits, MaxLines, Context int
}

// DefaultLimits keep a diff of a large graph's text to a few megabytes of work and
// a few thousand lines (assumed: enough to read, small enough to ship in a page).
var DefaultLimits = Limits{MaxEdits: 1500, MaxLines: 4000, Context: 3}

// op is one step of an edit script.
type op byte

const (
	keep op = ' '
	del  op = '-'
	ins  op = '+'
)

// Lines compares old and new line by line.
func Lines(old, new string, lim Limits) Diff {
	a, b := split(old), split(new)
	// Common prefix and suffix never need the search.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	script, replaced := edits(a[pre:len(a)-suf], b[pre:len(b)-suf], lim.MaxEdits)
	full := make([]op, 0, len(a)+len(b))
	for i := 0; i < pre; i++ {
		full = append(full, keep)
	}
	full = append(full, script...)
	for i := 0; i < suf; i++ {
		full = append(full, keep)
	}
	d := hunks(a, b, full, lim)
	d.Replaced = replaced
	return d
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// edits is a shortest edit script from a to b (Myers), or, past maxEdits, the script
// that deletes a and inserts b.
func edits(a, b []string, maxEdits int) ([]op, bool) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 || maxEdits <= 0 {
		return replaceAll(n, m), n > 0 && m > 0
	}
	max := min(n+m, maxEdits)
	off := max + 1
	v := make([]int, 2*max+3)
	var trace [][]int
	for d := 0; d <= max; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, n, m, d), false
			}
		}
	}
	return replaceAll(n, m), true
}

// backtrack walks the saved frontiers back from (n, m): trace[d] holds the frontier
// before step d (the furthest x on each diagonal after d-1 edits), diagonal k at k+d+1.
func backtrack(trace [][]int, n, m, dEnd int) []op {
	var rev []op
	x, y := n, m
	for d := dEnd; d > 0; d-- {
		fr := trace[d]
		at := func(k int) int { return fr[k+d+1] }
		k := x - y
		pk := k - 1 // came right (a deletion) from diagonal k-1
		if k == -d || k != d && at(k-1) < at(k+1) {
			pk = k + 1 // came down (an insertion) from diagonal k+1
		}
		px := at(pk)
		py := px - pk
		sx, sy := px, py // where the step lands before its snake
		if pk == k+1 {
			sy++
		} else {
			sx++
		}
		for x > sx && y > sy {
			rev = append(rev, keep)
			x, y = x-1, y-1
		}
		if pk == k+1 {
			rev = append(rev, ins)
		} else {
			rev = append(rev, del)
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		rev = append(rev, keep)
		x, y = x-1, y-1
	}
	out := make([]op, len(rev))
	for i, o := range rev {
		out[len(rev)-1-i] = o
	}
	return out
}

func replaceAll(n, m int) []op {
	out := make([]op, 0, n+m)
	for i := 0; i < n; i++ {
		out = append(out, del)
	}
	for i := 0; i < m; i++ {
		out = append(out, ins)
	}
	return out
}

// hunks groups a script's changes with lim.Context lines around them.
func hunks(a, b []string, script []op, lim Limits) Diff {
	d := Diff{Hunks: []Hunk{}}
	type pos struct{ i, j int }
	at := make([]pos, len(script)+1)
	i, j := 0, 0
	for s, o := range script {
		at[s] = pos{i, j}
		switch o {
		case keep:
			i, j = i+1, j+1
		case del:
			i++
			d.Removed++
		case ins:
			j++
			d.Added++
		}
	}
	at[len(script)] = pos{i, j}
	kept := 0
	for s := 0; s < len(script); {
		if script[s] == keep {
			s++
			continue
		}
		start := max(0, s-lim.Context)
		end := s
		for end < len(script) { // extend while changes are within 2*Context of each other
			if script[end] != keep {
				end++
				continue
			}
			run := end
			for run < len(script) && script[run] == keep {
				run++
			}
			if run == len(script) || run-end > 2*lim.Context {
				end = min(len(script), end+lim.Context)
				break
			}
			end = run
		}
		h := Hunk{OldStart: at[start].i + 1, NewStart: at[start].j + 1}
		for t := start; t < end; t++ {
			if kept >= lim.MaxLines {
				d.Truncated = true
				break
			}
			p := at[t]
			switch script[t] {
			case keep:
				h.Lines = append(h.Lines, " "+a[p.i])
			case del:
				h.Lines = append(h.Lines, "-"+a[p.i])
			case ins:
				h.Lines = append(h.Lines, "+"+b[p.j])
			}
			kept++
		}
		if len(h.Lines) > 0 {
			d.Hunks = append(d.Hunks, h)
		}
		if d.Truncated {
			break
		}
		s = end
	}
	return d
}

// Apply rebuilds the new text from old and a diff of it (a check of a diff against
// the texts: every kept and removed line must be old's). A Replaced diff applies like
// any other; a Truncated one cannot.
func Apply(old string, d Diff) (string, error) {
	if d.Truncated {
		return "", fmt.Errorf("linediff: a truncated diff does not give the whole new text")
	}
	a := split(old)
	var out []string
	i := 0
	for _, h := range d.Hunks {
		if h.OldStart-1 < i || h.OldStart-1 > len(a) {
			return "", fmt.Errorf("linediff: hunk at old line %d out of order", h.OldStart)
		}
		out = append(out, a[i:h.OldStart-1]...)
		i = h.OldStart - 1
		for _, l := range h.Lines {
			if l == "" {
				return "", fmt.Errorf("linediff: empty diff line")
			}
			if l[0] == '+' {
				out = append(out, l[1:])
				continue
			}
			if i >= len(a) || a[i] != l[1:] {
				return "", fmt.Errorf("linediff: old line %d is not %q", i+1, l[1:])
			}
			if l[0] == ' ' {
				out = append(out, a[i])
			}
			i++
		}
	}
	out = append(out, a[i:]...)
	if len(out) == 0 {
		return "", nil
	}
	return strings.Join(out, "\n") + "\n", nil
}
