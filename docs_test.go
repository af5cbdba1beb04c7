package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink is a Markdown link or image: [text](target) or ![alt](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinksResolve checks every relative link in the README and docs/:
// the file it names exists, and a #fragment names a heading of that file.
// A front door whose links lead nowhere is worse than a long manual.
func TestDocLinksResolve(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"README.md"}, files...)
	checked := 0
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(stripCode(string(body)), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				dest := f
				if path != "" {
					dest = filepath.Join(filepath.Dir(f), path)
				}
				checked++
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", f, i+1, target, dest)
					continue
				}
				if frag != "" && strings.HasSuffix(dest, ".md") && !hasAnchor(t, dest, frag) {
					t.Errorf("%s:%d: link %q: no heading %q in %s", f, i+1, target, frag, dest)
				}
			}
		}
	}
	t.Logf("%d relative links checked", checked)
	if checked < 10 {
		t.Fatalf("only %d relative links found: is the pattern still right?", checked)
	}
}

// stripCode blanks fenced code blocks (keeping their lines, for line
// numbers): a link-like text in a code sample is not a link.
func stripCode(s string) string {
	lines := strings.Split(s, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// hasAnchor reports whether file has a heading whose GitHub-style anchor
// (lower case, punctuation dropped, spaces to hyphens) is frag.
func hasAnchor(t *testing.T, file, frag string) bool {
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(stripCode(string(body)), "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		if anchor(strings.TrimLeft(l, "# ")) == frag {
			return true
		}
	}
	return false
}

func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}
