#!/bin/sh
# Writes a standalone zoo.cfg (data in /data, client port 2181) and runs ZooKeeper in the foreground.
set -eu
cat > /tmp/zoo.cfg <<CFG
tickTime=2000
dataDir=/data
clientPort=2181
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr,ruok}
CFG
exec java -Xmx256m -XX:+UseSerialGC -Dzookeeper.log.dir=/tmp -cp /usr/share/java/zookeeper.jar \
    org.apache.zookeeper.server.quorum.QuorumPeerMain /tmp/zoo.cfg
