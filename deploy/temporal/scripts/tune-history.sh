#!/bin/sh
# Keeps the rows of Temporal's PostgreSQL history table (history_node) in the table's own
# pages up to 8 KB, rather than compressing and moving every row over about 2 KB to the
# table's TOAST table (PostgreSQL's default, toast_tuple_target = 2032 bytes).
#
# Why: each row of history_node is one batch of a workflow's history events, written once.
# A Herald delivery's batches carry its encrypted payloads (the event, the attempt's result,
# the delivery's status): the batch that completes a first-try delivery is 2 to 4 KB. Over
# 2 KB, PostgreSQL first tries to compress the row (pglz), which fails on encrypted bytes,
# and then stores it out of line as TOAST chunks: 2.0 more rows and index entries per
# delivery, and the compression attempt, for nothing (docs/sizing.md has the figures). With
# toast_tuple_target at its maximum (8160), a batch up to 8 KB is stored as it is, in one
# row; a larger one is still compressed and moved out of line as before.
#
# It is a storage parameter of the table: no column, index or query changes, what is stored
# is the same, and fsync and synchronous_commit are untouched. It applies to the rows
# written from then on; rows already stored stay as they are. Safe on every start
# (docker-compose.yml runs it after setup-schema.sh; a schema upgrade keeps the parameter).
# `tune-history.sh --restore` puts PostgreSQL's default back.
#
# Connection: SQL_HOST, SQL_PORT (default 5432), SQL_USER, SQL_PASSWORD, as for
# setup-schema.sh; TEMPORAL_DB (default temporal). Needs psql.
set -eu
: "${SQL_HOST:?SQL_HOST must be set}"
: "${SQL_USER:?SQL_USER must be set}"
: "${SQL_PASSWORD:?SQL_PASSWORD must be set}"
db=${TEMPORAL_DB:-temporal}

case "${1:-}" in
"") sql='ALTER TABLE history_node SET (toast_tuple_target = 8160)' ;;
--restore) sql='ALTER TABLE history_node RESET (toast_tuple_target)' ;;
*)
	echo "tune-history: unknown argument '$1': run it without arguments to keep history batches up to 8 KB in the table, or with --restore for PostgreSQL's default" >&2
	exit 2
	;;
esac

export PGPASSWORD="$SQL_PASSWORD" PGOPTIONS="-c client_min_messages=warning"
run() {
	psql -h "$SQL_HOST" -p "${SQL_PORT:-5432}" -U "$SQL_USER" -d "$db" -X -q -v ON_ERROR_STOP=1 "$@"
}
run -c "$sql"
echo "tune-history: history_node in $db: $(run -At -c "SELECT coalesce(array_to_string(reloptions, ', '), 'PostgreSQL''s defaults') FROM pg_class WHERE relname = 'history_node' AND relkind = 'r'")"
