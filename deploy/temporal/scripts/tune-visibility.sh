#!/bin/sh
# Drops the indexes of Temporal's PostgreSQL visibility table (executions_visibility) that no
# query of Herald's or of the Temporal Web UI's usual views uses. The table carries 73
# indexes; every visibility write (a workflow's start, its close, each search attribute
# update) maintains all of them, and that is much of what a delivery costs the database
# (docs/sizing.md has the figures). A dropped index never changes what a query returns, only
# how fast: a query on a column whose index is gone reads the namespace's rows instead.
#
# Dropped: the indexes on the columns Temporal reserves for its own attributes
# (TemporalBool01, TemporalKeyword01, ...: Temporal*NN), on history length and size,
# execution duration, state transition count, parent and root workflow ids, the batcher,
# schedule, pause, worker deployment and build id columns, and the external payload
# figures. Kept: the default order, workflow id, type, status, task queue, execution time,
# TemporalChangeVersion (find workflows still on an old code version), the namespace
# division, reported problems, and every custom search attribute field (Keyword01..10,
# Bool01, Text01, ...) unless TUNE_KEEP_CUSTOM names the ones to keep. Herald's attributes
# are mapped to Keyword fields, but which ones is recorded in the namespace's metadata,
# which SQL cannot read, and the table is shared by every namespace: by default no custom
# field loses its index. If you know the mapping of every namespace of the cluster
# (`temporal operator search-attribute list` shows the attributes; a cluster that only ever
# registered Herald's six attributes in one namespace maps them to Keyword01..Keyword06),
# set TUNE_KEEP_CUSTOM=Keyword01,...,Keyword06 to drop the other custom fields' indexes too.
#
# Safe on every start (docker-compose.yml runs it after setup-schema.sh): it records each
# index's definition (pg_indexes.indexdef) in the table herald_dropped_indexes before it
# drops it, drops with DROP INDEX CONCURRENTLY (writers are not blocked), and does nothing
# for indexes already gone. A schema upgrade that creates an index again is undone on the
# next run. `tune-visibility.sh --restore` creates every recorded index again
# (CONCURRENTLY, so on a large table it takes a while but blocks no writer) and forgets it;
# run it before an upgrade if update-schema ever fails on a missing index, and to go back to
# the stock schema. With TUNE_KEEP_CUSTOM set, a run also restores the recorded indexes of
# custom fields it now keeps.
#
# Connection: SQL_HOST, SQL_PORT (default 5432), SQL_USER, SQL_PASSWORD, as for
# setup-schema.sh; VISIBILITY_DB (default temporal_visibility). Needs psql.
set -eu
: "${SQL_HOST:?SQL_HOST must be set}"
: "${SQL_USER:?SQL_USER must be set}"
: "${SQL_PASSWORD:?SQL_PASSWORD must be set}"
db=${VISIBILITY_DB:-temporal_visibility}
keep=${TUNE_KEEP_CUSTOM:-all}

mode=tune
case "${1:-}" in
"") ;;
--restore) mode=restore ;;
*)
	echo "tune-visibility: unknown argument '$1': run it without arguments to drop the unused indexes, or with --restore to create them again" >&2
	exit 2
	;;
esac
if [ "$keep" != all ] && ! printf '%s' "$keep" | grep -Eqi '^((bool|datetime|double|int|keyword|keywordlist|text)[0-9]{2})?(,(bool|datetime|double|int|keyword|keywordlist|text)[0-9]{2})*$'; then
	echo "tune-visibility: TUNE_KEEP_CUSTOM='$keep' is not 'all' or a comma-separated list of custom fields such as Keyword01,Keyword02" >&2
	exit 2
fi
# The column names PostgreSQL holds (lower case), as an SQL array literal.
keep_sql=$(printf '%s' "$keep" | tr 'A-Z' 'a-z')

export PGPASSWORD="$SQL_PASSWORD" PGOPTIONS="-c client_min_messages=warning"
# Each statement \gexec runs is its own transaction, as DROP/CREATE INDEX CONCURRENTLY need.
run() {
	psql -h "$SQL_HOST" -p "${SQL_PORT:-5432}" -U "$SQL_USER" -d "$db" -X -q -v ON_ERROR_STOP=1 \
		-v keep="$keep_sql" "$@"
}

