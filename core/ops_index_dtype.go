package core

import "pypto/dtype"

// The ops that return positions (argmax, argmin, argsort, topk_indices) give them in
// int64, numpy's index dtype. Their dtype attribute lets the session's int64 narrowing
// (NarrowInt64) ask for int32, the widest integer the chip computes in.
var indexDTypeAttr = AttrSpec{"dtype", "int64"}

// indexDType is the dtype an index op's attributes ask for: int64 or int32.
func indexDType(op string, attrs Attrs) (dtype.DType, *Error) {
	d, err := attrDType(op, "dtype", attrs)
	if err != nil {
		return dtype.Invalid, err
	}
	if d != dtype.Int64 && d != dtype.Int32 {
		return dtype.Invalid, Errorf(DTypeError, "%s: indices are int64 or int32, not %s", op, d.LongName()).
			Suggest("cast the result instead: p.cast(%s(x), dtype)", op)
	}
	return d, nil
}
