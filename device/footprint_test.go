package device

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// Every block reads the whole bias row; the footprint counts it once, while the DMA
// counters count every read.
func TestFootprintCountsDistinctBytes(t *testing.T) {
	s := biasReluSpec{rows: 40, cols: 100, tr: 16, tc: 64, dt: dtype.Float16}
	x, y, bias := s.inputs(3)
	_, st := s.run(t, preset(t, "tiny"), x, y, bias, RunOptions{})
	size := int64(s.dt.Size())
	matrix, row := int64(s.rows*s.cols)*size, int64(s.cols)*size
	require.Equal(t, 2*matrix+row, st.FootprintRead)
	assert.Equal(t, matrix, st.FootprintWritten)
	assert.Greater(t, st.GMBytesRead, st.FootprintRead, "blocks re-read the bias")
}

func TestFootprintUnion(t *testing.T) {
	ivs := []gmInterval{{lo: 10, hi: 20}, {lo: 0, hi: 5}, {lo: 15, hi: 30}, {lo: 30, hi: 31}, {lo: 2, hi: 3}, {lo: 4, hi: 12, write: true}, {lo: 6, hi: 8, write: true}}
	read, written := footprint(sortedIntervals([][]gmInterval{ivs}))
	assert.Equal(t, int64(5+21), read)
	assert.Equal(t, int64(8), written)
	read, written = footprint(nil)
	assert.Zero(t, read+written)
}

// A moved window continuing rows of the last one of its param to the right extends
// their byte runs, one continuing it downwards joins it; a repeated window adds
// nothing.
func TestRecordMovedExtendsContinuingWindows(t *testing.T) {
	c := &coreSim{}
	at := func(offset, rows, cols int) movedWindow {
		return movedWindow{block: 3, base: 100, size: 2, view: isa.GMView{Offset: offset, Rows: rows, Cols: cols, RowStride: 16, ColStride: 1}}
	}
	c.recordMoved(at(0, 2, 4), 7)
	c.recordMoved(at(4, 2, 4), 9)
	c.recordMoved(at(4, 2, 4), 9)
	c.recordMoved(at(32, 2, 8), 10)
	c.recordMoved(at(8, 4, 4), 12)
	c.recordMoved(at(44, 2, 4), 13)
	c.recordMoved(at(64, 2, 4), 11)
	c.recordMoved(at(3, 1, 4), 14)
	assert.Equal(t, []gmInterval{
		{lo: 100, hi: 124, block: 3, pc: 7}, {lo: 132, hi: 156, block: 3, pc: 7},
		{lo: 164, hi: 196, block: 3, pc: 10}, {lo: 196, hi: 228, block: 3, pc: 10},
		{lo: 228, hi: 236, block: 3, pc: 11}, {lo: 260, hi: 268, block: 3, pc: 11},
		{lo: 106, hi: 114, block: 3, pc: 14},
	}, c.dynGM)
}
