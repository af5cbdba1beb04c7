#!/bin/sh
# kcat against a running lab: the broker list (-L), a produce to a topic
# that does not exist yet (auto.create.topics.enable creates it), and the
# records read back. Usage: kcat-clients.sh BROKERS [TOPIC]; KCAT names
# the binary (default kcat). Exits non-zero with what went wrong.
set -eu
brokers=${1:?usage: kcat-clients.sh BROKERS [TOPIC]}
topic=${2:-kcat-auto-$$}
kcat=${KCAT:-kcat}

md=$("$kcat" -b "$brokers" -L)
echo "$md" | grep -q "brokers:" || { echo "kcat -L shows no brokers:"; echo "$md"; exit 1; }

printf 'one\ntwo\nthree\n' | "$kcat" -b "$brokers" -P -t "$topic" -X acks=all -X topic.metadata.refresh.interval.ms=100
got=$("$kcat" -b "$brokers" -C -t "$topic" -o beginning -e -q)
want=$(printf 'one\ntwo\nthree')
if [ "$got" != "$want" ]; then
	echo "read back from $topic:"
	echo "$got"
	exit 1
fi
"$kcat" -b "$brokers" -L -t "$topic" | grep -q "topic \"$topic\" with 1 partitions" || { echo "$topic was not created with 1 partition"; exit 1; }
echo "kcat: produced to and read back from the auto-created topic $topic"
