package lower

import (
	"fmt"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// Split-K: when a matmul has fewer output tiles than the chip has cube cores and K is
// long, the tile search may cut K into chunks (tile [.., kc] with kc < k, grid
// [batch, m/tm, n/tn, k/kc]). Each grid point then computes one chunk's partial
// product into an fp32 (int32 for int8) workspace [chunks, batch..., m, n] and a
// vector reduction over its leading axis adds the partials and casts the sum to the
// result's dtype. Adding in the accumulator's dtype keeps the numerics of one long
// accumulation: fp32 sums rounded once to the output.

// matmulProblemOf is what the tiling of a matmul tile op depends on.
func matmulProblemOf(op *TileOp, tensors []GMTensor) matmulProblem {
	a, b := tensors[op.Inputs[0]].Type, tensors[op.Inputs[1]].Type
	return matmulProblem{
		dt: a.DType, out: tensors[op.Output].Type.DType,
		batch: op.Problem[0], m: op.Problem[1], n: op.Problem[2], k: op.Problem[3],
		aMatrices: a.Shape[:len(a.Shape)-2].NumElements(), bMatrix: b.Shape[:len(b.Shape)-2].NumElements(),
		transA: op.Attrs.Bool("transpose_a", false), transB: op.Attrs.Bool("transpose_b", false),
		wholeK: op.Kind == TileMatmulEpilogue,
	}
}

// splitKSum redirects a matmul whose tiling splits K to a workspace of partial
// products and returns the reduction that adds them into the matmul's output; nil
// when K is not split.
func splitKSum(tg *TileGraph, op *TileOp, chip *device.Chip) (*TileOp, error) {
	if op.Kind != TileMatmul || op.Grid[3] <= 1 {
		return nil, nil
	}
	out := tg.Tensors[op.Output]
	ws := GMTensor{Value: out.Value, Role: RoleTemp, Type: core.TensorType{
		DType: accType(tg.Tensors[op.Inputs[0]].Type.DType),
		Shape: append(core.Shape{op.Grid[3]}, out.Type.Shape...),
	}}
	tg.Tensors = append(tg.Tensors, ws)
	sum := &TileOp{Node: op.Node, Op: "sum", Kind: TileReduce, Core: isa.Vector, Loc: op.Loc,
		Attrs: core.Attrs{"axis": []int64{0}}, Inputs: []int{len(tg.Tensors) - 1}, Output: op.Output}
	op.Output = len(tg.Tensors) - 1
	if err := chooseTiling(sum, tg.Tensors, Options{Chip: chip}); err != nil {
		return nil, err
	}
	if sum.Problem[2] == 1 {
		// One output element (a [1, k] x [k, 1] product): the sum is a reduction
		// along a row of chunks, tiled by the row rule as it stands.
		return sum, nil
	}
	// The reduction rule makes rows as wide as the UB allows; here the rows are few
	// (one per chunk) and the columns many, so narrow the tiles until every vector
	// core gets some (32 columns keep rows whole 32-byte blocks for any dtype), with
	// as many rows as the bytes of the wide tile held.
	tr, tc := sum.Tile[0], sum.Tile[1]
	narrow := min(tc, roundUp(ceilDiv(sum.Problem[2], chip.VectorCores), 32))
	sum.Tile = []int{min(sum.Problem[1], tr*tc/narrow), narrow}
	sum.Grid = tileGrid(sum.Kind, sum.Problem, sum.Tile)
	sum.Reason = fmt.Sprintf("adds the split-K partial products in tiles of %d columns for %d vector cores; %s", narrow, chip.VectorCores, sum.Reason)
	return sum, nil
}

// verifyMatmulOutput checks that a matmul writes an m x n result, or with K split
// (only without an epilogue) a workspace of partial products: [chunks, ..., m, n] in
// the accumulator's dtype.
func verifyMatmulOutput(op *TileOp, out core.TensorType) error {
	s, chunks := out.Shape, op.Grid[3]
	if len(s) < 2 || s[len(s)-2] != op.Problem[1] || s[len(s)-1] != op.Problem[2] {
		return fmt.Errorf("a matmul of problem %v writes %s, not an m x n result", op.Problem, out)
	}
	if chunks > 1 && (op.Kind != TileMatmul || len(s) < 3 || s[0] != chunks || (out.DType != dtype.Float32 && out.DType != dtype.Int32)) {
		return fmt.Errorf("a %s split in %d K chunks writes a workspace [%d, ..., m, n] of f32 or i32 partial products, not %s", op.Kind, chunks, chunks, out)
	}
	return nil
}
