package main

import (
	"encoding/json"
	"fmt"
	"runtime/cgo"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/session"
)

// errorOf resolves a status to the error it carries and frees the handle.
func errorOf(t *testing.T, status uintptr) *core.Error {
	t.Helper()
	require.NotZero(t, status)
	e, err := lookup[*core.Error](status, "error")
	require.NoError(t, err)
	require.NoError(t, freeHandle(status))
	return e
}

func TestGuardConvertsPanicsAndErrors(t *testing.T) {
	assert.Zero(t, guard(func() error { return nil }))

	e := errorOf(t, guard(func() error { panic("kaboom") }))
	assert.Equal(t, core.InternalError, e.Kind)
	assert.Contains(t, e.Message, "kaboom")
	assert.NotEmpty(t, e.Suggestions)

	e = errorOf(t, guard(func() error { var m map[string]int; m["x"] = 1; return nil }))
	assert.Equal(t, core.InternalError, e.Kind)

	want := core.Errorf(core.ShapeError, "bad shape").WithLoc(core.Location{File: "a.py", Line: 3})
	assert.Same(t, want, errorOf(t, guard(func() error { return want })))
}

func TestGuardDetectsFork(t *testing.T) {
	saved := loadPid
	defer func() { loadPid = saved }()
	loadPid = -1
	ran := false
	e := errorOf(t, guard(func() error { ran = true; return nil }))
	assert.False(t, ran)
	assert.Contains(t, e.Message, "forked")
	assert.Contains(t, e.Suggestions[0], "spawn")
}

func TestHandles(t *testing.T) {
	x, err := session.Zeros(core.TensorType{DType: 1, Shape: core.Shape{2}})
	require.NoError(t, err)
	h := newHandle(x)
	got, err := lookup[*session.Tensor](h, "tensor")
	require.NoError(t, err)
	assert.Same(t, x, got)

	_, err = lookup[*session.Executor](h, "executor")
	assert.ErrorContains(t, err, "refers to a tensor, not to a executor")

	require.NoError(t, freeHandle(h))
	_, err = lookup[*session.Tensor](h, "tensor")
	assert.ErrorContains(t, err, "invalid handle")
	assert.Error(t, freeHandle(h), "double free is an error, not a crash")
	_, err = lookup[*session.Tensor](0, "tensor")
	assert.ErrorContains(t, err, "null handle")
	_, err = value(uintptr(cgo.NewHandle(1)) + 1000)
	assert.Error(t, err)
}

func TestErrorJSON(t *testing.T) {
	e := core.Errorf(core.ShapeError, "matmul: shapes [2,3] and [4,5]").
		WithLoc(core.Location{File: "m.py", Line: 9, Func: "f"}).Because("k differs").Suggest("transpose")
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(errorJSON(e)), &got))
	assert.Equal(t, "ShapeError", got["type"])
	assert.Equal(t, "matmul: shapes [2,3] and [4,5]", got["message"])
	assert.Equal(t, map[string]any{"file": "m.py", "line": 9.0, "func": "f"}, got["location"])
	assert.Equal(t, []any{"k differs"}, got["causes"])
	assert.Equal(t, []any{"transpose"}, got["suggestions"])

	require.NoError(t, json.Unmarshal([]byte(errorJSON(core.Errorf(core.ValueError, "x"))), &got))
	assert.Equal(t, []any{}, got["causes"], "lists are never null")
}

func TestDecodeAttrs(t *testing.T) {
	a, err := decodeAttrs(`{"transpose_b": true, "axis": -1, "eps": 1e-5, "scale": 2.0, "name": "x", "perm": [1, 0]}`)
	require.NoError(t, err)
	assert.Equal(t, core.Attrs{"transpose_b": true, "axis": int64(-1), "eps": 1e-5, "scale": 2.0, "name": "x", "perm": []int64{1, 0}}, a)
	a, err = decodeAttrs("")
	require.NoError(t, err)
	assert.Nil(t, a)
	for _, bad := range []string{`[1]`, `{"a": {"b": 1}}`, `{"a": [1.5]}`, `{"a": null}`, `{`} {
		_, err := decodeAttrs(bad)
		assert.Error(t, err, bad)
	}
}

func TestDecodeLocation(t *testing.T) {
	loc, err := decodeLocation(`{"file": "/x/m.py", "line": 12, "func": "<module>"}`)
	require.NoError(t, err)
	assert.Equal(t, core.Location{File: "/x/m.py", Line: 12, Func: "<module>"}, loc)
	loc, err = decodeLocation("")
	require.NoError(t, err)
	assert.True(t, loc.IsZero())
	_, err = decodeLocation("nope")
	assert.Error(t, err)
	_, err = decodeLocation("nope")
	assert.Error(t, err, "a bad location is not cached")
	// Repeated call sites come from the cache, and a full cache starts over.
	for i := range maxLocations + 10 {
		s := fmt.Sprintf(`{"file": "/x/m.py", "line": %d, "func": "f"}`, i%(maxLocations+5))
		loc, err := decodeLocation(s)
		require.NoError(t, err)
		require.Equal(t, core.Location{File: "/x/m.py", Line: i % (maxLocations + 5), Func: "f"}, loc)
	}
	assert.LessOrEqual(t, len(locations.m), maxLocations)
}

func TestStatsJSON(t *testing.T) {
	assert.Equal(t, "null", statsJSON(session.Stats{}, false))
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(statsJSON(session.Stats{Cycles: 10, Seconds: 1e-8, Tasks: 2, Detail: func() {}}, true)), &got))
	assert.Equal(t, 10.0, got["cycles"])
	assert.NotContains(t, got, "detail", "an unmarshalable detail is dropped")
}
