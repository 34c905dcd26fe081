package devserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence"
	"go.temporal.io/server/common/persistence/serialization"
	persistencesql "go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/resolver"
	"go.temporal.io/server/common/searchattribute/sadefs"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// validateSearchAttributes checks names and types before anything touches the
// database.
func validateSearchAttributes(attrs map[string]enums.IndexedValueType) error {
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		typ := attrs[name]
		switch {
		case name == "":
			return errors.New("search attribute with an empty name; give every search attribute a name")
		case sadefs.IsReserved(name):
			return fmt.Errorf("search attribute %q: the name is reserved by Temporal; choose another name", name)
		case typ == enums.INDEXED_VALUE_TYPE_UNSPECIFIED || enums.IndexedValueType_name[int32(typ)] == "":
			return fmt.Errorf("search attribute %q: invalid type %d; use one of the enums.INDEXED_VALUE_TYPE_* values", name, typ)
		}
	}
	return nil
}

// ensureNamespace registers namespace with the custom search attributes attrs
// in the database described by cfg, before the server starts, so every
// service loads them with its first namespace refresh. An existing namespace
// keeps its attributes and gains the missing ones. It returns the namespace's
// custom search attributes by database field (Keyword01 -> HeraldStatus).
func ensureNamespace(ctx context.Context, cfg *config.SQL, clusterName, namespace string, attrs map[string]enums.IndexedValueType) (map[string]string, error) {
	serializer := serialization.NewSerializer()
	factory := persistencesql.NewFactory(*cfg, resolver.NewNoopResolver(), clusterName,
		log.NewNoopLogger(), metrics.NoopMetricsHandler, serializer)
	defer factory.Close()
	store, err := factory.NewMetadataStore()
	if err != nil {
		return nil, fmt.Errorf("namespace %s: open metadata store: %w", namespace, err)
	}
	manager := persistence.NewMetadataManagerImpl(store, serializer, log.NewNoopLogger(), clusterName)

	current, err := manager.GetNamespace(ctx, &persistence.GetNamespaceRequest{Name: namespace})
	var notFound *serviceerror.NamespaceNotFound
	switch {
	case errors.As(err, &notFound):
		aliases, _, err := addSearchAttributeAliases(nil, attrs)
		if err != nil {
			return nil, fmt.Errorf("namespace %s: %w", namespace, err)
		}
		created, err := sqliteschema.NewNamespaceConfig(clusterName, namespace, false, nil)
		if err != nil {
			return nil, fmt.Errorf("namespace %s: %w", namespace, err)
		}
		created.Detail.Config.CustomSearchAttributeAliases = aliases
		_, err = manager.CreateNamespace(ctx, &persistence.CreateNamespaceRequest{
			Namespace:         created.Detail,
			IsGlobalNamespace: created.IsGlobal,
		})
		if err != nil {
			return nil, fmt.Errorf("namespace %s: create: %w", namespace, err)
		}
		return aliases, nil
	case err != nil:
		return nil, fmt.Errorf("namespace %s: read: %w", namespace, err)
	}

	detail := current.Namespace
	if detail.Config == nil {
		return nil, fmt.Errorf("namespace %s: stored namespace has no config", namespace)
	}
	aliases, changed, err := addSearchAttributeAliases(detail.Config.CustomSearchAttributeAliases, attrs)
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", namespace, err)
	}
	if !changed {
		return aliases, nil
	}
	metadata, err := manager.GetMetadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("namespace %s: read metadata: %w", namespace, err)
	}
	detail.Config.CustomSearchAttributeAliases = aliases
	detail.ConfigVersion++
	err = manager.UpdateNamespace(ctx, &persistence.UpdateNamespaceRequest{
		Namespace:           detail,
		IsGlobalNamespace:   current.IsGlobalNamespace,
		NotificationVersion: metadata.NotificationVersion,
	})
	if err != nil {
		return nil, fmt.Errorf("namespace %s: add search attributes: %w", namespace, err)
	}
	return aliases, nil
}

// addSearchAttributeAliases maps each attribute of attrs that aliases (database
// field -> attribute name) lacks onto a free preallocated field of its type. It
// returns the new map and whether anything was added; aliases is not modified.
func addSearchAttributeAliases(aliases map[string]string, attrs map[string]enums.IndexedValueType) (map[string]string, bool, error) {
	fields := sadefs.GetDBIndexSearchAttributes(nil).CustomSearchAttributes
	out := make(map[string]string, len(aliases)+len(attrs))
	byName := make(map[string]string, len(aliases))
	for field, name := range aliases {
		out[field] = name
		byName[name] = field
	}

	changed := false
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		typ := attrs[name]
		if field, ok := byName[name]; ok {
			if have := fields[field]; have != typ {
				return nil, false, fmt.Errorf("search attribute %q is registered as %s, not %s; keep the type, or use a new name",
					name, have, typ)
			}
			continue
		}
		free := ""
		for _, field := range slices.Sorted(maps.Keys(fields)) {
			if _, used := out[field]; !used && fields[field] == typ {
				free = field
				break
			}
		}
		if free == "" {
			return nil, false, fmt.Errorf("search attribute %q: no free %s field left in the SQLite visibility store; use fewer %s attributes",
				name, typ, typ)
		}
		out[free] = name
		changed = true
	}
	return out, changed, nil
}
