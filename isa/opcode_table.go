package isa

// Shorthands for the operand kinds of the table below.
var (
	tile   = KindTile
	gm     = KindGM
	imm    = KindImm
	pipe   = KindPipe
	reg    = KindReg
	scalar = KindScalar
)

func kinds(k ...OperandKind) []OperandKind { return k }

// row builds a table row run by one fixed pipe.
func row(name string, class OpClass, p Pipe, operands []OperandKind, rule, doc string) OpInfo {
	return OpInfo{Name: name, Class: class, Operands: operands, PipeClass: PipeClassFixed, Pipe: p, Rule: rule, Doc: doc}
}

// routed builds a row whose pipe depends on its operands' locations.
func routed(name string, class OpClass, operands []OperandKind, rule, doc string) OpInfo {
	return OpInfo{Name: name, Class: class, Operands: operands, PipeClass: PipeClassByLocation, Rule: rule, Doc: doc}
}

func withModes(info OpInfo, required bool, modes []Mode) OpInfo {
	info.Modes, info.ModeRequired = modes, required
	return info
}

// Vector rows: every tile in Vec, run on the V pipe, computing dst's valid region.
func vbin(name, rule, doc string) OpInfo {
	return row(name, ClassElementwise, PipeV, kinds(tile, tile, tile), rule, doc)
}
func vun(name, rule, doc string) OpInfo {
	return row(name, ClassElementwise, PipeV, kinds(tile, tile), rule, doc)
}
func vscalar(name, rule, doc string) OpInfo {
	return row(name, ClassTileScalar, PipeV, kinds(tile, tile, imm), rule, doc)
}
func vreduce(name, doc string) OpInfo {
	return row(name, ClassReduce, PipeV, kinds(tile, tile), ruleReduce, doc)
}
func vexpand(name, rule, doc string) OpInfo {
	return row(name, ClassBroadcast, PipeV, kinds(tile, tile, tile), rule, doc)
}
func vother(name string, operands []OperandKind, rule, doc string) OpInfo {
	return row(name, ClassOther, PipeV, operands, rule, doc)
}
func sop(name string, operands []OperandKind, rule, doc string) OpInfo {
	return row(name, ClassScalar, PipeS, operands, rule, doc)
}

// Type rules shared by several rows (verify_ops.go implements each).
const (
	ruleSame      = "Vec; every operand has dst's rows, cols and dtype"
	ruleNumeric   = "Vec; every operand has dst's rows, cols and dtype; numeric (not bool)"
	ruleFloat     = "Vec; every operand has dst's rows, cols and dtype; f32, f16 or bf16"
	ruleIntDiv    = "Vec; every operand has dst's rows, cols and dtype; numeric"
	ruleBitwise   = "Vec; every operand has dst's rows, cols and dtype; i8, i32 or bool"
	ruleShift     = "Vec; every operand has dst's rows, cols and dtype; i8 or i32"
	ruleScalar    = "Vec; src has dst's rows, cols and dtype; numeric; s an integer in the dtype's range for integer dtypes"
	ruleScalarF   = "Vec; src has dst's rows, cols and dtype; f32, f16 or bf16"
	ruleScalarBit = "Vec; src has dst's rows, cols and dtype; i8, i32 or bool; s an integer in the dtype's range"
	ruleScalarSh  = "Vec; src has dst's rows, cols and dtype; i8 or i32; s an integer"
	ruleReduce    = "Vec; dst.dtype == src.dtype, numeric; row reductions: dst.rows == src.rows (a rows x 1 DN tile fits); column reductions: dst.cols == src.cols"
	ruleRowExpand = "Vec; a has dst's rows, cols and dtype; b has dst's rows and dtype (any cols); numeric"
	ruleColExpand = "Vec; a has dst's rows, cols and dtype; b has dst's cols and dtype (any rows); numeric"
	ruleMatmul    = "dst Acc, a Left, b Right; a.dtype == b.dtype; a.cols == b.rows; dst is a.rows x b.cols; f16/bf16/f32 -> f32 Acc, i8 -> i32 Acc"
	ruleCompare   = "Vec; a and b have equal rows, cols and dtype, numeric; mask i8 with a's rows and mask.cols*8 >= a.cols"
	ruleScalarOp  = "d a register; scalar operands are registers or integer immediates with |x| <= 2^53"
	ruleQueue     = "q an integer in [0, NumQueues)"
)

