package issues

import (
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// depsParser is goldmark's default parser plus GFM's task checkboxes
// ("- [ ] #12"), which ParseDeps skips. The checkbox is parsed here, not
// with goldmark/extension's TaskList: importing that package compiles its
// linkify regular expressions (a {1,256} repeat) at every start of the
// process, 13 ms of the driver's 50-70 ms start-up at load 20
// (GODEBUG=inittrace=1 claudopilot --version), paid by every claudopilot
// command and every driver a test starts (#23).
func depsParser() parser.Parser {
	return parser.NewParser(
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(append(parser.DefaultInlineParsers(), util.Prioritized(taskBox{}, 0))...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
	)
}

// taskBox parses "[ ]" or "[x]" at the start of a list item's first line
// into a TaskCheckBox, as GFM (and goldmark's TaskList) does: the
// bracket, one space or x or X, the bracket, then any white space.
type taskBox struct{}

func (taskBox) Trigger() []byte { return []byte{'['} }

func (taskBox) Parse(parent ast.Node, block text.Reader, _ parser.Context) ast.Node {
	// A ListItem's first TextBlock, with nothing parsed in it yet.
	if parent.Parent() == nil || parent.Parent().FirstChild() != parent || parent.HasChildren() {
		return nil
	}
	if _, ok := parent.Parent().(*ast.ListItem); !ok {
		return nil
	}
	line, _ := block.PeekLine()
	if len(line) < 3 || line[0] != '[' || line[2] != ']' {
		return nil
	}
	mark := line[1]
	if mark != 'x' && mark != 'X' && !util.IsSpace(mark) {
		return nil
	}
	n := 3
	for n < len(line) && util.IsSpace(line[n]) {
		n++
	}
	block.Advance(n)
	return east.NewTaskCheckBox(mark == 'x' || mark == 'X')
}

func (taskBox) CloseBlock(ast.Node, parser.Context) {}
