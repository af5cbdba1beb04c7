"""kafka-python's admin client against a running lab, N times over.

Usage: kafka-python-admin.py BROKERS [N]. Each round starts a
KafkaAdminClient (which probes the broker's versions, kafka-python 2.0.2
with ApiVersions v0 and Metadata v0), creates a topic, lists the topics and
describes the topic's configs, then closes. Exits non-zero naming the round that failed.
"""
import sys

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

brokers = sys.argv[1].split(",")
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
for i in range(rounds):
    try:
        admin = KafkaAdminClient(bootstrap_servers=brokers, client_id="kafka-python-%d" % i, request_timeout_ms=15000)
        admin.create_topics([NewTopic(name="kafka-python-%d" % i, num_partitions=1, replication_factor=1)])
        topics = admin.list_topics()
        if "kafka-python-%d" % i not in topics:
            raise Exception("created topic not listed: %r" % topics)
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kafka-python-%d" % i)])
        if "cleanup.policy" not in repr(configs):
            raise Exception("DescribeConfigs without cleanup.policy: %r" % configs)
        admin.close()
    except Exception as e:  # noqa: BLE001 - the round's failure is the result
        print("round %d of %d: %s: %s" % (i + 1, rounds, type(e).__name__, e))
        sys.exit(1)
    print("round %d of %d: admin client started, topic created and listed" % (i + 1, rounds))
print("kafka-python %s: %d of %d admin clients started" % (__import__("kafka").__version__, rounds, rounds))
