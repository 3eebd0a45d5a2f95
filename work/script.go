package work

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
	add := "git add -A"
	env, err := r.environment(id)
	if err != nil {
		return "", fmt.Errorf("script agent: %w", err)
	}
	if len(env) > 0 {
		// What WORKTREE_PREPARE_CMD made is environment, not work: the
		// built-in agent's commit leaves it out too.
		spec := []byte(".\x00")
		for _, p := range slices.Sorted(maps.Keys(env)) {
			spec = append(spec, ":(exclude,literal)"+p+"\x00"...)
		}
		specFile := filepath.Join(r.Layout.LogDir(id), "script.pathspec")
		if err := os.WriteFile(specFile, spec, 0o644); err != nil {
			return "", err
		}
		add = "git add -A --pathspec-file-nul --pathspec-from-file=" + shellQuote(specFile)
	}
	return fmt.Sprintf("sh -e %s && git mv -- %s %s && %s && git commit -q -m %s",
		shellQuote(file), shellQuote(docRel), shellQuote(doneRel), add, shellQuote(id+": done (script agent)")), nil
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