// Opcodes is the opcode table, indexed by Opcode. Conventions of the Doc column:
// instructions compute in float64 and round once to dst's dtype (integers: exact
// integer arithmetic, then wrap to the dtype's width), except float sums and products
// of the reductions, which accumulate in fp32 in the vector unit's order (ReduceLanes);
// unless a row says otherwise a
// vector instruction computes dst's valid region and leaves the rest of dst unchanged;
// `flat` is the row-major index over a tile's rows x cols.
var Opcodes = [numOpcodes]OpInfo{
	OpInvalid: {Name: "invalid"},

	TLOAD: row("tload", ClassMemory, PipeMTE2, kinds(tile, gm),
		"dst in Mat or Vec; param dtype == dst dtype (the DMA does not convert); the window fits dst's rows x cols and lies inside the param",
		"dst = src: copy a GM window into a tile; tile elements outside the window are set to zero (the whole tile is written)"),
	TSTORE: withModes(routed("tstore", ClassMemory, kinds(gm, tile),
		"src in Vec with param dtype == src dtype, or in Acc (f32 -> f32, f16 or bf16; i32 -> i32); the window fits src and lies inside the param and writes no element twice",
		"dst = src: copy the top-left window of a tile to GM, converting to the GM dtype (rounding to nearest even); from Vec on MTE3, from Acc on FIX; .add adds the tile into GM (atomic add) instead of overwriting; .relu (from Acc only) stores max(src, 0), NaN staying NaN, the fixpipe's activation stage"),
		false, storeModes),
	TSTORE_FP: row("tstore.fp", ClassMemory, PipeFIX, kinds(gm, tile, tile),
		"src in Acc; fp in Scaling, f32, with fp.cols == src.cols; any numeric param dtype; window rules of tstore",
		"dst = convert(src[r,c] * fp[0,c]): store an Acc tile through the fixpipe with a per-column scale (quantisation); integer results round to nearest even and saturate"),
	TPREFETCH: row("tprefetch", ClassMemory, PipeMTE2, kinds(gm),
		"the window lies inside the param",
		"hint that the GM window will be loaded soon (warms the cache); no effect on values"),
	MGATHER: row("mgather", ClassMemory, PipeMTE2, kinds(tile, gm, tile),
		"dst in Vec with param dtype == dst dtype; idx in Vec, i32, with dst's rows and cols; the window lies inside the param; at run time 0 <= idx < window rows*cols",
		"dst[r,c] = window.flat[idx[r,c]] over dst's valid region: gather GM elements by index, flat index i naming window element (i / cols, i % cols)"),
	MSCATTER: withModes(row("mscatter", ClassMemory, PipeMTE3, kinds(gm, tile, tile),
		"src in Vec with param dtype == src dtype; idx in Vec, i32, with src's rows and cols; the window lies inside the param; at run time 0 <= idx < window rows*cols",
		"window.flat[idx[r,c]] = src[r,c] over src's valid region in row-major order (a later duplicate index wins); .add adds src[r,c] into GM (atomic add, each add rounded to the GM dtype, so duplicates sum in that order)"),
		false, []Mode{AtomicAdd}),

	TMATMUL: row("tmatmul", ClassMatrix, PipeM, kinds(tile, tile, tile), ruleMatmul,
		"dst = a @ b: Left x Right -> Acc over dst's valid region with k < a's valid cols, products accumulated in fp32 (int32 for int8)"),
	TMATMUL_ACC: row("tmatmul.acc", ClassMatrix, PipeM, kinds(tile, tile, tile), ruleMatmul,
		"dst += a @ b: accumulate into an Acc tile"),
	TMATMUL_BIAS: row("tmatmul.bias", ClassMatrix, PipeM, kinds(tile, tile, tile, tile),
		ruleMatmul+"; bias in Bias with dst's dtype and bias.cols == dst.cols",
		"dst = a @ b + bias[0,c]: matmul with a bias row from the bias table"),
	TMATMUL_MX: row("tmatmul.mx", ClassMatrix, PipeM, kinds(tile, tile, tile, tile, tile),
		"operands dst, a, as, b, bs: as tmatmul but dst is f32 for every operand dtype; a.cols % 32 == 0; as and bs in Scaling, f32; as is a.rows x a.cols/32, bs is b.rows/32 x b.cols",
		"dst = (a*as) @ (b*bs): matmul of block-scaled (MX) operands, as[m, k/32] scaling row m of a and bs[k/32, n] column n of b in each block of 32 k"),
	TGEMV: row("tgemv", ClassMatrix, PipeM, kinds(tile, tile, tile), ruleMatmul,
		"dst[0,:] = a[0,:] @ b: matrix-vector product of a's first row; the other rows of dst are unchanged"),
	TGEMV_ACC: row("tgemv.acc", ClassMatrix, PipeM, kinds(tile, tile, tile), ruleMatmul,
		"dst[0,:] += a[0,:] @ b"),
	TGEMV_BIAS: row("tgemv.bias", ClassMatrix, PipeM, kinds(tile, tile, tile, tile),
		ruleMatmul+"; bias in Bias with dst's dtype and bias.cols == dst.cols",
		"dst[0,:] = a[0,:] @ b + bias[0,:]"),
	TGEMV_MX: row("tgemv.mx", ClassMatrix, PipeM, kinds(tile, tile, tile, tile, tile),
		"as tmatmul.mx",
		"dst[0,:] = (a[0,:]*as[0,:]) @ (b*bs), block scales as in tmatmul.mx"),

	TMOV: routed("tmov", ClassMove, kinds(tile, tile),
		"Mat -> Left, Right, Bias or Scaling with equal dtypes; Acc -> Vec and Vec -> Vec may convert; equal rows and cols",
		"dst = src: copy a whole tile between locations (Mat->Left/Right/Bias/Scaling on MTE1, Acc->Vec on FIX, Vec->Vec on V), converting dtype if they differ"),
	TMOV_FP: row("tmov.fp", ClassMove, PipeFIX, kinds(tile, tile, tile),
		"dst in Vec, src in Acc, equal rows and cols, dst numeric; fp in Scaling, f32, with fp.cols == src.cols",
		"dst = convert(src[r,c] * fp[0,c]): Acc -> Vec through the fixpipe with a per-column scale; integer results round to nearest even and saturate (the whole tile)"),
	TEXTRACT: row("textract", ClassMove, PipeMTE1, kinds(tile, tile, imm, imm),
		"Mat -> Left/Right with equal dtypes; row and col are non-negative integers and the dst-sized window at (row, col) lies inside src",
		"dst = src[row:row+dst.rows, col:col+dst.cols]: copy a sub-tile of a Mat tile into Left/Right"),
	TINSERT: routed("tinsert", ClassMove, kinds(tile, tile, imm, imm),
		"Acc -> Mat (f32 -> f32, f16 or bf16; i32 -> i32) or Vec -> Vec (equal dtypes); row and col are non-negative integers and src's window at (row, col) lies inside dst",
		"dst[row:row+src.rows, col:col+src.cols] = src: write a whole tile into a window of a larger one (Acc->Mat on FIX, converting as the fixpipe does; Vec->Vec on V); the rest of dst is unchanged"),
	TRESHAPE: row("treshape", ClassMove, PipeS, kinds(tile, tile),
		"same location; both ND; equal byte sizes (rows*cols*size)",
		"dst = src's bytes seen with dst's dtype and shape (a reinterpretation: no data moves on hardware)"),
	TTRANS: row("ttrans", ClassMove, PipeV, kinds(tile, tile),
		"Vec; equal dtypes; dst is src.cols x src.rows",
		"dst[r,c] = src[c,r] over dst's valid region"),
	TIMG2COL: row("timg2col", ClassMove, PipeMTE1, kinds(tile, tile, imm, imm, imm, imm, imm, imm, imm, imm),
		"operands dst, src, W, kh, kw, s, pl, pr, pt, oh: dst in Left, src in Mat, equal dtypes; W, kh, kw, s, oh >= 1 and pl, pr, pt >= 0 integers; src.rows % W == 0; W' = (W+pl+pr-kw)/s+1 >= 1; dst.rows >= oh*W', dst.cols >= kh*kw*C for C = src.cols",
		"dst[r*W'+ow, (i*kw+j)*C+ch] = src[y*W+x, ch] with y = r*s-pt+i, x = ow*s-pl+j, for r < oh, 0 where (y, x) is outside the H x W image (H = src.rows/W): im2col of the pixels of an image stored pixel-major (one pixel of C channels a row) for a kh x kw kernel, stride s, pl and pr columns of padding left and right, pt rows of padding above, and oh rows of output positions (the load3d form: the image may be a band of rows, padded only at the image's edges); the rest of dst is zero"),
	TFILLPAD: row("tfillpad", ClassMove, PipeV, kinds(tile, tile, imm), ruleSame,
		"dst = src inside src's valid region and v everywhere else (the whole tile): pad an edge tile, e.g. with -Inf before a row max"),
	TASSIGN: row("tassign", ClassMove, PipeS, kinds(tile, imm),
		"addr a non-negative integer, a multiple of the location's alignment (Vec, Mat, Scaling 32; Left, Right 512; Acc, Bias 64); with a capacity, addr + bytes fits the buffer",
		"bind the tile to byte address addr of its buffer (manual mode); no effect on values in the reference, which keeps tiles apart"),

	TADD:   vbin("tadd", ruleSame, "dst = a + b elementwise, rounded to dst's dtype"),
	TSUB:   vbin("tsub", ruleNumeric, "dst = a - b"),
	TMUL:   vbin("tmul", ruleSame, "dst = a * b elementwise, rounded to dst's dtype"),
	TDIV:   vbin("tdiv", ruleIntDiv, "dst = a / b (integers: truncated toward zero; an integer division by zero is an error)"),
	TMIN:   vbin("tmin", ruleNumeric, "dst = min(a, b) (NaN if either is NaN)"),
	TMAX:   vbin("tmax", ruleNumeric, "dst = max(a, b) (NaN if either is NaN)"),
	TREM:   vbin("trem", ruleIntDiv, "dst = a - floor(a/b)*b, the remainder with the sign of b (numpy remainder; an integer division by zero is an error)"),
	TFMOD:  vbin("tfmod", ruleIntDiv, "dst = fmod(a, b), the remainder with the sign of a (C fmod; an integer division by zero is an error)"),
	TABS:   vun("tabs", ruleNumeric, "dst = |a| (integers wrap: |min| = min)"),
	TNEG:   vun("tneg", ruleNumeric, "dst = -a (integers wrap)"),
	TEXP:   vun("texp", ruleFloat, "dst = e^a"),
	TLOG:   vun("tlog", ruleFloat, "dst = ln a (NaN below 0, -Inf at 0)"),
	TSQRT:  vun("tsqrt", ruleFloat, "dst = sqrt(a)"),
	TRSQRT: vun("trsqrt", ruleFloat, "dst = 1 / sqrt(a)"),
	TRECIP: vun("trecip", ruleFloat, "dst = 1 / a"),
	TRELU:  vun("trelu", ruleSame, "dst = max(a, 0) elementwise (NaN stays NaN)"),
	TPRELU: vbin("tprelu", ruleFloat, "dst = a if a > 0 else a * b (per-element slope b)"),
	TAND:   vbin("tand", ruleBitwise, "dst = a & b (two's complement bits)"),
	TOR:    vbin("tor", ruleBitwise, "dst = a | b"),
	TXOR:   vbin("txor", ruleBitwise, "dst = a ^ b"),
	TNOT:   vun("tnot", ruleBitwise, "dst = ^a (bool: !a)"),
	TSHL:   vbin("tshl", ruleShift, "dst = a << b, wrapping to the dtype; 0 when b is outside [0, bits)"),
	TSHR:   vbin("tshr", ruleShift, "dst = a >> b, arithmetic (sign-filling); when b is outside [0, bits), -1 for negative a and 0 otherwise"),
	TCMP: withModes(row("tcmp", ClassElementwise, PipeV, kinds(tile, tile, tile), ruleCompare,
		"bit c%8 of mask[r, c/8] = (a[r,c] pred b[r,c]) for (r, c) in a's valid region, pred one of .eq .ne .lt .le .gt .ge (false on NaN except ne); other bits unchanged: a packed mask"),
		true, compareModes),
	TSEL: row("tsel", ClassElementwise, PipeV, kinds(tile, tile, tile, tile),
		"operands dst, mask, a, b: Vec; a and b have dst's rows, cols and dtype; mask i8 with dst's rows and mask.cols*8 >= dst.cols",
		"dst = a where bit c%8 of mask[r, c/8] is set, else b"),
	TADDC: row("taddc", ClassElementwise, PipeV, kinds(tile, tile, tile, tile), ruleNumeric, "dst = a + b + c, rounded once"),
	TSUBC: row("tsubc", ClassElementwise, PipeV, kinds(tile, tile, tile, tile), ruleNumeric, "dst = a - b + c, rounded once"),
	TCVT: withModes(row("tcvt", ClassElementwise, PipeV, kinds(tile, tile),
		"Vec; equal rows and cols (the dtypes may differ)",
		"dst = convert(src): round to nearest even for float results, truncate toward zero for integer results; a mode (.rint .round .floor .ceil .trunc .odd) rounds that way instead; integer results wrap to the dtype"),
		false, roundingModes),

	TADDS:  vscalar("tadds", ruleScalar, "dst = a + s"),
	TSUBS:  vscalar("tsubs", ruleScalar, "dst = a - s"),
	TMULS:  vscalar("tmuls", ruleScalar, "dst = a * s"),
	TDIVS:  vscalar("tdivs", ruleScalar, "dst = a / s (integers as tdiv)"),
	TMINS:  vscalar("tmins", ruleScalar, "dst = min(a, s)"),
	TMAXS:  vscalar("tmaxs", ruleScalar, "dst = max(a, s)"),
	TFMODS: vscalar("tfmods", ruleScalar, "dst = fmod(a, s)"),
	TREMS:  vscalar("trems", ruleScalar, "dst = a - floor(a/s)*s"),
	TANDS:  vscalar("tands", ruleScalarBit, "dst = a & s"),
	TORS:   vscalar("tors", ruleScalarBit, "dst = a | s"),
	TXORS:  vscalar("txors", ruleScalarBit, "dst = a ^ s"),
	TSHLS:  vscalar("tshls", ruleScalarSh, "dst = a << s (as tshl)"),
	TSHRS:  vscalar("tshrs", ruleScalarSh, "dst = a >> s (as tshr)"),
	TLRELU: vscalar("tlrelu", ruleScalarF, "dst = a if a > 0 else a * s (leaky relu)"),
	TCMPS: withModes(row("tcmps", ClassTileScalar, PipeV, kinds(tile, tile, imm),
		"Vec; a numeric; mask i8 with a's rows and mask.cols*8 >= a.cols",
		"bit c%8 of mask[r, c/8] = (a[r,c] pred s) for (r, c) in a's valid region, pred as in tcmp"),
		true, compareModes),
	TSELS: row("tsels", ClassTileScalar, PipeV, kinds(tile, tile, tile, imm),
		"operands dst, mask, a, s: Vec; a has dst's rows, cols and dtype; mask i8 with dst's rows and mask.cols*8 >= dst.cols",
		"dst = a where bit c%8 of mask[r, c/8] is set, else s"),
	TEXPANDS: row("texpands", ClassTileScalar, PipeV, kinds(tile, imm),
		"Vec; s an integer in range for integer dtypes",
		"dst = s: fill dst's valid region with a scalar"),

	TROWSUM:  vreduce("trowsum", "dst[r,0] = sum of src[r,c] over c < src's valid cols, for r < src's valid rows (fp32 in 64 lanes, k to lane k%64, then a pairwise fold of the lanes; rounded once to dst)"),
	TROWPROD: vreduce("trowprod", "dst[r,0] = product of src[r,c] over c < src's valid cols, for r < src's valid rows (fp32, in trowsum's order)"),
	TROWMAX:  vreduce("trowmax", "dst[r,0] = max of src[r,c] over c < src's valid cols, for r < src's valid rows (NaN if any is NaN)"),
	TROWMIN:  vreduce("trowmin", "dst[r,0] = min of src[r,c] over c < src's valid cols, for r < src's valid rows"),
	TCOLSUM:  vreduce("tcolsum", "dst[0,c] = sum of src[r,c] over r < src's valid rows, for c < src's valid cols (fp32, adding the rows in order)"),
	TCOLPROD: vreduce("tcolprod", "dst[0,c] = product of src[r,c] over r < src's valid rows, for c < src's valid cols (fp32, multiplying the rows in order)"),
	TCOLMAX:  vreduce("tcolmax", "dst[0,c] = max of src[r,c] over r < src's valid rows, for c < src's valid cols"),
	TCOLMIN:  vreduce("tcolmin", "dst[0,c] = min of src[r,c] over r < src's valid rows, for c < src's valid cols"),

	TROWEXPAND: row("trowexpand", ClassBroadcast, PipeV, kinds(tile, tile),
		"Vec; src has dst's rows and dtype (any cols)", "dst[r,c] = src[r,0]: broadcast a column along the rows"),
	TROWEXPANDADD: vexpand("trowexpandadd", ruleRowExpand, "dst[r,c] = a[r,c] + b[r,0]"),
	TROWEXPANDSUB: vexpand("trowexpandsub", ruleRowExpand, "dst[r,c] = a[r,c] - b[r,0]"),
	TROWEXPANDMUL: vexpand("trowexpandmul", ruleRowExpand, "dst[r,c] = a[r,c] * b[r,0]"),
	TROWEXPANDDIV: vexpand("trowexpanddiv", ruleRowExpand, "dst[r,c] = a[r,c] / b[r,0]"),
	TROWEXPANDMAX: vexpand("trowexpandmax", ruleRowExpand, "dst[r,c] = max(a[r,c], b[r,0])"),
	TROWEXPANDMIN: vexpand("trowexpandmin", ruleRowExpand, "dst[r,c] = min(a[r,c], b[r,0])"),
	TROWEXPANDEXPDIF: vexpand("trowexpandexpdif", ruleRowExpand+"; float",
		"dst[r,c] = exp(d) with d = a[r,c] - b[r,0] rounded to the dtype (the vector unit's subtract, then its exponential): the core of (online) softmax"),
	TCOLEXPAND: row("tcolexpand", ClassBroadcast, PipeV, kinds(tile, tile),
		"Vec; src has dst's cols and dtype (any rows)", "dst[r,c] = src[0,c]: broadcast a row down the columns"),
	TCOLEXPANDADD: vexpand("tcolexpandadd", ruleColExpand, "dst[r,c] = a[r,c] + b[0,c]"),
	TCOLEXPANDSUB: vexpand("tcolexpandsub", ruleColExpand, "dst[r,c] = a[r,c] - b[0,c]"),
	TCOLEXPANDMUL: vexpand("tcolexpandmul", ruleColExpand, "dst[r,c] = a[r,c] * b[0,c]"),
	TCOLEXPANDDIV: vexpand("tcolexpanddiv", ruleColExpand, "dst[r,c] = a[r,c] / b[0,c]"),
	TCOLEXPANDMAX: vexpand("tcolexpandmax", ruleColExpand, "dst[r,c] = max(a[r,c], b[0,c])"),
	TCOLEXPANDMIN: vexpand("tcolexpandmin", ruleColExpand, "dst[r,c] = min(a[r,c], b[0,c])"),
	TCOLEXPANDEXPDIF: vexpand("tcolexpandexpdif", ruleColExpand+"; float",
		"dst[r,c] = exp(d) with d = a[r,c] - b[0,c] rounded to the dtype"),

	TGATHER: vother("tgather", kinds(tile, tile, tile),
		"operands dst, src, idx: Vec; dst.dtype == src.dtype; idx i32 with dst's rows and cols; at run time 0 <= idx < src.rows*src.cols",
		"dst[r,c] = src.flat[idx[r,c]]"),
	TGATHERB: vother("tgatherb", kinds(tile, tile, tile),
		"operands dst, src, off: Vec; dst.dtype == src.dtype; off i32 with dst's rows and cols; at run time off is a multiple of the element size inside src's bytes",
		"dst[r,c] = the element of src at byte offset off[r,c] (in the row-major order of src)"),
	TSCATTER: vother("tscatter", kinds(tile, tile, tile),
		"operands dst, src, idx: Vec; dst.dtype == src.dtype; idx i32 with src's rows and cols; at run time 0 <= idx < dst.rows*dst.cols",
		"dst.flat[idx[r,c]] = src[r,c] over src's valid region in row-major order (a later duplicate wins); the rest of dst is unchanged"),
	TSORT32: vother("tsort32", kinds(tile, tile, tile),
		"operands dst, src, idx: Vec; src f32 with src.cols % 32 == 0; idx i32 with src's rows and cols; dst f32, src.rows x 2*src.cols",
		"in each row, sort each block of 32 (src, idx) pairs by value, descending and stable, and write them as dst[r, 2j] = value, dst[r, 2j+1] = index (the whole tile)"),
	TMRGSORT: vother("tmrgsort", kinds(tile, tile, imm),
		"Vec; dst and src f32 with equal rows and cols; cols even; n a positive integer dividing cols/2",
		"merge each group of 4 consecutive runs of n (value, index) pairs of a src row, each sorted descending, into one descending run in dst (stable: earlier runs first on ties; a last group may hold fewer runs)"),
	TCI: row("tci", ClassOther, PipeS, kinds(tile, imm, imm),
		"Vec; numeric; start and step integers for integer dtypes",
		"dst[r,c] = start + flat(r,c) * step over dst's valid region: an index sequence in row-major order"),
	TTRI: withModes(vother("ttri", kinds(tile, imm),
		"Vec; numeric; d an integer",
		"dst[r,c] = 1 if c - r <= d else 0 (a lower triangle with diagonal offset d); .upper: 1 if c - r >= d else 0"),
		false, triangleModes),
	TPARTADD: vother("tpartadd", kinds(tile, tile, tile), ruleNumeric,
		"over dst's valid region: dst = a + b where (r, c) is in both a's and b's valid regions, a or b where only that one is valid; unchanged where neither is"),
	TPARTMUL: vother("tpartmul", kinds(tile, tile, tile), ruleNumeric, "as tpartadd with a * b"),
	TPARTMAX: vother("tpartmax", kinds(tile, tile, tile), ruleNumeric, "as tpartadd with max(a, b)"),
	TPARTMIN: vother("tpartmin", kinds(tile, tile, tile), ruleNumeric, "as tpartadd with min(a, b)"),
	TQUANT: vother("tquant", kinds(tile, tile, tile, tile),
		"operands dst, src, scale, offset: Vec; dst i8 or i32 with src's rows and cols; src float; scale and offset f32 with src's rows",
		"dst = saturate(rint(src[r,c] * scale[r,0] + offset[r,0])): quantise with a per-row scale and offset"),
	TDEQUANT: vother("tdequant", kinds(tile, tile, tile, tile),
		"operands dst, src, scale, offset: Vec; dst float with src's rows and cols; src i8 or i32; scale and offset f32 with src's rows",
		"dst = (src[r,c] - offset[r,0]) * scale[r,0]"),
	TPRINT: row("tprint", ClassOther, PipeS, kinds(tile),
		"any tile", "print the tile's valid region (debugging); no effect on values"),

	TPUSH: routed("tpush", ClassQueue, kinds(imm, tile),
		ruleQueue+"; src in Acc (on FIX) or Vec (on MTE3)",
		"push a copy of src into queue q, a FIFO of QueueDepth slots from the cube to the vector cores of a block or back; waits while every slot is taken"),
	TPOP: row("tpop", ClassQueue, PipeMTE2, kinds(tile, imm),
		ruleQueue+"; dst in Mat or Vec; at run time the entry has dst's rows and cols",
		"dst = the oldest unpopped entry of queue q, converted to dst's dtype (nearest even); waits while there is none; its slot stays taken until tfree"),
	TFREE: row("tfree", ClassQueue, PipeS, kinds(imm),
		ruleQueue+"; at run time a popped entry is held",
		"release the oldest popped slot of queue q to the producer"),

	SET_FLAG: {Name: "set_flag", Class: ClassSync, Operands: kinds(pipe, pipe, imm), PipeClass: PipeClassFlagSource,
		Rule: "two distinct pipes, neither all; id an integer in [0, NumEventIDs); set and wait pair up (see Events)",
		Doc:  "set event id from pipe src to pipe dst once every earlier src instruction has finished"},
	WAIT_FLAG: {Name: "wait_flag", Class: ClassSync, Operands: kinds(pipe, pipe, imm), PipeClass: PipeClassFlagDest,
		Rule: "as set_flag",
		Doc:  "block pipe dst until event id from src has been set, then consume it"},
	TSYNC: {Name: "tsync", Class: ClassSync, Operands: kinds(pipe), PipeClass: PipeClassBarrier,
		Rule: "a pipe, or all",
		Doc:  "barrier: later instructions of the pipe (or of every pipe, for 'all') wait for earlier ones to finish"},

	SMOV: sop("smov", kinds(reg, scalar), ruleScalarOp, "d = x"),
	SADD: sop("sadd", kinds(reg, scalar, scalar), ruleScalarOp, "d = a + b (64-bit, wrapping)"),
	SSUB: sop("ssub", kinds(reg, scalar, scalar), ruleScalarOp, "d = a - b"),
	SMUL: sop("smul", kinds(reg, scalar, scalar), ruleScalarOp, "d = a * b"),
	SDIV: sop("sdiv", kinds(reg, scalar, scalar), ruleScalarOp, "d = a / b truncated toward zero (division by zero is an error)"),
	SREM: sop("srem", kinds(reg, scalar, scalar), ruleScalarOp, "d = a - (a/b)*b, the sign of a (division by zero is an error)"),
	SMIN: sop("smin", kinds(reg, scalar, scalar), ruleScalarOp, "d = min(a, b)"),
	SMAX: sop("smax", kinds(reg, scalar, scalar), ruleScalarOp, "d = max(a, b)"),
	SLD: sop("sld", kinds(reg, gm),
		"d a register; the window is 1x1 in an i8 or i32 param",
		"d = the integer in the 1x1 GM window (a dynamic size or offset passed in GM)"),
	LOOP: sop("loop", kinds(reg, scalar),
		"i a register; count a register or an integer >= 0; a matching endloop follows; the body does not write i",
		"run the instructions up to the matching endloop count times with i = 0, 1, ..., count-1; count is read once, on entry (0 skips the body)"),
	ENDLOOP: sop("endloop", kinds(),
		"closes the innermost open loop",
		"end of the loop body: i += 1 and repeat while i < count"),
}
