package calib

import "pypto/dtype"

// Row is one row of the published GEMM measurements (docs/sources.md, "gemm-table"):
// an A3 part using 24 cube cores, busy ratios as
// fractions, time in milliseconds.
type Row struct {
	MKN                             int
	CubeBusy, ExtractBusy, LoadBusy float64
	StoreBusy                       float64
	Ms                              float64
}

// Table is the published GEMM table, m = k = n.
var Table = []Row{
	{1536, 0.545, 0.422, 0.722, 0.077, 0.0388},
	{3072, 0.790, 0.620, 0.909, 0.058, 0.2067},
	{6144, 0.867, 0.681, 0.952, 0.031, 1.5060},
	{7680, 0.806, 0.630, 0.984, 0.024, 3.1680},
}

// TopKRow is one row of the published top-k measurements (docs/sources.md,
// "topk-table"; the vector side's calibration point): an A3 part using 48 vector cores, busy ratios as
// fractions, time in milliseconds.
type TopKRow struct {
	DType                            dtype.DType
	Rows, ValidCol, Cols, K          int
	VectorBusy, ScalarBusy, MTE2Busy float64
	MTE3Busy                         float64
	Ms                               float64
}

// TopKTable is the published top-k table.
var TopKTable = []TopKRow{
	{dtype.Float32, 4800, 1024, 1280, 1000, 0.940, 0.032, 0.117, 0.104, 0.324106},
	{dtype.Float32, 3456, 1024, 1280, 1000, 0.915, 0.046, 0.123, 0.105, 0.238819},
	{dtype.Float32, 2304, 1024, 1280, 1000, 0.887, 0.060, 0.124, 0.101, 0.161375},
	{dtype.Float16, 4800, 1024, 1280, 1008, 0.937, 0.024, 0.115, 0.096, 0.326886},
}
