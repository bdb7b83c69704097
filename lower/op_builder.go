package lower

import (
	"pypto/core"
	"pypto/dtype"
)

// opBuilder adds ops to a builder at one location, keeping the first error, so that a
// rewrite reads as a straight line of ops (as core's decompositions do).
type opBuilder struct {
	b   *core.Builder
	loc core.Location
	err error
}

func (o *opBuilder) op(name string, attrs core.Attrs, in ...core.Value) core.Value {
	if o.err != nil {
		return -1
	}
	v, err := o.b.Op(name, in, attrs, o.loc)
	if err != nil {
		o.err = err
		return -1
	}
	return v
}

// cast converts v to dt, adding no op when it already has that dtype.
func (o *opBuilder) cast(v core.Value, dt dtype.DType) core.Value {
	if o.err != nil || o.b.Type(v).DType == dt {
		return v
	}
	return o.op("cast", core.Attrs{"dtype": dt.LongName()}, v)
}
