// Package invariant is Tidemark's one durability checker: what the
// scenarios' rules harness (replication/rulestest), the lessons' watcher
// and the chaos checker (server/chaos) hold a partition's replicas to.
// It imports nothing from server/, so the pure rules and the lesson
// language can use it.
package invariant