run <<'SQL'
CREATE TABLE IF NOT EXISTS herald_dropped_indexes (
  index_name  TEXT PRIMARY KEY,
  column_name TEXT NOT NULL,
  indexdef    TEXT NOT NULL,
  dropped_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- The indexes of executions_visibility with the column each serves: the first key column
-- after namespace_id.
CREATE OR REPLACE VIEW herald_visibility_indexes AS
SELECT i.relname AS index_name, a.attname AS column_name, pg_get_indexdef(x.indexrelid) AS indexdef, x.indisvalid AS valid
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = current_schema()
JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[1]
WHERE t.relname = 'executions_visibility' AND x.indnatts > 1;

-- herald_trimmable(column, keep): whether the index on column may go. keep is 'all' or the
-- custom fields to keep, comma-separated, lower case.
CREATE OR REPLACE FUNCTION herald_trimmable(col TEXT, keep TEXT) RETURNS BOOLEAN
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN col ~ '^(bool|datetime|double|int|keyword|keywordlist|text)[0-9]{2}$'
      THEN keep <> 'all' AND NOT col = ANY (string_to_array(keep, ','))
    WHEN col ~ '^temporal(bool|datetime|double|int|keyword|keywordlist|lowcardinalitykeyword)[0-9]{2}$' THEN true
    ELSE col IN ('history_length', 'history_size_bytes', 'execution_duration', 'state_transition_count',
      'parent_workflow_id', 'parent_run_id', 'root_workflow_id', 'root_run_id', 'batcheruser',
      'binarychecksums', 'buildids', 'temporalpauseinfo', 'temporalscheduledstarttime',
      'temporalscheduledbyid', 'temporalschedulepaused', 'temporalworkerdeploymentversion',
      'temporalworkflowversioningbehavior', 'temporalworkerdeployment',
      'temporalusedworkerdeploymentversions', 'temporalexternalpayloadsizebytes',
      'temporalexternalpayloadcount')
  END
$$;
SQL

# restore_sql WHERE: statements that create the recorded indexes matching WHERE again (an
# invalid one left by an interrupted build is dropped first) and forget them.
restore_sql() {
	cat <<SQL
SELECT format('DROP INDEX CONCURRENTLY IF EXISTS %I', d.index_name)
FROM herald_dropped_indexes d JOIN herald_visibility_indexes v USING (index_name)
WHERE NOT v.valid AND ($1) ORDER BY 1
\\gexec
SELECT regexp_replace(d.indexdef, '^CREATE INDEX ', 'CREATE INDEX CONCURRENTLY IF NOT EXISTS '),
       format('DELETE FROM herald_dropped_indexes WHERE index_name = %L', d.index_name)
FROM herald_dropped_indexes d WHERE ($1) ORDER BY d.index_name
\\gexec
SQL
}

if [ "$mode" = restore ]; then
	restore_sql true | run
	echo "tune-visibility: every index tune-visibility.sh dropped in $db is back"
	exit 0
fi

{
	restore_sql "NOT herald_trimmable(d.column_name, :'keep')"
	cat <<'SQL'
SELECT format('INSERT INTO herald_dropped_indexes (index_name, column_name, indexdef) VALUES (%L, %L, %L) '
              'ON CONFLICT (index_name) DO UPDATE SET indexdef = EXCLUDED.indexdef', index_name, column_name, indexdef),
       format('DROP INDEX CONCURRENTLY IF EXISTS %I', index_name)
FROM herald_visibility_indexes
WHERE herald_trimmable(column_name, :'keep') ORDER BY index_name
\gexec
SELECT 'tune-visibility: executions_visibility has ' || count(*) || ' indexes; '
       || (SELECT count(*) FROM herald_dropped_indexes) || ' dropped, their definitions in herald_dropped_indexes' AS msg
FROM pg_indexes WHERE tablename = 'executions_visibility' AND schemaname = current_schema()
\gset
\echo :msg
SQL
} | run
