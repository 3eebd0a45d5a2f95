package root

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/completion"
)

// TestCLIDocs keeps README.md true to the CLI: every flag a command's
// --help prints is documented in README.md or under docs/, every exit code
// of exitTable has a row in the README's exit-code table, and every
// visible command has a row in its Commands table.
func TestCLIDocs(t *testing.T) {
	readme := readDoc(t, filepath.Join(top, "README.md"))
	all := readme
	err := filepath.WalkDir(filepath.Join(top, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			all += "\n" + readDoc(t, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("flags", func(t *testing.T) {
		a := &cmdutil.App{S: &cmdutil.Streams{}, Env: map[string]string{}, Cwd: t.TempDir(), Commands: Commands}
		for _, c := range Commands() {
			if c.Name == "help" { // its arguments are topics; it has no flags
				continue
			}
			flags := completion.FlagNames(context.Background(), a, c)
			for _, f := range flags {
				word := regexp.MustCompile(`--` + regexp.QuoteMeta(f) + `\b([^-]|$)`)
				if !word.MatchString(all) {
					t.Errorf("claudopilot %s --%s is in --help but not in README.md or docs/", c.Name, f)
				}
			}
		}
	})

	t.Run("exit codes", func(t *testing.T) {
		documented := map[int]bool{}
		for _, row := range tableRows(t, readme, "Exit codes") {
			for _, f := range strings.Split(row[0], "/") {
				if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
					documented[n] = true
				}
			}
		}
		known := map[int]bool{}
		for _, e := range cmdutil.ExitTable {
			known[e.Code] = true
			if !documented[e.Code] {
				t.Errorf("exit code %d (%s) has no row in the README's exit-code table", e.Code, e.Text)
			}
		}
		// And back: a README row no code path can produce (Claudopilot's 7
		// was one) misleads a script that waits for it.
		for n := range documented {
			if !known[n] {
				t.Errorf("the README's exit-code table has %d, which cmdutil.ExitTable does not", n)
			}
		}
	})

	t.Run("commands", func(t *testing.T) {
		documented := map[string]bool{}
		name := regexp.MustCompile("`claudopilot ([a-z][a-z0-9-]*)")
		for _, row := range tableRows(t, readme, "Commands") {
			for _, m := range name.FindAllStringSubmatch(row[0], -1) {
				documented[m[1]] = true
			}
		}
		for _, c := range Commands() {
			if !c.Hidden && !documented[c.Name] {
				t.Errorf("command %s has no row in the README's Commands table", c.Name)
			}
		}
	})
}

// top is the repository's top level, from this package's folder.
const top = "../../.."

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tableRows returns the cells of the rows of the first markdown table
// under the "## <heading>" section, header and separator left out. A
// "\|" inside a cell does not split it.
func tableRows(t *testing.T, md, heading string) [][]string {
	t.Helper()
	_, sec, ok := strings.Cut(md, "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no \"## %s\" section", heading)
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	var rows [][]string
	inTable := false
	for line := range strings.SplitSeq(sec, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		if !inTable { // the header
			inTable = true
			continue
		}
		if strings.Trim(line, "|-: ") == "" { // the separator
			continue
		}
		rows = append(rows, splitRow(line))
	}
	if len(rows) == 0 {
		t.Fatalf("README.md: no table under \"## %s\"", heading)
	}
	return rows
}

// splitRow splits a table row into its trimmed cells; "\|" stays in a cell.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var (
		cells []string
		cur   strings.Builder
	)
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteString("\\|")
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}
