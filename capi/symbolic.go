package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"pypto/core"
	"pypto/lower"
	"pypto/session"
)

// Exports for symbolic shapes and layouts. Types cross as text in the Tensor Graph's
// syntax (f16[batch,seq*2,1024]@NHWC), dims as Dim expressions (batch*seq).

// pypto_placeholder_type creates a traced input of p.compile from a type's text; its
// dims may be symbolic and it may carry a layout.
//
//export pypto_placeholder_type
func pypto_placeholder_type(typeText *C.char, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		t, err := parseType(goString(typeText))
		if err != nil {
			return err
		}
		p, err := session.NewPlaceholder(t)
		if err != nil {
			return err
		}
		return putHandle(out, p)
	})
}

// pypto_tensor_type_json describes a tensor's type as JSON: {"dtype": code, "shape":
// [ints and dim strings], "layout": name, "rows", "cols" (NZ only), "text"}.
//
//export pypto_tensor_type_json
func pypto_tensor_type_json(h C.uintptr_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		t, err := lookup[*session.Tensor](uintptr(h), "tensor")
		if err != nil {
			return err
		}
		return putString(out, n, mustJSON(typeInfo(t.Type())))
	})
}

// pypto_with_layout gives a new tensor of the same data tagged with a layout (ND, NCHW,
// NHWC, CHWN, or NZ(rows,cols)), which must fit its shape.
//
//export pypto_with_layout
func pypto_with_layout(h C.uintptr_t, layoutText *C.char, out *C.uintptr_t) C.uintptr_t {
	return status(func() error {
		t, err := lookup[*session.Tensor](uintptr(h), "tensor")
		if err != nil {
			return err
		}
		l, perr := core.ParseLayout(goString(layoutText))
		if perr != nil {
			return core.Errorf(core.ValueError, "%v", perr)
		}
		r, err := session.Default().WithLayout(t, l)
		if err != nil {
			return err
		}
		return putHandle(out, r)
	})
}

// pypto_dim_canonical parses a dim expression and returns its canonical text (what
// Python's p.symbol arithmetic builds on).
//
//export pypto_dim_canonical
func pypto_dim_canonical(text *C.char, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		d, err := core.ParseDim(goString(text))
		if err != nil {
			return core.Errorf(core.ValueError, "%v", err)
		}
		return putString(out, n, d.String())
	})
}

// pypto_executor_info_json describes an executor as JSON: {"symbolic", "compiled"
// (programs held), "graph" (the traced Tensor Graph's text), "constraints" (distinct
// texts), "device", "opt_level", "disable_passes", "memory_pool_bytes" (0: no limit),
// "memory" (the memory plan of its program, or of its latest specialisation; null
// before one is compiled and on the reference device), "layout_conversions" (those the
// program keeps: from, to, shape, bytes, where), "tiles" (the tile of every tile op of
// that program, lower.TileChoice; null like "memory")}.
//
//export pypto_executor_info_json
func pypto_executor_info_json(h C.uintptr_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		ex, err := lookup[*session.Executor](uintptr(h), "executor")
		if err != nil {
			return err
		}
		cons := []string{}
		seen := map[string]bool{} // ops at several lines may need the same thing
		for _, c := range ex.Constraints() {
			if s := c.String(); !seen[s] {
				seen[s] = true
				cons = append(cons, s)
			}
		}
		cfg := ex.Config()
		var memory any
		if m, ok := ex.MemoryPlan(); ok {
			memory = m
		}
		var tiles any
		if t, ok := ex.TileChoices(); ok {
			tiles = t
		}
		return putString(out, n, mustJSON(map[string]any{
			"tiles": tiles, "symbolic": ex.IsSymbolic(), "compiled": ex.NumCompiled(), "graph": ex.GraphText(), "constraints": cons,
			"device": ex.Device(), "opt_level": cfg.OptLevel.Number(), "disable_passes": append([]string{}, cfg.DisabledPasses...),
			"memory_pool_bytes": cfg.MemoryPoolBytes, "memory": memory,
			"layout_conversions": append([]lower.LayoutConversion{}, ex.LayoutConversions()...),
			"buckets":            ex.Buckets(), "no_buckets": ex.NoBuckets(),
			"update_copies": ex.UpdateCopies(), "donated": append([]int{}, cfg.Donate...),
		}))
	})
}

func parseType(text string) (core.TensorType, error) {
	t, err := core.ParseTensorType(text)
	if err != nil {
		return core.TensorType{}, core.Errorf(core.ShapeError, "%v", err)
	}
	if msg := t.Check(); msg != "" {
		return core.TensorType{}, core.Errorf(core.ShapeError, "%s", msg)
	}
	return t, nil
}

type typeJSON struct {
	DType  int    `json:"dtype"`
	Shape  []any  `json:"shape"`
	Layout string `json:"layout"`
	Rows   int    `json:"rows,omitempty"`
	Cols   int    `json:"cols,omitempty"`
	Text   string `json:"text"`
}

func typeInfo(t core.TensorType) typeJSON {
	shape := make([]any, len(t.Shape))
	for i, d := range t.AllDims() {
		if v, ok := d.Const(); ok {
			shape[i] = v
		} else {
			shape[i] = d.String()
		}
	}
	return typeJSON{DType: int(t.DType), Shape: shape, Layout: t.Layout.Kind.String(), Rows: t.Layout.Rows, Cols: t.Layout.Cols, Text: t.String()}
}
