package lessons

import (
	"fmt"

	"tidemark/i18n"
)

// Err is a message of the lesson language in no language yet: a catalog
// key (lesson.error.*) and its arguments. An argument that is an *Err is
// rendered in the same language, so a refusal built of parts (an action's
// name, then what is wrong with its arguments) has no English left inside
// a translated text.
type Err struct {
	Key  string
	Args []any
}

// errk is the keyed error key with args; its English text is the catalog's.
func errk(key string, args ...any) *Err { return &Err{Key: key, Args: args} }

func (e *Err) Error() string { return e.In(i18n.English) }

// In renders e in lang.
func (e *Err) In(lang i18n.Lang) string { return i18n.T(lang, e.Key, argsIn(lang, e.Args)...) }

// argsIn renders the keyed arguments in lang; other errors give their text.
func argsIn(lang i18n.Lang, args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case *Err:
			out[i] = a.In(lang)
		case error:
			out[i] = a.Error()
		default:
			out[i] = a
		}
	}
	return out
}

// ParseError is a lesson, scenario or experiment file refused: the file,
// the line (0: the file as a whole) and what is wrong, in English (Msg) and
// as a catalog key with its arguments as text (Key, Args; English). In
// renders it in any language.
type ParseError struct {
	File string
	Line int
	Msg  string
	Key  string
	Args []string
	args []any
}

// parseErr is the refusal of file at line with the catalog's key and args.
func parseErr(file string, line int, key string, args ...any) *ParseError {
	e := &ParseError{File: file, Line: line, Key: key, args: args}
	e.Msg = i18n.T(i18n.English, key, argsIn(i18n.English, args)...)
	e.Args = make([]string, len(args))
	for i, a := range argsIn(i18n.English, args) {
		e.Args[i] = fmt.Sprint(a)
	}
	return e
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Text is what is wrong (without file and line) in lang; Msg for an error
// without a key.
func (e *ParseError) Text(lang i18n.Lang) string {
	if e.Key == "" {
		return e.Msg
	}
	if e.args == nil && len(e.Args) > 0 { // made by hand, its arguments as text
		a := make([]any, len(e.Args))
		for i, s := range e.Args {
			a[i] = s
		}
		return i18n.T(lang, e.Key, a...)
	}
	return i18n.T(lang, e.Key, argsIn(lang, e.args)...)
}
