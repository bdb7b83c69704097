package core

import (
	"fmt"
	"strings"
)

// ErrorKind classifies errors; Python maps each kind to an exception class.
type ErrorKind string

const (
	ShapeError    ErrorKind = "ShapeError"
	DTypeError    ErrorKind = "DTypeError"
	ValueError    ErrorKind = "ValueError"
	CompileError  ErrorKind = "CompileError"
	DeviceError   ErrorKind = "DeviceError"
	InternalError ErrorKind = "InternalError"
	// IOError is a file the user asked for that could not be written (a full disk, a
	// directory that cannot be written); Python raises p.PyptoIOError.
	IOError ErrorKind = "IOError"
	// Interrupted is a run stopped by Ctrl-C (internal/interrupt); Python raises
	// KeyboardInterrupt for it.
	Interrupted ErrorKind = "Interrupted"
)

// Location is a place in the user's program, captured by the Python front end.
type Location struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Func string `json:"func,omitempty"`
	// Scope is the user's frames from the outermost to this one, as
	// "func@line;func@line" (recorded only while tracing for the visualisation, which
	// groups nodes by it; not part of messages).
	Scope string `json:"scope,omitempty"`
}

// IsZero reports whether no location was recorded.
func (l Location) IsZero() bool { return l.File == "" && l.Line == 0 }

func (l Location) String() string {
	if l.IsZero() {
		return ""
	}
	s := fmt.Sprintf("%s:%d", l.File, l.Line)
	if l.Func != "" {
		s += " in " + l.Func
	}
	return s
}

// Error is the structured error every layer reports to the user: what went wrong, where
// in the user's code, why (causes) and what to do (suggestions).
type Error struct {
	Kind        ErrorKind `json:"type"`
	Message     string    `json:"message"`
	Loc         Location  `json:"location"`
	Causes      []string  `json:"causes"`
	Suggestions []string  `json:"suggestions"`
	// Node, when not 0, is 1 + the index of the node of a graph an error found when a
	// program runs is about. A compiled program serves every graph structurally equal
	// to the one it was compiled from (the node numbering included), whose locations
	// may differ: LocateIn takes the location from the graph being run.
	Node int `json:"-"`
}

// LocateIn sets the location to that of e's node in g, when e names one that has a
// location in g.
func (e *Error) LocateIn(g *Graph) *Error {
	if e.Node > 0 && e.Node <= len(g.Nodes) && !g.Nodes[e.Node-1].Loc.IsZero() {
		e.Loc = g.Nodes[e.Node-1].Loc
	}
	return e
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Kind))
	b.WriteString(": ")
	b.WriteString(e.Message)
	if !e.Loc.IsZero() {
		b.WriteString(" (at ")
		b.WriteString(e.Loc.String())
		b.WriteString(")")
	}
	for _, c := range e.Causes {
		b.WriteString("\n  cause: ")
		b.WriteString(c)
	}
	for _, s := range e.Suggestions {
		b.WriteString("\n  suggestion: ")
		b.WriteString(s)
	}
	return b.String()
}

// Errorf builds an Error of the given kind.
func Errorf(kind ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// WithLoc sets the location if none is recorded yet and returns e.
func (e *Error) WithLoc(l Location) *Error {
	if e.Loc.IsZero() {
		e.Loc = l
	}
	return e
}

// Suggest appends a suggestion and returns e.
func (e *Error) Suggest(format string, args ...any) *Error {
	e.Suggestions = append(e.Suggestions, fmt.Sprintf(format, args...))
	return e
}

// Because appends a cause and returns e.
func (e *Error) Because(format string, args ...any) *Error {
	e.Causes = append(e.Causes, fmt.Sprintf(format, args...))
	return e
}
