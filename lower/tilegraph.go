package lower

import (
	"fmt"
	"slices"
	"strings"

	"pypto/core"
	"pypto/isa"
)

// TensorRole says where a GM tensor of a compiled graph comes from.
type TensorRole uint8

const (
	RoleInput  TensorRole = iota // a graph parameter, written by the host before the run
	RoleOutput                   // a graph result, read by the host after the run
	RoleTemp                     // an intermediate in GM workspace
)

func (r TensorRole) String() string {
	return [...]string{"input", "output", "temp"}[r]
}

// GMTensor is a tensor that lives in global memory during a run.
type GMTensor struct {
	Value core.Value // the Tensor Graph value it holds
	Type  core.TensorType
	Role  TensorRole
	// Alias, when not 0, is 1 + the index of the tensor whose GM bytes this one views:
	// a reshape of a contiguous tensor holds the same bytes, so it gets no kernel and no
	// buffer of its own.
	Alias int
	// View, set on some aliases, maps this tensor's index to an element of the aliased
	// one (offset + sum of index_k * strides_k): a strided view (a folded slice or
	// transpose) that only matrix kernels read, binding the aliased tensor as their
	// param (see fold_views.go). Without it an alias is a contiguous reshape.
	View *affineMap
	// Pieces, on a packed tensor (pack_inputs.go), are the inputs it concatenates
	// along its first axis, placed one after another in GM; Alias names the first.
	Pieces []int
	// Weight marks an input whose bytes are the same in every run (a model's weights,
	// a folded constant): ops that read only weights run once (prepare_weights.go).
	Weight bool
}

// paramTensor is the tensor a kernel binds for input t: t, or the owner of a strided
// view.
func paramTensor(tensors []GMTensor, t int) int {
	if tensors[t].View != nil {
		return root(tensors, t)
	}
	return t
}

// root is the tensor that owns t's GM bytes: t, or the tensor it is an alias of.
func root(tensors []GMTensor, t int) int {
	if a := tensors[t].Alias; a > 0 {
		return a - 1
	}
	return t
}

// TileKind is the shape of the tile loop a tile op runs.
type TileKind uint8

const (
	// TileMatmul: per batch index, output tiles [tm, tn], each a loop over K in stages
	// of stepK base blocks of tk; K may be split into chunks of kc (one grid point each).
	TileMatmul      TileKind = iota
	TileElementwise          // output tiles [tr, tc] over the last two axes, one per leading index
	// TileReduce reduces the middle axis of a [outer, r, inner] view. With inner == 1
	// each tile is tr output rows, a loop over column tiles of tc (row reduction);
	// otherwise each tile is tc output columns of one outer index, a loop over row
	// tiles of tr (column reduction).
	TileReduce
	// TileScan runs a running sum along the middle axis of a [outer, a, inner] view.
	// Lanes are the positions across it: inner ones (tiles of tc along inner, per outer
	// index) or, when inner == 1, outer ones (tiles of tc along outer); each tile steps
	// through the a positions of its lanes in order.
	TileScan
	// TileSort sorts the rows of a [rows, n] view (the sorted axis last), padded to a
	// run length l = 32*4^m: tiles of tr rows, each sorted whole on chip.
	TileSort
	// TileMatmulEpilogue is a matmul whose output tiles pass through an elementwise
	// epilogue on the vector cores of the same AI core (a mixed task): tiles as
	// TileMatmul.
	TileMatmulEpilogue
	// TileRows runs a fused_rows op over the [rows, C] flattening of its row space:
	// tiles of tr whole rows, each computed on chip from one load of its rows.
	TileRows
	// TileAttention is a fused attention (flash_attention), a mixed task: problem
	// [batch, l, s, e, ev], tiles of br query rows of one batch index in chunks of hr,
	// each a loop over key blocks of bc, with copies UB buffers of scores (see
	// codegen_attention.go).
	TileAttention
	// TileKernel is a user's block-level kernel (call_kernel): problem [blocks], one
	// grid point per block, each running the user's program(s) for that block.
	TileKernel
	// TileUpdate stores an update into its result at offsets read when the program
	// runs (slice_update, in place): tiles over the update's [outer, rows, cols].
	TileUpdate
	// TileConv is a cube convolution (conv2d_5hd): problem [n, oh, ow, o, c1, kh, kw,
	// s, h, w, pt, pl, pr], tiles of rb output rows by tn output channels, grid [o/tn, n, oh/rb]
	// (see codegen_conv.go).
	TileConv
	// TileScatter scatters values into its result at positions index tensors give
	// (index_put, scatter, in place): tiles over its iteration space's [outer, rows,
	// cols] (see lowering_scatter.go).
	TileScatter
	// TileConvEpilogue is a cube convolution whose output tiles pass through an
	// elementwise epilogue on the vector cores of the same AI core (fused_conv2d_5hd,
	// a mixed task): tiles as TileConv.
	TileConvEpilogue
)

// writesInPlace reports whether tile ops of kind k write into bytes another op
// produced (their result an alias of their first input's owner).
func writesInPlace(k TileKind) bool { return k == TileUpdate || k == TileScatter }

