#!/bin/sh
# Creates Temporal's PostgreSQL databases (temporal, temporal_visibility) and brings their
# schemas to the version this admin-tools image carries. Safe on every start: an existing
# database is kept, setup-schema only adds the version table, update-schema applies only
# the missing versions. Upgrading the Temporal images upgrades the schema on the next `up`.
#
# Connection: SQL_HOST, SQL_PORT, SQL_USER, SQL_PASSWORD (read by temporal-sql-tool).
set -eu
: "${SQL_HOST:?SQL_HOST must be set}"
: "${SQL_USER:?SQL_USER must be set}"
: "${SQL_PASSWORD:?SQL_PASSWORD must be set}"
export SQL_PLUGIN=postgres12

# setup DATABASE SCHEMA: SCHEMA is the schema embedded in temporal-sql-tool.
setup() {
	db=$1
	schema=$2
	if temporal-sql-tool --db "$db" create-database; then
		echo "setup-schema: created database $db"
	else
		echo "setup-schema: database $db not created (it exists, or the next step says why)"
	fi
	temporal-sql-tool --db "$db" setup-schema --version 0.0
	temporal-sql-tool --db "$db" update-schema --schema-name "postgresql/v12/$schema"
	echo "setup-schema: $db is up to date"
}

setup temporal temporal
setup temporal_visibility visibility
