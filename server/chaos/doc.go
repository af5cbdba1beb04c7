// Package chaos is Tidemark's durability checker: it runs a workload of
// unique values under a seeded random fault schedule on a paused lab
// cluster, then reads everything back and checks every acknowledged write
// against what a consumer reads and what every replica holds.
//
// The pieces:
//
//   - Generate turns a seed into a schedule of actions (produce, fetch
//     rounds, clock steps, crash, power loss, restart, link cuts, heal) with
//     math/rand/v2's PCG source, so a seed is a run.
//   - Run plays a schedule on a fresh cluster: time moves only with
//     Cluster.Step and replication only with fetch rounds, and each produce
//     is handed off deterministically, so the same schedule gives the same
//     result (Replay checks this from an exported run).
//   - Check is the checker proper: given what the producers were told and
//     what the run observed, it reports acknowledged writes lost (and apart,
//     those lost only to power loss before any replica had fsynced them),
//     found at another offset, duplicated, replicas differing below the HW,
//     the consumer-visible HW going backwards and leaders outside the ISR.
//     Each loss names the election after which the record was gone.
//   - Service runs chaos runs for the web API on private lab clusters.
package chaos
