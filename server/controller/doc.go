// Package controller is the cluster controller: it keeps the cluster metadata
// and makes every decision that must be made in one place. It registers
// brokers and fences those that miss their session timeout; assigns each
// partition's replicas (AR); elects leaders — the next live ISR member in AR
// order, or, only with unclean.leader.election.enable, any live replica — and
// bumps the leader epoch at each election; and accepts or rejects the ISR
// changes leaders propose (AlterPartition), using the partition epoch to turn
// away zombie leaders.
//
// In Kafka this is the job of ZooKeeper plus the controller broker in the
// classic write-ups, and of the KRaft controller quorum today. Here the
// metadata lives in badger, written synchronously before any method returns,
// so a restart of the lab keeps it. The controller has no goroutines: time
// moves only through Tick with the injected clock, so a paused lab clock
// pauses fencing too, and tests are exact.
package controller
