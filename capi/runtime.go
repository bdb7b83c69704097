package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/cgo"
	"runtime/debug"
	"strings"
	"sync"

	"pypto/core"
	"pypto/session"
)

// loadPid is the process that loaded the library; a forked child has another pid.
var loadPid = os.Getpid()

// guard runs one export's body: it refuses to run in a forked child, converts a Go
// panic into an InternalError, and returns 0 or the handle of the error.
func guard(f func() error) (status uintptr) {
	defer func() {
		if r := recover(); r != nil {
			status = errorStatus(core.Errorf(core.InternalError, "Go panic in the PyPTO runtime: %v", r).
				Because("%s", strings.TrimSpace(string(debug.Stack()))).
				Suggest("this is a bug in PyPTO; please report it with the message above"))
		}
	}()
	if err := checkFork(); err != nil {
		return errorStatus(err)
	}
	if err := f(); err != nil {
		return errorStatus(err)
	}
	return 0
}

func checkFork() error {
	if pid := os.Getpid(); pid != loadPid {
		return core.Errorf(core.DeviceError, "PyPTO was loaded in process %d and cannot be used in the forked child process %d", loadPid, pid).
			Because("the Go runtime inside PyPTO does not survive fork()").
			Suggest("use multiprocessing with the 'spawn' start method: multiprocessing.set_start_method('spawn') or multiprocessing.get_context('spawn')")
	}
	return nil
}

// errorStatus turns an error into a status: the handle of a *core.Error.
func errorStatus(err error) uintptr {
	return newHandle(session.AsError(core.InternalError, err))
}

func newHandle(v any) uintptr { return uintptr(cgo.NewHandle(v)) }

// value returns what a handle refers to; a zero, freed or never issued handle is a
// ValueError, not a crash.
func value(h uintptr) (v any, err error) {
	if h == 0 {
		return nil, core.Errorf(core.ValueError, "null handle")
	}
	defer func() {
		if recover() != nil {
			v, err = nil, core.Errorf(core.ValueError, "invalid handle %#x (already freed, or never issued)", h)
		}
	}()
	return cgo.Handle(h).Value(), nil
}

func lookup[T any](h uintptr, what string) (T, error) {
	var zero T
	v, err := value(h)
	if err != nil {
		return zero, core.Errorf(core.ValueError, "%s: %s", what, err.(*core.Error).Message)
	}
	x, ok := v.(T)
	if !ok {
		return zero, core.Errorf(core.ValueError, "handle %#x refers to %s, not to a %s", h, kindOf(v), what)
	}
	return x, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case *session.Tensor:
		return "a tensor"
	case *session.Executor:
		return "an executor"
	case *session.Trace:
		return "a trace"
	case *session.MemoryPool:
		return "a memory pool"
	case *core.Error:
		return "an error"
	}
	return fmt.Sprintf("a %T", v)
}

func tensors(hs []uintptr) ([]*session.Tensor, error) {
	out := make([]*session.Tensor, len(hs))
	for i, h := range hs {
		t, err := lookup[*session.Tensor](h, fmt.Sprintf("input %d", i))
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

func freeHandle(h uintptr) error {
	if _, err := value(h); err != nil {
		return err
	}
	cgo.Handle(h).Delete()
	return nil
}

// errorJSON is the JSON the Python side turns into an exception.
func errorJSON(e *core.Error) string {
	c := *e
	if c.Causes == nil {
		c.Causes = []string{}
	}
	if c.Suggestions == nil {
		c.Suggestions = []string{}
	}
	return mustJSON(c)
}

func statsJSON(st session.Stats, ok bool) string {
	if !ok {
		return "null"
	}
	b, err := json.Marshal(st)
	if err != nil { // a backend detail that does not marshal: keep the summary
		st.Detail = nil
		b, _ = json.Marshal(st)
	}
	return string(b)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// decodeLocation parses {"file","line","func"}; "" means no location.
func decodeLocation(s string) (core.Location, error) {
	var loc core.Location
	if strings.TrimSpace(s) == "" {
		return loc, nil
	}
	if loc, ok := locations.get(s); ok {
		return loc, nil
	}
	if err := json.Unmarshal([]byte(s), &loc); err != nil {
		return loc, core.Errorf(core.ValueError, "bad location JSON %q: %v", s, err)
	}
	locations.put(s, loc)
	return loc, nil
}

// locationCache holds decoded location JSON: an eager loop sends the same few call
// sites over and over, and decoding JSON costs more than building the op.
type locationCache struct {
	mu sync.Mutex
	m  map[string]core.Location
}

// maxLocations bounds the cache; when full it starts over.
const maxLocations = 4096

var locations = &locationCache{m: map[string]core.Location{}}

func (c *locationCache) get(s string) (core.Location, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	loc, ok := c.m[s]
	return loc, ok
}

func (c *locationCache) put(s string, loc core.Location) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxLocations {
		clear(c.m)
	}
	c.m[s] = loc
}

// decodeAttrs parses a JSON object into core.Attrs: integers become int64, other
// numbers float64, lists of integers []int64; bools and strings stay as they are.
func decodeAttrs(s string) (core.Attrs, error) {
	if strings.TrimSpace(s) == "" || strings.TrimSpace(s) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("bad attributes JSON %q: %v", s, err)
	}
	attrs := core.Attrs{}
	for k, v := range raw {
		x, err := attrValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %v", k, err)
		}
		attrs[k] = x
	}
	return attrs, nil
}

func attrValue(v any) (any, error) {
	switch x := v.(type) {
	case bool, string:
		return x, nil
	case json.Number:
		return number(x)
	case []any:
		return intOrDimList(x)
	}
	return nil, fmt.Errorf("unsupported value %v (want bool, number, string or list of integers)", v)
}

// intOrDimList reads a list of integers, where strings are symbolic dims
// ("batch*seq"): the result is []int64, or []core.Dim when some element is symbolic.
func intOrDimList(x []any) (any, error) {
	ints := make([]int64, len(x))
	dims := make([]core.Dim, len(x))
	symbolic := false
	for i, e := range x {
		switch v := e.(type) {
		case json.Number:
			iv, err := v.Int64()
			if err != nil {
				return nil, fmt.Errorf("list element %d (%s) is not an integer", i, v)
			}
			ints[i], dims[i] = iv, core.DimConst(int(iv))
		case string:
			d, err := core.ParseDim(v)
			if err != nil {
				return nil, fmt.Errorf("list element %d: %v", i, err)
			}
			c, isConst := d.Const()
			ints[i], dims[i] = int64(c), d
			symbolic = symbolic || !isConst
		default:
			return nil, fmt.Errorf("list element %d is %T; lists hold integers (or symbolic dims as strings) only", i, e)
		}
	}
	if symbolic {
		return dims, nil
	}
	return ints, nil
}

func number(n json.Number) (any, error) {
	if !strings.ContainsAny(string(n), ".eE") {
		if i, err := n.Int64(); err == nil {
			return i, nil
		}
	}
	return n.Float64()
}
