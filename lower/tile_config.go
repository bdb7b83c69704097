package lower

import (
	"fmt"
	"strings"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// A Tile-level program may fix the tile of an op's kernel (core.AttrTileShape, from
// Python's p.TileConfig). chooseTiling honours it where the kernel has a free tile:
// matmuls ([tm, tn, tk] and optionally stepK and the K chunk kc, checked by
// matmulTiling.fits), elementwise and reduction kernels ([rows, cols]) and row kernels
// ([rows] of whole rows). A tile that does not fit the chip is a CompileError naming
// the buffer it overflows; one that is larger than the problem is cut to it. The
// reason in the dumps starts with "given".

// userTileShape reads op's tile attributes: the shape (nil when none is given) after
// checking the format the kernels can keep.
func userTileShape(op *TileOp) ([]int, error) {
	shape := op.Attrs.Ints(core.AttrTileShape)
	format := strings.ToUpper(op.Attrs.Str(core.AttrTileFormat, ""))
	switch format {
	case "", "ND":
	case "NZ":
		if op.Kind != TileMatmul && op.Kind != TileMatmulEpilogue {
			return nil, fmt.Errorf("tile format NZ: %s runs on the vector cores, which compute on ND (row-major) tiles; use format ND", op.Op)
		}
		// Matmul tiles are whole 16x16 fractals in every cube buffer (checked by fits).
	default:
		return nil, fmt.Errorf("tile format %q is not one the kernels keep: use ND or NZ", format)
	}
	if len(shape) == 0 {
		return nil, nil
	}
	for _, d := range shape {
		if d <= 0 {
			return nil, fmt.Errorf("tile shape %v has a non-positive size", shape)
		}
	}
	return shape, nil
}

// userMatmulTiling is the user's matmul tiling, nil when none is given: [tm, tn, tk],
// stepK (default 1) and kc (default: K whole), cut to the problem.
func userMatmulTiling(op *TileOp, p matmulProblem) (*matmulTiling, error) {
	shape, err := userTileShape(op)
	if shape == nil || err != nil {
		return nil, err
	}
	if len(shape) < 3 || len(shape) > 5 {
		return nil, fmt.Errorf("a matmul tile is [tm, tn, tk] (optionally stepK and kc), not %v", shape)
	}
	ka, na := kAlign(p.dt), nAlign(p.dt)
	t := matmulTiling{
		tm: min(shape[0], roundUp(max(p.m, 1), cubeAlign)), tn: min(shape[1], roundUp(max(p.n, 1), na)),
		tk: min(shape[2], roundUp(max(p.k, 1), ka)), stepK: 1, kc: max(p.k, 1),
	}
	if len(shape) > 3 {
		t.stepK = shape[3]
	}
	if len(shape) > 4 && shape[4] < p.k {
		if p.wholeK {
			return nil, fmt.Errorf("matmul tile %v splits K, but this matmul needs whole sums (for its epilogue, or a deterministic compilation): drop kc", shape)
		}
		if shape[4]%t.stageK() != 0 {
			return nil, fmt.Errorf("matmul tile %v: the K chunk kc=%d must be a multiple of the stage depth tk*stepK=%d", shape, shape[4], t.stageK())
		}
		t.kc = shape[4]
	}
	return &t, nil
}

// applyUserVectorTile replaces a vector kernel's tile by the user's, when given, after
// checking it against the chip; auto is the compiler's own choice, for the messages.
func applyUserVectorTile(chip *device.Chip, op *TileOp, tensors []GMTensor) error {
	if op.Kind == TileMatmul || op.Kind == TileMatmulEpilogue || op.Kind == TileConv || op.Kind == TileConvEpilogue {
		return nil // chooseTiling took the user's cube tile
	}
	shape, err := userTileShape(op)
	if shape == nil || err != nil {
		return err
	}
	var fit func(rows, cols int) ([]int, error)
	switch op.Kind {
	case TileElementwise:
		fit = func(rows, cols int) ([]int, error) {
			ins := make([]dtype.DType, len(op.Inputs))
			for i, in := range op.Inputs {
				ins[i] = tensors[in].Type.DType
			}
			t, _, err := elementwiseTiling(chip, op.Op, op.Attrs, ins, tensors[op.Output].Type.DType, rows, cols)
			return t, err
		}
	case TileReduce:
		in := tensors[op.Inputs[0]].Type.DType
		red, out := reductions[op.Op], tensors[op.Output].Type.DType
		rowReduction := op.Problem[2] == 1
		fit = func(rows, cols int) ([]int, error) {
			problem := []int{1, rows, cols} // a column reduction's tile: rows of r, columns of inner
			if rowReduction {
				problem = []int{rows, cols, 1} // rows of outer, columns of r
			}
			t, _, err := reduceTile(chip, red, in, out, problem)
			return t, err
		}
	case TileRows:
		return applyUserRowsTile(chip, op, shape)
	default:
		return fmt.Errorf("tile shape %v: the %s kernel of %s picks its own tile (a tile shape is taken by matmul, convolution, elementwise, reduction and row kernels)", shape, op.Kind, op.Op)
	}
	if len(shape) > 2 {
		for _, d := range shape[:len(shape)-2] {
			if d != 1 {
				return fmt.Errorf("tile shape %v: a %s kernel's tile is 2-D, [rows, cols] (leading sizes must be 1)", shape, op.Op)
			}
		}
		shape = shape[len(shape)-2:]
	}
	if len(shape) == 1 {
		shape = []int{1, shape[0]}
	}
	rows, cols := op.Problem[1], op.Problem[2]
	if op.Kind == TileReduce && op.Problem[2] == 1 {
		rows, cols = op.Problem[0], op.Problem[1]
	}
	align, err := fit(1, 1) // the narrowest tile: one aligned block
	if err != nil {
		return err
	}
	want := []int{min(shape[0], max(rows, 1)), min(shape[1], roundUp(max(cols, 1), align[1]))}
	if op.Kind == TileReduce && op.Problem[2] == 1 && want[0]%32 != 0 {
		return fmt.Errorf("tile shape %v of %s: a row reduction's tile rows must be a multiple of 32 (its per-row results fill whole 32-byte blocks)", shape, op.Op)
	}
	if want[1]%align[1] != 0 {
		return fmt.Errorf("tile shape %v of %s: tile columns must be whole 32-byte blocks of every dtype involved, a multiple of %d", shape, op.Op, align[1])
	}
	got, err := fit(want[0], want[1])
	if err != nil {
		return err
	}
	if got[0] != want[0] || got[1] != want[1] {
		return fmt.Errorf("tile shape %v of %s does not fit the %d-byte UB of chip %s (each live tile double-buffered): at most %v fits",
			shape, op.Op, chip.Capacity(isa.Vec), chip.Name, got)
	}
	op.Tile, op.Reason = want, givenReason(shape, want, chip)
	return nil
}

// applyUserRowsTile sets a row kernel's rows per tile: [rows] or [rows, cols] with
// cols the whole row the kernel loads.
func applyUserRowsTile(chip *device.Chip, op *TileOp, shape []int) error {
	p, err := rowsPlanOf(op.Attrs)
	if err != nil {
		return err
	}
	tc := op.Tile[1]
	if len(shape) > 2 || (len(shape) == 2 && shape[1] != p.cols && shape[1] != tc) {
		return fmt.Errorf("tile shape %v of %s: a row kernel loads whole rows, so its tile is [rows] or [rows, %d]", shape, op.Op, p.cols)
	}
	tr := min(shape[0], max(p.rows, 1))
	slots := op.Tile[2]
	if slots > 2 && rowsKernelBytes(p, tr, tc, slots) > chip.Capacity(isa.Vec) {
		slots = 2 // more rows than the compiler's choice may still fit with two slots
	}
	if bytes := rowsKernelBytes(p, tr, tc, slots); bytes > chip.Capacity(isa.Vec) {
		return fmt.Errorf("tile shape %v of %s: %d rows of %d need %d bytes of UB, chip %s has %d (the compiler's choice is %d rows)",
			shape, op.Op, tr, p.cols, bytes, chip.Name, chip.Capacity(isa.Vec), op.Tile[0])
	}
	for _, period := range p.period {
		if period > 0 && period%tr != 0 {
			return fmt.Errorf("tile shape %v of %s: an input repeats every %d rows, so the tile rows must divide %d", shape, op.Op, period, period)
		}
	}
	op.Tile, op.Reason = []int{tr, tc, slots}, givenReason(shape, []int{tr, tc}, chip)
	return nil
}

// givenReason is the dump's reason for a user's tile.
func givenReason(shape, tile []int, chip *device.Chip) string {
	if fmt.Sprint(shape) == fmt.Sprint(tile) {
		return fmt.Sprintf("given %v; fits chip %s", shape, chip.Name)
	}
	return fmt.Sprintf("given %v, cut to the problem: %v; fits chip %s", shape, tile, chip.Name)
}

// groupTileAttrs are the tile attributes a fused op of group takes: those of its last
// member (the result) when given, else of the latest member that has some, so a tile
// chosen for softmax reaches the row kernel its decomposition fuses into.
func groupTileAttrs(g *core.Graph, group []core.Value) core.Attrs {
	for i := len(group) - 1; i >= 0; i-- {
		if attrs := core.TileAttrs(g.Nodes[group[i]].Attrs); attrs != nil {
			return attrs
		}
	}
	return core.Attrs{}
}
