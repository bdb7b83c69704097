package core

import (
	"fmt"
	"strconv"
	"strings"

	"pypto/dtype"
)

// Layout says what the axes of a tensor mean. Every tensor's data is row-major over its
// shape, whatever its layout: the layout names the axes, it never hides a reordering,
// so the compiler below the Tensor Graph needs no layout logic at all.
//
//   - ND (the zero value): no claim, an ordinary array.
//   - NCHW, NHWC, CHWN: a 4-D tensor whose axes are batch N, channels C, height H and
//     width W in the order the name gives. Converting between them permutes the axes.
//   - NZ: the fractal format of the cube unit. A matrix [..., M, K] is padded to whole
//     fractals of 16 rows by C0 = 32 bytes / element size columns (16 for 2-byte types,
//     8 for 4-byte, 32 for 1-byte) and stored fractal column by fractal column, each
//     fractal row-major: the tensor's shape is [..., K1, M1, 16, C0] with
//     K1 = ceil(K/C0), M1 = ceil(M/16), and element [..., k1, m1, r, c] is matrix element
//     [..., m1*16 + r, k1*C0 + c] (zero padding outside the matrix). Rows and Cols keep
//     M and K, so that converting back to ND is exact.
type Layout struct {
	Kind       LayoutKind
	Rows, Cols int // NZ only: the matrix size M x K before padding
}

// LayoutKind enumerates the layouts.
type LayoutKind uint8

const (
	ND LayoutKind = iota
	NCHW
	NHWC
	CHWN
	NZ
)

var layoutNames = []string{"ND", "NCHW", "NHWC", "CHWN", "NZ"}

func (k LayoutKind) String() string {
	if int(k) < len(layoutNames) {
		return layoutNames[k]
	}
	return fmt.Sprintf("<bad layout %d>", uint8(k))
}

// ParseLayoutKind reads a layout name (ND, NCHW, NHWC, CHWN, NZ; any case).
func ParseLayoutKind(s string) (LayoutKind, error) {
	for i, n := range layoutNames {
		if strings.EqualFold(s, n) {
			return LayoutKind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown layout %q: want one of %s", s, strings.Join(layoutNames, ", "))
}

// IsND reports whether the layout makes no claim.
func (l Layout) IsND() bool { return l.Kind == ND }

// String prints NCHW, or NZ(30,60) with the matrix size; "ND" for the zero value.
func (l Layout) String() string {
	if l.Kind == NZ {
		return fmt.Sprintf("NZ(%d,%d)", l.Rows, l.Cols)
	}
	return l.Kind.String()
}

// ParseLayout reads the String form.
func ParseLayout(s string) (Layout, error) {
	name, args, hasArgs := strings.Cut(s, "(")
	k, err := ParseLayoutKind(strings.TrimSpace(name))
	if err != nil {
		return Layout{}, err
	}
	if k != NZ {
		if hasArgs {
			return Layout{}, fmt.Errorf("layout %s takes no (rows,cols)", k)
		}
		return Layout{Kind: k}, nil
	}
	body, ok := strings.CutSuffix(strings.TrimSpace(args), ")")
	rs, cs, two := strings.Cut(body, ",")
	if !hasArgs || !ok || !two {
		return Layout{}, fmt.Errorf("layout %q: NZ needs the matrix size, e.g. NZ(30,60)", s)
	}
	r, err1 := strconv.Atoi(strings.TrimSpace(rs))
	c, err2 := strconv.Atoi(strings.TrimSpace(cs))
	if err1 != nil || err2 != nil || r < 0 || c < 0 {
		return Layout{}, fmt.Errorf("layout %q: the matrix size must be two non-negative integers", s)
	}
	return Layout{Kind: NZ, Rows: r, Cols: c}, nil
}

// FractalRows is the number of rows of an NZ fractal.
const FractalRows = 16

// FractalCols is C0, the number of columns of an NZ fractal of dt: 32 bytes of elements.
func FractalCols(dt dtype.DType) int { return 32 / dt.Size() }

// NZShape is the shape of the NZ form of a matrix of shape nd ([..., M, K]).
func NZShape(nd Shape, dt dtype.DType) Shape {
	r := len(nd)
	m, k := nd[r-2], nd[r-1]
	c0 := FractalCols(dt)
	out := nd[:r-2].Clone()
	return append(out, ceilDiv(k, c0), ceilDiv(m, FractalRows), FractalRows, c0)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// axisLetters are the axes of the 4-D layouts, in the order of their shapes.
func (k LayoutKind) axisLetters() string {
	switch k {
	case NCHW, NHWC, CHWN:
		return k.String()
	}
	return ""
}

// LayoutPerm is the transpose permutation that turns a tensor of the 4-D layout from
// into the 4-D layout to: result axis i is input axis perm[i].
func LayoutPerm(from, to LayoutKind) []int {
	src, dst := from.axisLetters(), to.axisLetters()
	perm := make([]int, 4)
	for i := range perm {
		perm[i] = strings.IndexByte(src, dst[i])
	}
	return perm
}

// checkLayout returns what is wrong with a type's layout, or "".
func checkLayout(t TensorType) string {
	l := t.Layout
	switch l.Kind {
	case ND:
		if l.Rows != 0 || l.Cols != 0 {
			return "layout ND has a matrix size"
		}
	case NCHW, NHWC, CHWN:
		if len(t.Shape) != 4 || l.Rows != 0 || l.Cols != 0 {
			return fmt.Sprintf("layout %s needs a 4-D shape, got %s", l.Kind, t.ShapeString())
		}
	case NZ:
		if t.IsSymbolic() {
			return fmt.Sprintf("layout NZ needs a concrete shape, got %s", t.ShapeString())
		}
		r := len(t.Shape)
		if r < 4 {
			return fmt.Sprintf("layout %s needs a shape [..., K1, M1, 16, C0], got %s", l, t.Shape)
		}
		nd := append(t.Shape[:r-4].Clone(), l.Rows, l.Cols)
		if want := NZShape(nd, t.DType); !want.Equal(t.Shape) {
			return fmt.Sprintf("layout %s of %s needs shape %s, got %s", l, t.DType, want, t.Shape)
		}
	default:
		return fmt.Sprintf("unknown layout kind %d", uint8(l.Kind))
	}
	return ""
}

// withoutLayout is t tagged ND: the same data seen as a plain array.
func (t TensorType) withoutLayout() TensorType {
	c := t.clone()
	c.Layout = Layout{}
	return c
}

// hasLayouts reports whether some value of g has a layout other than ND.
func hasLayouts(g *Graph) bool {
	for _, n := range g.Nodes {
		if !n.Type.Layout.IsND() {
			return true
		}
	}
	return false
}
