package fact

import (
	"slices"

	"tidemark/events"
)

// ISRCause returns the message word (see Word) that says why an ISR
// changed, from the changes the replication rules or the controller
// decided and put on the event: the text layer translates a cause, it
// never infers one. Changes with other causes than the first are left
// out (a proposal either drops lagging followers or adds one that caught
// up; the controller removes one broker at a time). No changes: the word
// for an unstated cause.
func ISRCause(changes []events.ISRChange) string {
	if len(changes) == 0 {
		return Word("event.word.isr.unstated")
	}
	first := changes[0]
	var brokers []int32
	lag := first.LagMs
	for _, c := range changes {
		if c.Cause == first.Cause {
			brokers = append(brokers, c.Broker)
			lag = min(lag, c.LagMs)
		}
	}
	switch first.Cause {
	case events.ISRLagged:
		// With several followers the shortest lag is named: each of them
		// had not caught up for at least as long.
		if len(brokers) > 1 {
			return Word("event.word.isr.lagged.other", brokers, lag, first.MaxLagMs)
		}
		return Word("event.word.isr.lagged.one", first.Broker, first.LagMs, first.MaxLagMs)
	case events.ISRCaughtUp:
		return Word("event.word.isr.caught-up", first.Broker, first.Offset)
	case events.ISRSessionExpired, events.ISRFenced, events.ISRRestarted, events.ISRUncleanRestart, events.ISRELRCleared:
		return Word("event.word.isr."+string(first.Cause), brokersArg(brokers))
	}
	return Word("event.word.isr.unstated")
}

// brokersArg is one broker's id, or the list of several.
func brokersArg(brokers []int32) any {
	if len(brokers) == 1 {
		return brokers[0]
	}
	return brokers
}

// ISRToELR returns the message word that names the replicas of changes
// that left the ISR for the ELR (KIP-966: the ISR fell below
// min.insync.replicas, so they still hold every committed record and may
// be elected); "" when none did.
func ISRToELR(changes []events.ISRChange) string {
	var to []int32
	for _, c := range changes {
		if c.ToELR && !slices.Contains(to, c.Broker) {
			to = append(to, c.Broker)
		}
	}
	if len(to) == 0 {
		return ""
	}
	return Word("event.word.isr.to-elr", brokersArg(to))
}
