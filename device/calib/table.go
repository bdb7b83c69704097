package calib

// Row is one row of the published GEMM measurements (reference/npu-facts.md,
// "Published measurements"): an A3 part using 24 cube cores, busy ratios as
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
