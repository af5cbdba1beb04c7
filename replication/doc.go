// Package replication holds the per-partition replication rules of a
// Kafka-style broker as a pure, deterministic state machine: no goroutines, no
// clock reads, no disk and no network inside. One Partition value is one
// broker's view of one partition, leader or follower.
//
// # The model
//
// Every replica has a log. Its log end offset (LEO) is the offset the next
// record will get. The leader appends what producers send, stamping each batch
// with the current leader epoch; followers pull with Fetch requests and append
// what they get. A follower's fetch offset is its LEO, so the leader learns
// every follower's LEO from its fetches. The high watermark (HW) is the
// smallest LEO over the in-sync replicas (ISR): everything below it is on
// every ISR member, so consumers may read it and acks=all producers may be
// answered. The HW never moves backwards on a leader, and it does not move at
// all while the ISR is smaller than min.insync.replicas. Followers learn the HW
// from the leader's fetch responses, one round late: follower HW =
// min(leader HW, own LEO).
//
// A follower that has not been caught up (fetched up to the leader's LEO as of
// its fetch) for replica.lag.time.max.ms leaves the ISR; a follower whose LEO
// reaches both the HW and the start offset of the current leader epoch joins
// it again. The leader only proposes ISR changes (AlterPartition, carrying the
// partition epoch); the controller decides. While a proposal is in flight the
// HW is computed over the maximal ISR (current ISR plus proposed additions),
// so the HW is never ahead of a replica that might be counted as in sync. A
// leader that lost its leadership without knowing it (a zombie) proposes with
// a stale partition epoch, is rejected, and therefore cannot shrink the ISR to
// itself to commit writes alone.
//
// When a replica becomes a follower (after an election or a restart) its log
// may hold records the new leader does not have. Two truncation rules are
// available, switchable at run time (Config.TruncationRule):
//   - RuleHighWatermark, Kafka before 0.11: truncate to your own HW, then
//     fetch. Simple, but the follower's HW lags the leader's, so acknowledged
//     records can be lost (KIP-101 scenario 1) and logs can diverge after a
//     power loss (KIP-101 scenario 2).
//   - RuleLeaderEpoch, KIP-101 with the KIP-279 fix: the follower sends the
//     epoch of its last record with each fetch; the leader answers with the
//     end offset of the largest epoch it knows that is ≤ that epoch
//     (EndOffsetForEpoch, OffsetsForLeaderEpoch semantics) when the follower
//     has gone past it, and the follower truncates to the end of the last
//     epoch both logs share, iterating until they agree.
//
// # Driving it
//
// The broker runtime owns the goroutine, the clock, the files and the sockets.
// It calls one Partition from one goroutine (the partition's own goroutine);
// Partition has no locks. Inputs, in Kafka's vocabulary:
//   - LeaderAndIsr: the controller's view (leader, leader epoch, partition
//     epoch, replicas, ISR).
//   - CheckProduce, then the runtime appends, then ProduceAppended.
//   - FollowerFetch on the leader: a follower's Fetch; the result says what to
//     answer.
//   - NextFetch and HandleFetchResponse on a follower.
//   - AlterPartitionResponse: the controller's answer to an ISR proposal,
//     handed back with the proposal it answers (a late answer to an
//     older proposal is ignored).
//   - Tick: the time as the runtime reads it (milliseconds); the state
//     machine never reads a clock, so a stepped clock replays exactly.
//
// Decisions come out of Ready, as in etcd raft: HW changes, leader-epoch cache
// changes, truncations, ISR proposals and completed produce requests. The
// rule is "persist before send": apply Truncations and write EpochCache to the
// leader-epoch-checkpoint before sending the next Fetch or any response; then
// send AlterPartition and answer the completed produce requests. The HW itself
// may be checkpointed lazily (Kafka writes replication-offset-checkpoint every
// few seconds) — that laziness is exactly what KIP-101 scenario 1 exploits.
//
// Errors are franz-go kerr values with Kafka's codes. kerr still calls code 6
// by its old name NOT_LEADER_FOR_PARTITION; Kafka now says
// NOT_LEADER_OR_FOLLOWER.
package replication
