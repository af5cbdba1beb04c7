// Package rulesplay plays scenario files on the pure replication rules:
// rulestest.Cluster, replication.Partition state machines with in-memory
// logs and a ZooKeeper-era controller, instead of a lab cluster. It
// registers itself as the lessons back-end "rules"; only tests import it,
// so the lab binary links none of it.
package rulesplay

import (
	"tidemark/lessons"
	"tidemark/server/controller"
)

// register adds the queries every back-end answers and what happened in
// the last action to the rules' vocabulary, and registers the back-end.
func register() {
	for name, f := range lessons.StatusQueries {
		rulesQueries[name] = rulesStatusValue(f)
	}
	for name, q := range lastQueries {
		rulesQueries[name] = func(r *rulesEnv, a []string) (lessons.Value, error) {
			c, err := r.topic(a[lessons.TopicArg(lessons.RulesLastQueries[name])])
			if err != nil {
				return lessons.Value{}, err
			}
			return q(r, c, a), nil
		}
	}
	be := &lessons.Backend{Actions: map[string]bool{}, Queries: map[string]bool{},
		Fencing: controller.FencingZooKeeperPre22.String(), Start: func(n int) lessons.Play { return newRulesEnv(n) }}
	for name := range rulesActions {
		be.Actions[name] = true
	}
	for name := range rulesQueries {
		be.Queries[name] = true
	}
	lessons.RegisterBackend(lessons.BackendRules, be)
}

// The lessons.Play methods.

func (r *rulesEnv) Act(name string, args []string, opt map[string]string) error {
	return rulesActions[name](r, args, opt)
}

func (r *rulesEnv) Query(name string, args []string) (lessons.Value, error) {
	return rulesQueries[name](r, args)
}

func (r *rulesEnv) Mark()                                { r.setMarks() }
func (r *rulesEnv) Check() error                         { return r.check() }
func (r *rulesEnv) Lanes() string                        { return r.lanes() }
func (r *rulesEnv) Topics() []string                     { return r.order }
func (r *rulesEnv) Violations(topic string) []string     { return r.violations(topic) }
func (r *rulesEnv) Durable(topic string) lessons.Durable { return r.durableOf(topic) }
