// Package npzvals reads the arrays of a .npz file as float64 values: the golden cases
// the generators of isa/testdata and device/testdata write (float32, int32 and int8
// arrays), which the interpreter's, the device's and the PTO-AS export's tests read.
package npzvals

import (
	"fmt"
	"strings"

	"codeberg.org/sbinet/npyio/npz"
)

// Read reads array key of r as float64 values.
func Read(r *npz.Reader, key string) ([]float64, error) {
	var vals []float64
	switch typ := strings.Trim(r.Header(key).Descr.Type, "'\""); typ {
	case "<f4":
		var v []float32
		if err := r.Read(key, &v); err != nil {
			return nil, err
		}
		for _, x := range v {
			vals = append(vals, float64(x))
		}
	case "<i4":
		var v []int32
		if err := r.Read(key, &v); err != nil {
			return nil, err
		}
		for _, x := range v {
			vals = append(vals, float64(x))
		}
	case "|i1":
		var v []int8
		if err := r.Read(key, &v); err != nil {
			return nil, err
		}
		for _, x := range v {
			vals = append(vals, float64(x))
		}
	default:
		return nil, fmt.Errorf("array %s has type %s (want <f4, <i4 or |i1)", key, typ)
	}
	return vals, nil
}

// ReadFile reads every array of the .npz at path, keyed by name (without ".npy").
func ReadFile(path string) (map[string][]float64, error) {
	r, err := npz.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := map[string][]float64{}
	for _, key := range r.Keys() {
		vals, err := Read(r, key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out[strings.TrimSuffix(key, ".npy")] = vals
	}
	return out, nil
}
