package lessons

import (
	"fmt"
	"strings"

	"tidemark/i18n"
	"tidemark/server/controller"
)

// compile turns a parsed Script into a Lesson whose steps run the script's
// actions on a run's Env and whose choices hold by the script's conditions.
func compile(s *Script) (*Lesson, error) {
	l := &Lesson{ID: s.ID, Number: s.Number, Part: s.Part, BuildsOn: s.BuildsOn, Title: s.Title, Summary: s.Summary,
		Concepts: s.Concepts, Brokers: s.Brokers, File: s.File}
	if s.Fencing != "" {
		r, err := controller.ParseFencingRule(s.Fencing)
		if err != nil {
			return nil, parseErr(s.File, 0, "lesson.error.wrapped", err)
		}
		l.Fencing = &r
	}
	setup := s.Setup
	l.Setup = func(e *Env) error {
		for _, a := range setup {
			if err := e.do(a); err != nil {
				return fmt.Errorf("%s:%d: %w", s.File, a.Line, err)
			}
		}
		return nil
	}
	for _, st := range s.Steps {
		step := Step{Title: st.Title, Explain: st.Explain}
		if len(st.Choices) > 0 {
			p := &Prediction{Question: st.Question}
			for _, c := range st.Choices {
				cond := c.When
				p.Choices = append(p.Choices, Choice{ID: c.ID, Text: c.Text, Why: c.Why, Holds: func(e *Env) bool {
					ok, _, err := e.eval(cond)
					return ok && err == nil
				}})
			}
			step.Predict = p
		}
		items := st.Items
		step.Run = func(e *Env) error {
			for _, it := range items {
				if err := e.item(it); err != nil {
					return fmt.Errorf("%s:%d: %w", s.File, it.Line, err)
				}
			}
			return nil
		}
		l.Steps = append(l.Steps, step)
	}
	return l, nil
}

func (e *Env) item(it Item) error {
	switch {
	case it.Action != nil:
		return e.do(*it.Action)
	case it.Say != nil:
		t, err := e.fill(*it.Say)
		if err != nil {
			return err
		}
		e.Say(t)
	case it.Check != nil:
		ok, got, err := e.eval(*it.Check)
		if err != nil {
			return err
		}
		name, err := e.fill(it.Name)
		if err != nil {
			return err
		}
		e.out.Checks = append(e.out.Checks, Check{Name: name, Pass: ok, Got: got})
	}
	return nil
}

func (e *Env) do(a Action) error {
	spec := actions[a.Name]
	var args []string
	opt := map[string]string{}
	for _, x := range a.Args {
		if k, v, ok := strings.Cut(x, "="); ok && len(spec.keys) > 0 {
			opt[k] = v
			continue
		}
		args = append(args, x)
	}
	return spec.run(e, args, opt)
}

func (e *Env) query(q Query) (Value, error) {
	return queries[q.Name].get(e, q.Args)
}

// eval decides a condition; got is what its queries found, for people.
func (e *Env) eval(c Cond) (bool, Text, error) { return evalWith(c, e.query) }

// evalWith decides a condition with the queries of one back-end.
func evalWith(c Cond, query func(Query) (Value, error)) (bool, Text, error) {
	all := true
	var got []Text
	for _, t := range c.Terms {
		v, err := query(t.Q)
		if err != nil {
			return false, Text{}, err
		}
		want := str(t.Want)
		if t.WantQ != nil {
			if want, err = query(*t.WantQ); err != nil {
				return false, Text{}, err
			}
		}
		ok, err := compare(v, t.Op, want)
		if err != nil {
			return false, Text{}, fmt.Errorf("%s: %w", t.Q, err)
		}
		all = all && ok
		got = append(got, v.Human())
	}
	return all, joinTexts(got, T(" · ", " · ", " · ")), nil
}

func joinTexts(ts []Text, sep Text) Text {
	var out Text
	for i, t := range ts {
		if i > 0 {
			out = Text{out.En + sep.En, out.Hans + sep.Hans, out.Hant + sep.Hant}
		}
		out = Text{out.En + t.En, out.Hans + t.Hans, out.Hant + t.Hant}
	}
	return out
}

// fill replaces each {QUERY} of t with the query's value for people, in
// each language.
func (e *Env) fill(t Text) (Text, error) {
	var err error
	sub := func(lang i18n.Lang, s string) string {
		return placeholderRe.ReplaceAllStringFunc(s, func(ph string) string {
			q, perr := parseQuery(strings.Fields(ph[1 : len(ph)-1]))
			if perr != nil {
				err = perr
				return ph
			}
			v, qerr := e.query(q)
			if qerr != nil {
				err = qerr
				return ph
			}
			return v.Human().In(lang)
		})
	}
	out := Text{sub(i18n.English, t.En), sub(i18n.SimplifiedChinese, t.Hans), sub(i18n.TraditionalChinese, t.Hant)}
	return out, err
}
