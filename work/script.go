package work

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// scriptCommand builds the shell command of the built-in script agent for
// one phase: run the doc's first ```sh block in the worktree; if it exits
// 0, rename the doc to DONE_ and commit everything. It goes through the
// same agent contract as any other command (process group, log, env).
func (r *Runner) scriptCommand(wt, docRel, doneRel, id string) (string, error) {
	src, err := os.ReadFile(filepath.Join(wt, filepath.FromSlash(docRel)))
	if err != nil {
		return "", fmt.Errorf("script agent: %w", err)
	}
	script, ok := FirstShellBlock(src)
	if !ok {
		return "", fmt.Errorf("script agent: %s has no ```sh block to run", docRel)
	}
	file := filepath.Join(r.Layout.LogDir(id), "script.sh")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("sh -e %s && git mv -- %s %s && git add -A && git commit -q -m %s",
		shellQuote(file), shellQuote(docRel), shellQuote(doneRel), shellQuote(id+": done (script agent)")), nil
}

// FirstShellBlock returns the first fenced code block whose info string is
// sh, bash or shell.
func FirstShellBlock(src []byte) (string, bool) {
	doc := goldmark.DefaultParser().Parse(text.NewReader(src))
	var out string
	var found bool
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering || found {
			return ast.WalkContinue, nil
		}
		fc, ok := n.(*ast.FencedCodeBlock)
		if !ok {
			return ast.WalkContinue, nil
		}
		switch strings.TrimSpace(string(fc.Language(src))) {
		case "sh", "bash", "shell":
		default:
			return ast.WalkContinue, nil
		}
		var b strings.Builder
		lines := fc.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			b.Write(seg.Value(src))
		}
		out, found = b.String(), true
		return ast.WalkStop, nil
	})
	return out, found
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
