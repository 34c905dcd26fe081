package devserver

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	persistencesql "go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	"go.temporal.io/server/common/resolver"
	_ "modernc.org/sqlite" // the driver the server's SQLite plugin registers too
)

// How Start tunes the engine's storage, unless Options.Stock is set. Measured with
// `herald bench --scenario throughput --db-file ... [--engine stock]` (docs/sizing.md): the
// visibility store's writes — one when a workflow starts, one when it closes, one for each
// search attribute update — were about 40 % of the process's CPU, most of it spent keeping
// the 58 indexes of the visibility table, and compiling the statement that touches them all.
//
//   - Trimmed visibility indexes. The indexes on columns no query of Herald's or of the
//     Temporal UI's usual views filters on are dropped: the preallocated custom search
//     attribute fields no attribute is mapped to, the reserved Temporal* fields and the
//     history size and lineage columns. Queries on those columns still answer, from a scan.
//     Each dropped index's definition is kept in trimmedIndexesTable, and put back when a
//     field gains an attribute or the server starts with Options.Stock.
//   - Visibility in its own database: a new file gets a companion file (VisibilityFile) for
//     the visibility store, and memory gets a second in-memory database. The server's SQLite
//     plugin keeps one connection per database, so the visibility writer no longer queues
//     behind the history writer. An existing file without a companion keeps its visibility
//     records inside, as before.
//   - One partition per task queue (matching.numTaskqueueRead/WritePartitions = 1): with a
//     single matching host, the default 4 partitions only forward polls and tasks to each
//     other.

// trimmedIndexesTable keeps the definitions of the visibility indexes Start dropped.
const trimmedIndexesTable = "herald_trimmed_indexes"

// VisibilityFile is the companion file that holds the visibility store of the database
// file dbFile, when Start created dbFile (see Options.Stock).
func VisibilityFile(dbFile string) string { return dbFile + "-visibility" }

// customField matches the preallocated custom search attribute fields (Keyword01,
// KeywordList02, ...), which carry an index only while an attribute is mapped to them.
var customField = regexp.MustCompile(`^(Bool|Datetime|Double|Int|Keyword|KeywordList|Text)[0-9]{2}$`)

// reservedField matches the fields Temporal reserves for its own future attributes.
var reservedField = regexp.MustCompile(`^Temporal(Bool|Datetime|Double|Int|Keyword|LowCardinalityKeyword)[0-9]{2}$`)

// unqueriedColumns are the system columns Herald and the UI's usual views never filter
// on, so their indexes only cost writes.
var unqueriedColumns = map[string]bool{
	"history_length": true, "history_size_bytes": true, "execution_duration": true,
	"state_transition_count": true, "parent_workflow_id": true, "parent_run_id": true,
	"root_workflow_id": true, "root_run_id": true, "BatcherUser": true,
	"TemporalScheduledStartTime": true, "TemporalScheduledById": true, "TemporalSchedulePaused": true,
	"TemporalPauseInfo": true, "TemporalWorkerDeploymentVersion": true,
	"TemporalWorkflowVersioningBehavior": true, "TemporalWorkerDeployment": true,
}

// trimmable reports whether the index on column can go, given the custom search
// attribute fields that have an attribute mapped to them.
func trimmable(column string, mapped map[string]bool) bool {
	switch {
	case customField.MatchString(column):
		return !mapped[column]
	case reservedField.MatchString(column):
		return true
	default:
		return unqueriedColumns[column]
	}
}

// tuneVisibility drops the visibility indexes nothing queries (keeping those of the fields
// in mapped) and puts back the ones dropped earlier that are needed now; with stock, it puts
// back every index it ever dropped. dsn opens the visibility database with the sqlite
// driver. It is idempotent.
func tuneVisibility(ctx context.Context, dsn string, mapped map[string]bool, stock bool) error {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit

	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+trimmedIndexesTable+
		` (name TEXT PRIMARY KEY, column_name TEXT NOT NULL, sql TEXT NOT NULL)`); err != nil {
		return err
	}
	type index struct{ name, column, sql string }
	read := func(query string) ([]index, error) {
		rows, err := tx.QueryContext(ctx, query)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []index
		for rows.Next() {
			var ix index
			if err := rows.Scan(&ix.name, &ix.column, &ix.sql); err != nil {
				return nil, err
			}
			out = append(out, ix)
		}
		return out, rows.Err()
	}

	// Put back what is needed again.
	dropped, err := read(`SELECT name, column_name, sql FROM ` + trimmedIndexesTable + ` ORDER BY name`)
	if err != nil {
		return err
	}
	for _, ix := range dropped {
		if !stock && trimmable(ix.column, mapped) {
			continue
		}
		if _, err := tx.ExecContext(ctx, ix.sql); err != nil {
			return fmt.Errorf("restore index %s: %w", ix.name, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+trimmedIndexesTable+` WHERE name = ?`, ix.name); err != nil {
			return err
		}
	}
	if !stock {
		// The first column after namespace_id is what each index serves.
		present, err := read(`SELECT m.name, COALESCE(i.name, ''), m.sql FROM sqlite_master m, pragma_index_info(m.name) i
			WHERE m.type = 'index' AND m.tbl_name = 'executions_visibility' AND m.sql IS NOT NULL AND i.seqno = 1
			ORDER BY m.name`)
		if err != nil {
			return err
		}
		for _, ix := range present {
			if !trimmable(ix.column, mapped) {
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+trimmedIndexesTable+` (name, column_name, sql) VALUES (?, ?, ?)`,
				ix.name, ix.column, ix.sql); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DROP INDEX `+quoteIdent(ix.name)); err != nil {
				return fmt.Errorf("drop index %s: %w", ix.name, err)
			}
		}
	}
	return tx.Commit()
}

// quoteIdent quotes an SQLite identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// mappedFields is the set of custom search attribute fields that aliases maps.
func mappedFields(aliases map[string]string) map[string]bool {
	out := make(map[string]bool, len(aliases))
	for field := range aliases {
		out[field] = true
	}
	return out
}

// tuneStores opens the visibility database through the server's plugin (which creates a
// memory database's schema) and tunes its indexes for the namespace's attributes.
func tuneStores(ctx context.Context, db stores, aliases map[string]string, stock bool) error {
	if stock && db.main.ConnectAttributes["mode"] == "memory" {
		return nil // a new memory database: nothing to put back
	}
	admin, err := persistencesql.NewSQLAdminDB(sqlplugin.DbKindUnknown, db.visibility, resolver.NewNoopResolver(),
		log.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		return fmt.Errorf("visibility store: %w", err)
	}
	defer admin.Close()
	if err := tuneVisibility(ctx, db.visibilityDSN, mappedFields(aliases), stock); err != nil {
		return fmt.Errorf("visibility store %s: tune indexes: %w", db.visibility.DatabaseName, err)
	}
	return nil
}
