package lower

import (
	"errors"
	"fmt"
	"strings"

	"pypto/core"
	"pypto/isa"
)

// The text form of an Execution Graph, as Format(true) prints it:
//
//	execgraph mm {
//	  tilegraph mm {
//	    ...
//	  }
//	  blockgraph mm {
//	    ...
//	  }
//	  gm 11264 bytes (workspace 2560, 2560 without reuse)
//	  buffer t0: f16[17,33] input @0 +1536
//	  ...
//	  task 0 matmul_0 kernel=k0 core=cube blocks=1 args=(t0, t1, t2) deps=[] {
//	    kernel matmul_0_b0 cube
//	    param %t0: f16[561]
//	    ...
//	    end
//	  }
//	}
//
// The text is self-contained: it nests the tile and block graphs the plan was made
// from, so ParseExecGraph needs nothing else. Buffers place every tensor, in order,
// at a byte offset (@) with a size (+) and repeat the tensor's type and role, which the
// parser checks. Each task carries one PTO program per block in isa.Format's text,
// which isa.Parse reads line by line, from 'kernel' to 'end'. Machine programs are the
// backend's output and not part of the text.
//
// Format(false) prints a summary without the nested graphs and programs; it does not
// parse back.

// Format prints the execution graph; with programs it prints the complete text that
// ParseExecGraph reads, nested graphs and PTO programs included.
func (g *ExecGraph) Format(programs bool) string {
	var b strings.Builder
	var tg *TileGraph
	if g.Blocks != nil {
		tg = g.Blocks.Tiles
	}
	name := "<nil tile graph>"
	if tg != nil {
		name = quoteName(tg.Name)
	}
	fmt.Fprintf(&b, "execgraph %s {\n", name)
	if programs {
		if tg != nil {
			b.WriteString(indent(tg.Format(), "  "))
		}
		if g.Blocks != nil {
			b.WriteString(indent(g.Blocks.Format(), "  "))
		}
	}
	fmt.Fprintf(&b, "  gm %d bytes (workspace %d, %d without reuse)\n", g.GMBytes, g.WorkspaceBytes, g.WorkspaceNoReuse)
	for i, buf := range g.Buffers {
		what := "<no tensor>"
		if tg != nil && i < len(tg.Tensors) {
			what = fmt.Sprintf("%s %s", tg.Tensors[i].Type, tg.Tensors[i].Role)
		}
		fmt.Fprintf(&b, "  buffer t%d: %s @%d +%d\n", i, what, buf.Offset, buf.Bytes)
	}
	for i, t := range g.Tasks {
		fmt.Fprintf(&b, "  task %d %s kernel=k%d core=%s blocks=%d", i, quoteName(t.Name), t.Kernel, t.Core, len(t.Programs)/t.GroupSize())
		if t.Vectors > 0 {
			fmt.Fprintf(&b, " vectors=%d", t.Vectors)
		}
		fmt.Fprintf(&b, " args=%s deps=%s", tensorList(t.Args), intList(t.Deps))
		if !programs {
			b.WriteString("\n")
			continue
		}
		b.WriteString(" {\n")
		for _, p := range t.Programs {
			b.WriteString(indent(isa.Format(p), "    "))
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// indent prefixes every line of text with prefix.
func indent(text, prefix string) string {
	lines := strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n")
	return prefix + strings.Join(lines, prefix) + "\n"
}

// ParseExecGraph reads an execution graph in the text Format(true) prints. It checks
// the nested tile and block graphs as ParseTileGraph and ParseBlockGraph do, and that
// everything the plan names exists: tensors, kernels, earlier tasks, one program per
// block. Whether the plan is valid for a chip (GM layout, liveness, the programs under
// the ISA rules and buffer sizes) is ExecGraph.Verify's job, as isa.Parse leaves
// checking to isa.Verify; a parsed graph can always be given to it. Errors are
// *core.Error of kind ValueError whose message starts with "line:col:".
func ParseExecGraph(src string) (*ExecGraph, error) {
	return parseText(src, func(p *textParser) *ExecGraph {
		g := p.execGraph()
		p.expectEOF("execution graph")
		return g
	})
}

// execGraph := 'execgraph' name '{' tilegraph blockgraph gm {buffer} {task} '}'
func (p *textParser) execGraph() *ExecGraph {
	p.expectWord("execgraph", "")
	name := p.name("graph name")
	p.expectPunct("{", " after the graph name")
	if t := p.peek(); !isWord(t, "tilegraph") {
		p.fail(t, "expected 'tilegraph' (the text of ExecGraph.Format(true) nests the tile and block graphs), found %s", t)
	}
	saved := p.sc
	p.next()
	tileName := p.peek()
	p.sc = saved
	tg := p.tileGraph()
	if tg.Name != name {
		p.fail(tileName, "expected tile graph %s, named like the execution graph, found %s", quoteName(name), quoteName(tg.Name))
	}
	if t := p.peek(); !isWord(t, "blockgraph") {
		p.fail(t, "expected 'blockgraph' after the tile graph, found %s", t)
	}
	g := &ExecGraph{Blocks: p.blockGraph(tg)}
	p.gmLine(g)
	tp := &tileParser{textParser: p, g: tg}
	for isWord(p.peek(), "buffer") {
		p.buffer(tp, g)
	}
	if t := p.peek(); len(g.Buffers) < len(tg.Tensors) {
		p.fail(t, "expected 'buffer t%d' (every tensor has a buffer), found %s", len(g.Buffers), t)
	}
	for isWord(p.peek(), "task") {
		g.Tasks = append(g.Tasks, p.task(tp, g))
	}
	if t := p.next(); !isPunct(t, "}") {
		p.fail(t, "expected 'task %d' or '}' closing the execution graph, found %s", len(g.Tasks), t)
	}
	return g
}

// gmLine := 'gm' int 'bytes' '(' 'workspace' int ',' int 'without' 'reuse' ')'
func (p *textParser) gmLine(g *ExecGraph) {
	if t := p.peek(); !isWord(t, "gm") {
		p.fail(t, "expected 'gm' after the block graph, found %s", t)
	}
	p.next()
	g.GMBytes = p.integer("GM size")
	p.expectWord("bytes", " after the GM size")
	p.expectPunct("(", " after 'bytes'")
	p.expectWord("workspace", "")
	g.WorkspaceBytes = p.integer("workspace size")
	p.expectPunct(",", " after the workspace size")
	g.WorkspaceNoReuse = p.integer("workspace size without reuse")
	p.expectWord("without", " after the workspace size without reuse")
	p.expectWord("reuse", " after 'without'")
	p.expectPunct(")", " closing the GM sizes")
}

// buffer := 'buffer' tN ':' type role '@' offset '+' bytes
func (p *textParser) buffer(tp *tileParser, g *ExecGraph) {
	p.next()
	i := len(g.Buffers)
	nt := p.numberedAs("t", i, "buffer")
	if i >= len(tp.g.Tensors) {
		p.fail(nt, "expected 'task' or '}', found buffer t%d, but the tile graph has %d tensors", i, len(tp.g.Tensors))
	}
	p.expectPunct(":", " after the buffer's tensor")
	at := p.peek()
	typ, role := p.tensorType(), p.role()
	if want := tp.g.Tensors[i]; !typ.Equal(want.Type) || role != want.Role {
		p.fail(at, "expected %s %s, the type and role of tensor t%d, found %s %s", want.Type, want.Role, i, typ, role)
	}
	p.expectPunct("@", " before the buffer offset")
	off := p.integer("buffer offset")
	p.expectPunct("+", " before the buffer size")
	g.Buffers = append(g.Buffers, Buffer{Offset: off, Bytes: p.integer("buffer size")})
}

// task := 'task' int name 'kernel=' kN 'core=' core 'blocks=' int ['vectors=' int] 'args=' '(' tensors ')'
// 'deps=' '[' ints ']' '{' {program} '}'
func (p *textParser) task(tp *tileParser, g *ExecGraph) *Task {
	p.next()
	i := len(g.Tasks)
	if t := p.next(); t.Kind != tokInt || t.Text != fmt.Sprint(i) {
		p.fail(t, "expected task number %d (tasks are numbered in order), found %s", i, t)
	}
	task := &Task{Name: p.name("task name")}
	p.key("kernel", " after the task name")
	k, kt := p.numbered("k", "kernel")
	if k >= len(g.Blocks.Kernels) {
		p.fail(kt, "expected a kernel of the block graph, found k%d (it has %d kernels)", k, len(g.Blocks.Kernels))
	}
	kernel := g.Blocks.Kernels[k]
	task.Kernel = k
	p.key("core", " after the kernel")
	at := p.peek()
	if task.Core = p.coreKind(); task.Core != kernel.Core {
		p.fail(at, "expected core %s, the core kind of kernel k%d, found %s", kernel.Core, k, task.Core)
	}
	p.key("blocks", " after the core kind")
	at = p.peek()
	if n := p.integer("block count"); n != len(kernel.Blocks) {
		p.fail(at, "expected blocks=%d, the block count of kernel k%d, found %d", len(kernel.Blocks), k, n)
	}
	if isWord(p.peek(), "vectors") {
		p.key("vectors", "")
		at = p.peek()
		if task.Vectors = p.integer("vector programs per block"); task.Vectors < 1 {
			p.fail(at, "expected vectors=N with N >= 1 (a mixed task's vector programs per block), found %d", task.Vectors)
		}
	}
	p.key("args", " after the block count")
	for _, a := range tp.tensorRefs("argument") {
		task.Args = append(task.Args, a.id)
	}
	p.key("deps", " after the arguments")
	at = p.peek()
	for _, d := range p.intList("dependency list") {
		if d >= i {
			p.fail(at, "task %d depends on task %d, which does not come before it", i, d)
		}
		task.Deps = append(task.Deps, d)
	}
	if t := p.next(); !isPunct(t, "{") {
		p.fail(t, "expected '{' and the task's PTO programs (ParseExecGraph reads the text of Format(true)), found %s", t)
	}
	for isWord(p.peek(), "kernel") {
		task.Programs = append(task.Programs, p.program())
	}
	end := p.next()
	if !isPunct(end, "}") {
		p.fail(end, "expected 'kernel' or '}' closing task %d, found %s", i, end)
	}
	if len(task.Programs) != len(kernel.Blocks)*task.GroupSize() {
		p.fail(end, "task %d has %d programs for the %d blocks of kernel k%d (%d per block)", i, len(task.Programs), len(kernel.Blocks), k, task.GroupSize())
	}
	return task
}

// program hands the lines from 'kernel' to the next line that starts with 'end' to
// isa.Parse, with the text before 'kernel' blanked so that isa's columns are ours.
func (p *textParser) program() *isa.Program {
	p.sc.SkipSpace()
	src, start := p.sc.Src, p.sc.Pos
	lineStart := strings.LastIndexByte(src[:start], '\n') + 1
	end := len(src) // without an 'end' line isa.Parse reports the missing 'end'
	for pos := start; ; {
		nl := strings.IndexByte(src[pos:], '\n')
		if nl < 0 {
			break
		}
		from := pos + nl + 1
		line, _, _ := strings.Cut(src[from:], "\n")
		lx := core.NewLexer(line, "", true)
		if t, _ := lx.Next(); t.Kind == core.TokIdent && t.Text == "end" {
			end = from + len(line)
			break
		}
		pos = from
	}
	prog, err := isa.Parse(strings.Repeat(" ", start-lineStart) + src[start:end])
	if err != nil {
		var pe *isa.ParseError
		if !errors.As(err, &pe) {
			p.failAt(p.sc.Line, p.sc.Col, "%v", err)
		}
		p.failAt(p.sc.Line+pe.Line-1, pe.Col, "%s", pe.Msg)
	}
	p.sc.Advance(end - start)
	return prog
}
