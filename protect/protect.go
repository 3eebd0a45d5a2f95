package protect

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Rule is a set of files one reader of the driver reads.
type Rule struct {
	// Glob is a slash-separated pattern from the repository's top:
	// "claudopilot.config", ".claudopilot/**", "roadmap/*.md",
	// "**/.gitattributes". '*' stays within a folder, '**' spans any
	// number of them, {a,b} is either. Matching ignores case: a checkout
	// on a case-insensitive disk reads CLAUDOPILOT.CONFIG as
	// claudopilot.config.
	Glob string
	// Why says what reads the files and what they steer, for the person
	// told of a refusal: "a settings file, read by the settings model".
	Why string
}

// Set is every file a landing must not change.
type Set struct {
	// Off turns the check off (PROTECTED_PATHS=none).
	Off   bool
	Rules []Rule
}

// Hit is one protected path a landing changes.
type Hit struct {
	Path string
	Why  string
}

// Check returns the paths among changed that s protects, each with the
// first matching rule's Why, in changed's order. allow lets a path
// through that the landing may change all the same (what the phase's
// owns: names, its own doc); nil allows nothing. An Off set finds
// nothing.
func (s *Set) Check(changed []string, allow func(string) bool) []Hit {
	if s.Off {
		return nil
	}
	var hits []Hit
	for _, p := range changed {
		for _, r := range s.Rules {
			if Match(r.Glob, p) {
				if allow == nil || !allow(p) {
					hits = append(hits, Hit{Path: p, Why: r.Why})
				}
				break
			}
		}
	}
	return hits
}

// Describe is the refusal's detail: each path with why it is protected.
func Describe(hits []Hit) string {
	parts := make([]string, len(hits))
	for i, h := range hits {
		parts[i] = fmt.Sprintf("%s (%s)", h.Path, h.Why)
	}
	return "changes files that steer the next run: " + strings.Join(parts, "; ")
}

// Match reports whether the repository path p is one of glob's files, or
// stands where one of glob's folders does: a file or symlink committed as
// ".claudopilot" or "roadmap" puts whatever it points to in the place of
// the folder the reader reads, so it is protected too. Only the folders
// glob names literally count ("roadmap/prompts/**" protects "roadmap"
// and "roadmap/prompts"; "**/.gitattributes" no folder).
func Match(glob, p string) bool {
	glob, p = strings.ToLower(glob), strings.ToLower(strings.TrimPrefix(p, "./"))
	if doublestar.MatchUnvalidated(glob, p) {
		return true
	}
	segs := strings.Split(glob, "/")
	folder := ""
	for _, seg := range segs[:len(segs)-1] {
		name, ok := literal(seg)
		if !ok {
			break
		}
		folder = path.Join(folder, name)
		if p == folder {
			return true
		}
	}
	return false
}

// literal is the name a glob segment stands for, unescaped, when it has
// no wildcard.
func literal(seg string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		switch c := seg[i]; c {
		case '\\':
			if i++; i < len(seg) {
				b.WriteByte(seg[i])
			}
		case '*', '?', '[', '{':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// Literal quotes a name for a glob: a phase id or folder name with '*'
// or '[' in it stands for itself.
func Literal(name string) string {
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Under returns the rule for every file below dir, an absolute path
// inside top (the repository's top level); none when dir is outside it.
func Under(top, dir, why string) []Rule {
	rel, ok := Rel(top, dir)
	if !ok {
		return nil
	}
	return []Rule{{Glob: Literal(rel) + "/**", Why: why}}
}

// File returns the rule for one file, an absolute path inside top; none
// when it is outside.
func File(top, file, why string) []Rule {
	rel, ok := Rel(top, file)
	if !ok {
		return nil
	}
	return []Rule{{Glob: Literal(rel), Why: why}}
}

// Rel is p's slash-separated path from top, and whether p is inside top
// (and is not top itself).
func Rel(top, p string) (string, bool) {
	rel, err := filepath.Rel(top, p)
	if err != nil {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

// ParseList reads PROTECTED_PATHS: globs separated by commas, added to
// the protected set, or "none", which turns the check off.
func ParseList(v string) (rules []Rule, off bool, err error) {
	var items []string
	for _, it := range strings.Split(v, ",") {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	for _, it := range items {
		if strings.EqualFold(it, "none") {
			if len(items) > 1 {
				return nil, false, fmt.Errorf("%q: none turns the check off and stands alone", v)
			}
			return nil, true, nil
		}
		g := strings.TrimLeft(path.Clean(strings.TrimPrefix(it, "./")), "/")
		if g == "" || g == "." || g == ".." || strings.HasPrefix(g, "../") || !doublestar.ValidatePattern(g) {
			return nil, false, fmt.Errorf("%q is not a glob of paths in the repository (e.g. scripts/**, Makefile)", it)
		}
		rules = append(rules, Rule{Glob: g, Why: "named in PROTECTED_PATHS"})
	}
	return rules, false, nil
}