// tileKindNames spell the kinds in the text forms, indexed by TileKind.
var tileKindNames = []string{"matmul", "elementwise", "reduce", "scan", "sort", "matmul_epilogue", "rows", "attention", "kernel", "update", "conv", "scatter", "conv_epilogue"}

func (k TileKind) String() string { return tileKindNames[k] }

// TileOp is one tensor op expanded over a grid of output tiles.
type TileOp struct {
	Node    core.Value // the Tensor Graph node it implements
	Op      string     // the core op name
	Kind    TileKind
	Core    isa.CoreKind
	Inputs  []int // indices into TileGraph.Tensors
	Output  int
	Attrs   core.Attrs
	Tile    []int // matmul: [tm, tn, tk, stepK, kc]; elementwise: [tr, tc]
	Grid    []int // number of tiles along each tiled axis (see TileOp.NumTiles)
	Loc     core.Location
	Reason  string // why this tile shape was chosen (shown in dumps)
	Problem []int  // matmul: [batch, m, n, k]; elementwise: [outer, rows, cols] of the output
	// Dynamic, when set, makes the op compute only the valid rows of its output, their
	// count read when the program runs (dynamic_sizes.go).
	Dynamic *DynamicRows
	// WeightPrep marks an op that computes from weights alone: a run skips it when an
	// earlier run left its result for the same weights (prepare_weights.go).
	WeightPrep bool
}

// NumTiles is the number of output tiles (grid points) of the op.
func (op *TileOp) NumTiles() int {
	n := 1
	for _, g := range op.Grid {
		n *= g
	}
	return n
}

// TileGraph is the program after tiling: GM tensors and tile ops in execution order.
type TileGraph struct {
	Name    string
	Tensors []GMTensor
	Ops     []*TileOp
	Params  []int // tensors bound to the graph's params, in order
	Outputs []int // tensors returned, in order
}

