package calib

import (
	"fmt"
	"strings"

	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// TopK is the published top-k kernel on the vector cores: each of Rows rows holds
// ValidCol elements in GM (dtype DType); a core loads a row into a UB tile of Cols
// elements (the pad filled with -Inf so that it sorts last), sorts it in blocks of 32
// with TSORT32, merges the blocks with TMRGSORT until the valid part of the row is one
// descending run, and stores the first K values (DType) and their column indices
// (int32) as two outputs. The rows are split evenly over Cores vector cores; each core
// keeps two sets of UB tiles in flight (double buffering), so the load of one row
// overlaps the sort of the other.
type TopK struct {
	DType               dtype.DType
	Rows, ValidCol, Col int
	K                   int
	Cores               int
}

// PublishedTopK is the kernel of the topk-table (docs/sources.md) on cores vector cores.
func PublishedTopK(dt dtype.DType, rows, validCol, cols, k, cores int) TopK {
	return TopK{DType: dt, Rows: rows, ValidCol: validCol, Col: cols, K: k, Cores: cores}
}

// RowsPerCore is how many rows each core sorts.
func (t TopK) RowsPerCore() int { return t.Rows / t.Cores }

func (t TopK) check() error {
	if t.DType != dtype.Float32 && t.DType != dtype.Float16 {
		return fmt.Errorf("calib: top-k takes f32 or f16 rows, got %s", t.DType)
	}
	if t.Rows <= 0 || t.ValidCol <= 0 || t.Col <= 0 || t.K <= 0 || t.Cores <= 0 {
		return fmt.Errorf("calib: top-k sizes must be positive: %+v", t)
	}
	if t.Rows%(2*t.Cores) != 0 {
		return fmt.Errorf("calib: top-k needs rows %% (2 x cores) == 0 (two rows in flight per core), got %d rows on %d cores", t.Rows, t.Cores)
	}
	if t.Col%32 != 0 || t.ValidCol > t.Col || t.K > t.ValidCol {
		return fmt.Errorf("calib: top-k needs cols %% 32 == 0 and k <= validCol <= cols, got k %d, validCol %d, cols %d", t.K, t.ValidCol, t.Col)
	}
	if t.mergeRuns() == nil {
		return fmt.Errorf("calib: the %d valid columns cannot be merged into one run inside %d columns by 4-way merges", t.ValidCol, t.Col)
	}
	return nil
}

// mergeRuns is the run length n of each TMRGSORT, from the sorted blocks of 32 until
// the first ValidCol elements of the row are one descending run. A merge takes groups
// of four runs of n (n must divide Cols); runs already sorted to a multiple of n
// merge the same way (two sorted runs of 2n read as four runs of n give one of 4n),
// so where four runs of the current length do not divide the row, half of it is
// used. The pad (-Inf) sorts behind the valid elements, so a first run of at least
// ValidCol holds them in order. nil when no such sequence exists.
func (t TopK) mergeRuns() []int {
	var runs []int
	for sorted := 32; sorted < t.ValidCol; {
		n := sorted
		if t.Col%n != 0 && n%2 == 0 {
			n /= 2
		}
		if t.Col%n != 0 {
			return nil
		}
		runs = append(runs, n)
		sorted = 4 * n
	}
	return runs
}

// Program is the vector program every core runs; core i's block binds params x, vals
// and idx to its rows (RowsPerCore rows from row i*RowsPerCore).
func (t TopK) Program() (*isa.Program, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	p, err := isa.Parse(t.source())
	if err != nil {
		return nil, fmt.Errorf("calib: generated top-k kernel does not parse: %w", err)
	}
	return p, nil
}

// source writes the kernel. Each loop trip handles two rows, one per tile set, so
// the backend's flags let set 1's load run during set 0's sort and set 0's next load
// during set 1's (the dependence chain of a set is MTE2 -> V -> MTE3, and V -> MTE2
// before a set's tile is loaded again).
func (t TopK) source() string {
	var b strings.Builder
	w := func(indent int, format string, args ...any) {
		b.WriteString(strings.Repeat("  ", indent))
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	dt := t.DType.String()
	rows := t.RowsPerCore()
	w(0, "kernel topk_%s vector", dt)
	w(0, "param %%x: %s[%d]", dt, rows*t.ValidCol)
	w(0, "param %%vals: %s[%d]", dt, rows*t.K)
	w(0, "param %%idx: i32[%d]", rows*t.K)
	for _, r := range []string{"i", "xoff", "ooff"} {
		w(0, "reg %%%s", r)
	}
	w(0, "tile %%col: vec i32[1x%d]", t.Col)
	w(0, "tile %%even: vec i32[1x%d]", t.K)
	w(0, "tile %%odd: vec i32[1x%d]", t.K)
	for s := range 2 {
		if t.DType != dtype.Float32 {
			w(0, "tile %%in_%d: vec %s[1x%d] valid 1 x %d", s, dt, t.Col, t.ValidCol)
			w(0, "tile %%x_%d: vec f32[1x%d]", s, t.Col)
			w(0, "tile %%vo_%d: vec %s[1x%d]", s, dt, t.K)
		} else {
			w(0, "tile %%x_%d: vec f32[1x%d] valid 1 x %d", s, t.Col, t.ValidCol)
		}
		w(0, "tile %%p_%d: vec f32[1x%d]", s, 2*t.Col)
		w(0, "tile %%q_%d: vec f32[1x%d]", s, 2*t.Col)
		w(0, "tile %%v_%d: vec f32[1x%d]", s, t.K)
		w(0, "tile %%fi_%d: vec f32[1x%d]", s, t.K)
		w(0, "tile %%ii_%d: vec i32[1x%d]", s, t.K)
	}
	// Column indices for TSORT32, and the pair positions of the first K values and
	// indices in a sorted row.
	w(1, "tci %%col, 0, 1")
	w(1, "tci %%even, 0, 2")
	w(1, "tci %%odd, 1, 2")
	runs := t.mergeRuns()
	row := func(ind, s, extra int) {
		w(ind, "smul %%xoff, %%i, %d", 2*t.ValidCol)
		w(ind, "sadd %%xoff, %%xoff, %d", extra*t.ValidCol)
		w(ind, "smul %%ooff, %%i, %d", 2*t.K)
		w(ind, "sadd %%ooff, %%ooff, %d", extra*t.K)
		if t.DType != dtype.Float32 {
			w(ind, "tload %%in_%d, %%x[%%xoff; 1x%d; %d,1]", s, t.ValidCol, t.ValidCol)
			w(ind, "tfillpad %%in_%d, %%in_%d, -Inf", s, s)
			w(ind, "tcvt %%x_%d, %%in_%d", s, s)
		} else {
			w(ind, "tload %%x_%d, %%x[%%xoff; 1x%d; %d,1]", s, t.ValidCol, t.ValidCol)
			w(ind, "tfillpad %%x_%d, %%x_%d, -Inf", s, s)
		}
		w(ind, "tsort32 %%p_%d, %%x_%d, %%col", s, s)
		src, dst := "p", "q"
		for _, n := range runs {
			w(ind, "tmrgsort %%%s_%d, %%%s_%d, %d", dst, s, src, s, n)
			src, dst = dst, src
		}
		w(ind, "tgather %%v_%d, %%%s_%d, %%even", s, src, s)
		w(ind, "tgather %%fi_%d, %%%s_%d, %%odd", s, src, s)
		w(ind, "tcvt %%ii_%d, %%fi_%d", s, s)
		if t.DType != dtype.Float32 {
			w(ind, "tcvt %%vo_%d, %%v_%d", s, s)
			w(ind, "tstore %%vals[%%ooff; 1x%d; %d,1], %%vo_%d", t.K, t.K, s)
		} else {
			w(ind, "tstore %%vals[%%ooff; 1x%d; %d,1], %%v_%d", t.K, t.K, s)
		}
		w(ind, "tstore %%idx[%%ooff; 1x%d; %d,1], %%ii_%d", t.K, t.K, s)
	}
	w(1, "loop %%i, %d", rows/2)
	row(2, 0, 0)
	row(2, 1, 1)
	w(1, "endloop")
	w(0, "end")
	return b.String()
}

// RunTopK simulates t on chip's vector cores with the rows given as DType bytes (nil
// for zeros) and returns the stats and the two outputs' bytes (values in DType,
// indices int32), row after row.
func RunTopK(chip *device.Chip, t TopK, x []byte, opts device.RunOptions) (*device.TaskStats, []byte, []byte, error) {
	p, err := t.Program()
	if err != nil {
		return nil, nil, nil, err
	}
	es := t.DType.Size()
	xBytes, vBytes, iBytes := t.Rows*t.ValidCol*es, t.Rows*t.K*es, t.Rows*t.K*4
	if x != nil && len(x) != xBytes {
		return nil, nil, nil, fmt.Errorf("calib: the top-k input must have %d bytes, got %d", xBytes, len(x))
	}
	m, err := device.Compile(chip, p)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("calib: top-k: %w", err)
	}
	base := []int{0, align(xBytes), align(xBytes) + align(vBytes)}
	gm := make([]byte, base[2]+align(iBytes))
	copy(gm, x)
	rows := t.RowsPerCore()
	blocks := make([]device.Block, t.Cores)
	for i := range blocks {
		blocks[i] = device.Block{Prog: m, ParamAddrs: []int{
			base[0] + i*rows*t.ValidCol*es, base[1] + i*rows*t.K*es, base[2] + i*rows*t.K*4}}
	}
	st, err := device.RunTask(chip, gm, isa.Vector, blocks, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	return st, gm[base[1] : base[1]+vBytes], gm[base[2] : base[2]+iBytes], nil
}
