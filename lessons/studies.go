package lessons

import (
	"embed"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// The built-in studies: experiment files that reproduce the write-ups'
// claims, each claim a check.
//
//go:embed experiments/*.experiment
var studyFiles embed.FS

// Studies returns the built-in studies' names (the files' names without
// .experiment), sorted.
func Studies() []string {
	names, _ := fs.Glob(studyFiles, "experiments/*.experiment")
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, strings.TrimSuffix(path.Base(n), ".experiment"))
	}
	slices.Sort(out)
	return out
}

// Study returns a built-in study's file and its text; false when there is
// no such study.
func Study(name string) (file string, src []byte, ok bool) {
	if !slices.Contains(Studies(), name) {
		return "", nil, false
	}
	file = "experiments/" + name + ".experiment"
	src, err := studyFiles.ReadFile(file)
	return file, src, err == nil
}

// ParseStudy parses a built-in study.
func ParseStudy(name string) (*Experiment, error) {
	file, src, ok := Study(name)
	if !ok {
		return nil, parseErr(name, 0, "lesson.error.no-study", name, strings.Join(Studies(), ", "))
	}
	return ParseExperiment(file, src)
}
