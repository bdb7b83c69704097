package core

import "pypto/dtype"

// dec is what a Decompose function builds with: ops added to the builder at the
// composite's location, with the first error kept so that a decomposition reads as a
// straight line of ops.
type dec struct {
	b   *Builder
	loc Location
	err error
}

func newDec(b *Builder, loc Location) *dec { return &dec{b: b, loc: loc} }

func (d *dec) op(name string, attrs Attrs, in ...Value) Value {
	if d.err != nil {
		return -1
	}
	v, err := d.b.Op(name, in, attrs, d.loc)
	if err != nil {
		d.err = err
		return -1
	}
	return v
}

func (d *dec) typ(v Value) TensorType {
	if d.err != nil || v < 0 {
		return TensorType{}
	}
	return d.b.Type(v)
}

// scalar is a 0-d constant, which broadcasts against anything.
func (d *dec) scalar(dt dtype.DType, v float64) Value {
	return d.op("full", Attrs{"value": v, "dtype": dt.LongName(), "shape": []int64{}})
}

// cast converts v to dt, adding no op when it already has that dtype.
func (d *dec) cast(v Value, dt dtype.DType) Value {
	if d.err != nil || d.typ(v).DType == dt {
		return v
	}
	return d.op("cast", Attrs{"dtype": dt.LongName()}, v)
}

func (d *dec) done(v Value) (Value, error) {
	if d.err != nil {
		return -1, d.err
	}
	return v, nil
}
