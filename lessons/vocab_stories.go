package lessons

import (
	"maps"
	"slices"
	"time"
)

// Words the replication stories once told as Go tests in server/cluster
// need: time moved tick by tick as on a running lab, and whether the
// controller fenced a broker, what a power loss cut.

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
	// power-loss-cut lists the files, relative to the log dir, whose
	// unsynced bytes the broker's last power loss cut.
	queries["power-loss-cut"] = querySpec{"broker", func(e *Env, a []string) (Value, error) {
		return list(slices.Sorted(maps.Keys(e.powerLost[id(a[0])]))), nil
	}}
}
