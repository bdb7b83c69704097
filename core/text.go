package core

import (
	"fmt"
	"strconv"
	"strings"
)

// The text form of a Tensor Graph:
//
//	graph main(%x: f16[300,520], %w: f16[520,130]) {
//	  %2 = matmul(%x, %w) {transpose_a=false, transpose_b=false} : f16[300,130]
//	  %3 = relu(%2) : f16[300,130]
//	  return %3
//	}
//
// Params are written by name; every other value by number. Names that are not plain
// identifiers are quoted (%"x-1"), so a param can never be mistaken for a numbered value.
// Values are numbered canonically, not by their index in the original Nodes slice: params
// first in g.Params order, then the other nodes in node order. Graphs built the usual way
// (params first) keep their node indices, and Parse lays nodes out exactly so; graphs that
// differ only in where their param nodes sit print identically, which the compile cache
// (keyed by this text) relies on. Attributes are printed completed with the op's defaults
// for the same reason. Locations are not part of the text.

// Format prints g in the text form. It never fails: malformed parts of an unverified graph
// print as <...> markers that Parse rejects.
func Format(g *Graph) string {
	if g == nil {
		return "<nil graph>\n"
	}
	names := canonicalNames(g)
	var b strings.Builder
	b.WriteString("graph ")
	b.WriteString(quoteName(g.Name))
	b.WriteString("(")
	for i, p := range g.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(valueName(g, names, p))
		b.WriteString(": ")
		if n := nodeAt(g, p); n != nil {
			b.WriteString(n.Type.String())
		} else {
			b.WriteString("<missing type>")
		}
	}
	b.WriteString(") {\n")
	inSignature := paramSet(g)
	for i := range g.Nodes {
		if inSignature[Value(i)] {
			continue
		}
		b.WriteString("  ")
		b.WriteString(formatNodeWith(g, names, i))
		b.WriteString("\n")
	}
	b.WriteString("  return")
	for i, o := range g.Outputs {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(" ")
		b.WriteString(valueName(g, names, o))
	}
	b.WriteString("\n}\n")
	return b.String()
}

// canonicalNames returns the printed name of every node: %name for params in the
// signature, %N for the others, N counting params first (see the comment above).
func canonicalNames(g *Graph) []string {
	names := make([]string, len(g.Nodes))
	inSignature := paramSet(g)
	for _, p := range g.Params {
		if inSignature[p] {
			names[p] = "%" + quoteName(g.Nodes[p].Name)
		}
	}
	next := len(g.Params)
	for i := range g.Nodes {
		if !inSignature[Value(i)] {
			names[i] = "%" + strconv.Itoa(next)
			next++
		}
	}
	return names
}

// indexNames names nodes by their index in g.Nodes (params by name): what the verifier
// uses, because it reports on the graph as it is, not as it would be printed.
func indexNames(g *Graph) []string {
	names := make([]string, len(g.Nodes))
	for i, n := range g.Nodes {
		if n != nil && n.Op == OpParam {
			names[i] = "%" + quoteName(n.Name)
		} else {
			names[i] = "%" + strconv.Itoa(i)
		}
	}
	return names
}

// paramSet marks the nodes that the signature lists and that really are params.
func paramSet(g *Graph) map[Value]bool {
	set := make(map[Value]bool, len(g.Params))
	for _, p := range g.Params {
		if n := nodeAt(g, p); n != nil && n.Op == OpParam {
			set[p] = true
		}
	}
	return set
}

func nodeAt(g *Graph, v Value) *Node {
	if int(v) < 0 || int(v) >= len(g.Nodes) {
		return nil
	}
	return g.Nodes[v]
}

func valueName(g *Graph, names []string, v Value) string {
	if int(v) < 0 || int(v) >= len(names) {
		return fmt.Sprintf("%%<bad value %d>", int(v))
	}
	return names[v]
}

// formatNodeWith prints node i as "%N = op(%a, %b) {attrs} : type".
func formatNodeWith(g *Graph, names []string, i int) string {
	n := g.Nodes[i]
	if n == nil {
		return names[i] + " = <nil node>"
	}
	var b strings.Builder
	b.WriteString(names[i])
	b.WriteString(" = ")
	b.WriteString(n.Op)
	b.WriteString("(")
	for j, in := range n.Inputs {
		if j > 0 {
			b.WriteString(", ")
		}
		b.WriteString(valueName(g, names, in))
	}
	b.WriteString(")")
	if s := printedAttrs(n).String(); s != "" {
		b.WriteString(" ")
		b.WriteString(s)
	}
	b.WriteString(" : ")
	b.WriteString(n.Type.String())
	return b.String()
}

// printedAttrs completes a node's attributes with its op's defaults, so that a graph
// that spells out a default and one that leaves it implicit print the same.
func printedAttrs(n *Node) Attrs {
	if def, ok := LookupOp(n.Op); ok {
		if full, err := def.withDefaults(n.Attrs); err == nil {
			return full
		}
	}
	return n.Attrs
}

// isIdent reports whether s can be printed without quotes: an ASCII letter or '_'
// followed by letters, digits, '_' and '.'. A leading digit is excluded because %N
// names numbered values.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isLetter(c) || i > 0 && (isDigit(c) || c == '.')) {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// quoteName prints a graph or param name, quoting it unless it is a plain identifier.
func quoteName(s string) string {
	if isIdent(s) {
		return s
	}
	return strconv.Quote(s)
}

// ValueNames are the names the text form gives g's values (%in0 for a param, %3 for a
// node), indexed by value.
func ValueNames(g *Graph) []string { return canonicalNames(g) }