func tensorList(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("t%d", id)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Verify checks the tile graph's invariants: tensors referenced exist, every tile op's
// grid covers its output exactly, and tensors are produced before they are read.
func (g *TileGraph) Verify() error {
	produced := make([]bool, len(g.Tensors))
	for _, p := range g.Params {
		if p < 0 || p >= len(g.Tensors) || g.Tensors[p].Role != RoleInput {
			return fmt.Errorf("tilegraph: param t%d is not an input tensor", p)
		}
		produced[p] = true
	}
	for i, t := range g.Tensors {
		if len(t.Pieces) > 0 {
			if !verifyPieces(g, i) {
				return fmt.Errorf("tilegraph: t%d packs %s, which must be two or more earlier, distinct inputs of its dtype adding up to its bytes, each but the last whole GM granules", i, tensorList(t.Pieces))
			}
			continue
		}
		if a := t.Alias; a > 0 && (a-1 >= i || g.Tensors[a-1].Alias != 0 || (t.View == nil && g.Tensors[a-1].Type.Bytes() != t.Type.Bytes()) || t.Role == RoleInput) {
			return fmt.Errorf("tilegraph: t%d is an alias of t%d, which must be an earlier tensor of the same size that is no alias itself", i, a-1)
		}
		if t.View != nil && (t.Alias == 0 || t.Role != RoleTemp || len(t.View.strides) != len(t.Type.Shape)) {
			return fmt.Errorf("tilegraph: t%d is a strided view, which must be a temporary alias with one stride per axis", i)
		}
	}
	for i, op := range g.Ops {
		if g.Tensors[op.Output].Alias != 0 && !writesInPlace(op.Kind) {
			return fmt.Errorf("tilegraph: op%d writes t%d, an alias (aliases are never written)", i, op.Output)
		}
		for _, in := range append(append([]int(nil), op.Inputs...), op.Output) {
			if in < 0 || in >= len(g.Tensors) {
				return fmt.Errorf("tilegraph: op%d refers to missing tensor t%d", i, in)
			}
		}
		for _, in := range op.Inputs {
			if !produced[root(g.Tensors, in)] {
				return fmt.Errorf("tilegraph: op%d reads t%d before it is produced", i, in)
			}
		}
		if produced[op.Output] && !continuesPartialWrite(g.Ops, i) {
			return fmt.Errorf("tilegraph: op%d writes t%d, which already has a producer", i, op.Output)
		}
		produced[op.Output] = true
		if err := verifyTiling(g.Tensors, op); err != nil {
			return fmt.Errorf("tilegraph: op%d (%s): %v", i, op.Op, err)
		}
		if msg := checkDynamicRows(g.Tensors, op); msg != "" {
			return fmt.Errorf("tilegraph: op%d (%s): %s", i, op.Op, msg)
		}
	}
	if err := verifyWeightPrep(g); err != nil {
		return err
	}
	for _, o := range g.Outputs {
		if o < 0 || o >= len(g.Tensors) || !produced[root(g.Tensors, o)] {
			return fmt.Errorf("tilegraph: output t%d is never produced", o)
		}
	}
	return nil
}

// continuesPartialWrite reports whether ops[i] is one more part of the output the
// partial op before it writes (the pieces of one concat).
func continuesPartialWrite(ops []*TileOp, i int) bool {
	return i > 0 && continuesPart(ops[i-1], ops[i])
}

// continuesPart reports whether op writes another part of prev's output.
func continuesPart(prev, op *TileOp) bool {
	if writesInPlace(op.Kind) { // writes in place into bytes another op produced
		return false
	}
	return lowerings[op.Op].partial && prev.Output == op.Output && prev.Op == op.Op
}

// verifyTiling checks a tile op's grid against its problem and, for elementwise ops,
// the problem against the type it iterates over.
func verifyTiling(tensors []GMTensor, op *TileOp) error {
	out := iterationType(tensors, op)
	if dims, ok := tilingDims[op.Kind]; !ok || len(op.Problem) != tilingLen(dims[0]) || len(op.Tile) != tilingLen(dims[1]) {
		return fmt.Errorf("a %s op has problem %s and tile %s", op.Kind, dims[0], dims[1])
	}
	for _, t := range op.Tile {
		if t <= 0 {
			return fmt.Errorf("tile shape %v has a non-positive dimension", op.Tile)
		}
	}
	want := tileGrid(op.Kind, op.Problem, op.Tile)
	if fmt.Sprint(want) != fmt.Sprint(op.Grid) {
		return fmt.Errorf("grid %v does not cover problem %v with tile %v (want %v)", op.Grid, op.Problem, op.Tile, want)
	}
	if op.Kind == TileElementwise {
		if err := verifyBroadcast(tensors, op, out.Shape); err != nil {
			return err
		}
		space, _, _ := elementwiseSpace(tensors, op)
		if got := elementwiseProblem(space); fmt.Sprint(got) != fmt.Sprint(op.Problem) {
			return fmt.Errorf("problem %v does not match output type %s", op.Problem, out)
		}
	}
	if op.Kind == TileMatmul || op.Kind == TileMatmulEpilogue {
		return verifyMatmulOutput(op, out)
	}
	return nil
}

// verifyBroadcast checks that each input of an elementwise op without a map of its own
// broadcasts to the shape it iterates over, as numpy broadcasting indexes it.
func verifyBroadcast(tensors []GMTensor, op *TileOp, out core.Shape) error {
	if lowerings[op.Op].maps != nil {
		return nil
	}
	for _, t := range op.Inputs {
		in := tensors[t].Type.Shape
		if b, ok := core.BroadcastShapes(in, out); !ok || !slices.Equal(b, out) {
			return fmt.Errorf("input t%d of shape %v does not broadcast to the op's shape %v", t, in, out)
		}
	}
	return nil
}

// tileGrid is the number of tiles along each tiled axis.
func tileGrid(kind TileKind, problem, tile []int) []int {
	switch kind {
	case TileMatmul, TileMatmulEpilogue: // problem [batch, m, n, k], tile [tm, tn, tk, stepK, kc]: output tiles by K chunks
		return []int{problem[0], ceilDiv(problem[1], tile[0]), ceilDiv(problem[2], tile[1]), kChunks(problem[3], tile[4])}
	case TileSort, TileRows: // problem [rows, n, l] or [rows, C], tile [tr, l] or [tr, tc]
		return []int{ceilDiv(problem[0], tile[0]), 1}
	case TileUpdate: // problem [outer, rows, cols] of the update, tile [tr, tc]
		return []int{problem[0], ceilDiv(problem[1], tile[0]), ceilDiv(problem[2], tile[1])}
	case TileKernel: // problem [blocks], tile [1]
		return []int{problem[0]}
	case TileConv, TileConvEpilogue:
		return convGrid(convProblemOf(problem), tile)
	case TileAttention: // problem [batch, l, s, e, ev], tile [br, hr, bc, copies]
		return []int{problem[0], ceilDiv(problem[1], tile[0]), 1}
	case TileScan: // problem [outer, a, inner], tile [1, tc]
		if problem[2] == 1 {
			return []int{ceilDiv(problem[0], tile[1]), 1}
		}
		return []int{problem[0], ceilDiv(problem[2], tile[1])}
	case TileReduce: // problem [outer, r, inner], tile [tr, tc]
		if problem[2] == 1 {
			return []int{ceilDiv(problem[0], tile[0]), 1}
		}
		return []int{problem[0], ceilDiv(problem[2], tile[1])}
	default: // problem [outer, rows, cols], tile [tr, tc]
		return []int{problem[0], ceilDiv(problem[1], tile[0]), ceilDiv(problem[2], tile[1])}
	}
}

// elementwiseProblem flattens an output shape to [outer, rows, cols]: the last two axes
// are tiled and every index of the leading axes is a separate row of tiles.
func elementwiseProblem(s core.Shape) []int {
	switch len(s) {
	case 0:
		return []int{1, 1, 1}
	case 1:
		return []int{1, 1, s[0]}
	}
	outer := 1
	for _, d := range s[:len(s)-2] {
		outer *= d
	}
	return []int{outer, s[len(s)-2], s[len(s)-1]}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func roundUp(a, b int) int { return ceilDiv(a, b) * b }
