package lessons

import (
	"errors"
	"maps"
	"slices"
	"time"
)

// Words the replication stories once told as Go tests in server/cluster
// need: time moved tick by tick as on a running lab, and whether the
// controller fenced a broker, what a power loss cut, the whole lab
// stopped and started again.

// brokerTick is the lab's step grain (server/cluster's stepToEventGrain):
// a running broker heartbeats and ticks its replicas at most this often.
const brokerTick = 50 * time.Millisecond

func addStoryVocab() {
	// step-ticks D moves the clock one broker tick at a time, so every
	// heartbeat, controller tick and member timeout in between runs; step
	// runs them once, at its end (a long step is a long silence).
	actions["step-ticks"] = actionSpec{"duration", nil, func(e *Env, a []string, _ map[string]string) error {
		d, _ := time.ParseDuration(a[0])
		for moved := time.Duration(0); moved < d; moved += brokerTick {
			if err := e.c.Step(min(brokerTick, d-moved)); err != nil {
				return err
			}
		}
		e.wait()
		return nil
	}}
	// fenced, on the rules whether their controller considers the broker
	// dead, reads on the lab the KRaft controller's registration: fenced
	// after a session without a heartbeat, until the next one arrives.
	// The topic is not consulted (the rules keep a controller per topic).
	queries["fenced"] = querySpec{"broker topic", func(e *Env, a []string) (Value, error) {
		md := e.c.Controller().Metadata()
		return truth(md.Broker(id(a[0])).Fenced), nil
	}}
	delete(rulesOnlyQueries, "fenced")
	// restart-lab stops the whole lab cleanly and opens it again on its
	// data: the controller's store, every broker's log dir. Events from
	// before (truncations, …) are gone with the old bus.
	actions["restart-lab"] = actionSpec{"", nil, func(e *Env, _ []string, _ map[string]string) error {
		if e.reopen == nil {
			return errors.New("restart-lab: only in a scenario")
		}
		if err := e.c.Close(); err != nil {
			return err
		}
		e.wg.Wait() // a produce still waiting ended with the lab
		c, err := e.reopen()
		if err != nil {
			return err
		}
		e.c = c
		e.wait()
		return nil
	}}
	// power-loss-cut lists the files, relative to the log dir, whose
	// unsynced bytes the broker's last power loss cut.
	queries["power-loss-cut"] = querySpec{"broker", func(e *Env, a []string) (Value, error) {
		return list(slices.Sorted(maps.Keys(e.powerLost[id(a[0])]))), nil
	}}
}
