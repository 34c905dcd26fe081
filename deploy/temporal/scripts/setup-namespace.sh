#!/bin/sh
# Waits for the Temporal frontend, creates Herald's namespace if it is missing and registers
# Herald's search attributes in it. Safe on every start: each step keeps what exists.
# Uses the temporal CLI when it is on PATH (compose's admin-tools image), else
# `herald namespace setup` (a host with herald only, e.g. the cluster tests).
#
# TEMPORAL_ADDRESS   frontend host:port
# TEMPORAL_NAMESPACE namespace to create (default "default")
# NAMESPACE_RETENTION how long closed workflows are kept (default 72h)
# HERALD             the herald binary, when there is no temporal CLI (default "herald")
set -eu
: "${TEMPORAL_ADDRESS:?TEMPORAL_ADDRESS must be set}"
ns=${TEMPORAL_NAMESPACE:-default}
retention=${NAMESPACE_RETENTION:-72h}

# retry WHAT COMMAND...: runs COMMAND until it succeeds, for about two minutes.
retry() {
	what=$1
	shift
	n=0
	until "$@"; do
		n=$((n + 1))
		if [ "$n" -ge 60 ]; then
			echo "setup-namespace: gave up: $what" >&2
			return 1
		fi
		sleep 2
	done
}

if ! command -v temporal >/dev/null 2>&1; then
	retry "set up namespace $ns at $TEMPORAL_ADDRESS with ${HERALD:-herald}" \
		"${HERALD:-herald}" namespace setup --address "$TEMPORAL_ADDRESS" --namespace "$ns" --retention "$retention"
	exit 0
fi

retry "frontend at $TEMPORAL_ADDRESS is not serving" \
	temporal operator cluster health --address "$TEMPORAL_ADDRESS"

if temporal operator namespace describe --address "$TEMPORAL_ADDRESS" --namespace "$ns" >/dev/null 2>&1; then
	echo "setup-namespace: namespace $ns exists"
else
	retry "create namespace $ns" \
		temporal operator namespace create --address "$TEMPORAL_ADDRESS" --namespace "$ns" --retention "$retention"
	echo "setup-namespace: created namespace $ns (retention $retention)"
fi

# Adding an attribute that exists with the same type succeeds, so this is idempotent.
# Retried because a namespace just created takes a moment to reach every service.
for attr in HeraldStatus HeraldEndpoint HeraldEventType HeraldCircuit HeraldDisabled HeraldEventId HeraldTenant; do
	retry "register search attribute $attr" \
		temporal operator search-attribute create --address "$TEMPORAL_ADDRESS" --namespace "$ns" \
		--name "$attr" --type Keyword
done
retry "register search attribute HeraldSubscriptions" \
	temporal operator search-attribute create --address "$TEMPORAL_ADDRESS" --namespace "$ns" \
	--name HeraldSubscriptions --type KeywordList
echo "setup-namespace: search attributes HeraldStatus, HeraldEndpoint, HeraldEventType, HeraldCircuit, HeraldDisabled, HeraldEventId, HeraldTenant (Keyword), HeraldSubscriptions (KeywordList) registered in $ns"
