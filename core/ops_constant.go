package core

import (
	"encoding/base64"

	"pypto/dtype"
)

// constant is a tensor whose elements are part of the program. The compiler's constant
// folding makes it from a computation over constants whose result varies (one value
// everywhere is a full, which needs no data); data holds the elements' little-endian
// encoding in dtype, in base64, so the text form carries them.

func init() {
	Register(&OpDef{Name: "constant", Arity: 0, Attrs: []AttrSpec{{"dtype", "float32"}, {"shape", []int64{}}, {"data", ""}},
		Doc:   "a tensor of shape and dtype holding the elements encoded in data (little-endian, base64)",
		Infer: inferConstant, Eval: evalConstant})
	concreteOnly["constant"] = true // made by the compiler, in concrete graphs only
}

// ConstantAttrs are the attributes of a constant holding a's elements.
func ConstantAttrs(a *Array) Attrs {
	return Attrs{"dtype": a.Type.DType.LongName(), "shape": int64s(a.Type.Shape), "data": base64.StdEncoding.EncodeToString(a.Bytes())}
}

// ConstantBytes decodes the elements of a constant's attributes.
func ConstantBytes(attrs Attrs) ([]byte, error) {
	return base64.StdEncoding.DecodeString(attrs.Str("data", ""))
}

func inferConstant(_ []TensorType, attrs Attrs) (TensorType, *Error) {
	d, err := attrDType("constant", "dtype", attrs)
	if err != nil {
		return TensorType{}, err
	}
	shape, err := attrShape("constant", attrs.Ints("shape"))
	if err != nil {
		return TensorType{}, err
	}
	t := TensorType{DType: d, Shape: shape}
	data, derr := ConstantBytes(attrs)
	if derr != nil {
		return TensorType{}, Errorf(ValueError, "constant: data is not base64: %v", derr)
	}
	if len(data) != t.Bytes() {
		return TensorType{}, Errorf(ValueError, "constant: data holds %d bytes, but %s needs %d", len(data), t, t.Bytes())
	}
	return t, nil
}

func evalConstant(_ []*Array, attrs Attrs, out *Array) {
	data, _ := ConstantBytes(attrs) // checked by inferConstant
	copy(out.Data, dtype.Decode(out.Type.DType, data, len(out.Data)))
}
