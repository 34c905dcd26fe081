package gate

import "sync"

// capped is a map by endpoint id of at most max entries, safe for concurrent use: storing
// a new id when it is full first drops the entries stale reports, then, if it is still
// full, all of them (each dropped one costs its endpoint a read it would have been spared).
// Its zero value is ready; max 0 takes the limit put is given.
type capped[V any] struct {
	mu  sync.Mutex
	max int
	by  map[string]V
}

// get returns id's entry.
func (c *capped[V]) get(id string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.by[id]
	return v, ok
}

// take returns id's entry and forgets it.
func (c *capped[V]) take(id string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.by[id]
	delete(c.by, id)
	return v, ok
}

// put stores v as id's entry, with at most limit entries (unless max is set). stale, if
// set, says which entries may go first when it is full; replace, if set, says whether v
// replaces an entry id already has.
func (c *capped[V]) put(id string, v V, limit int, stale, replace func(old V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max > 0 {
		limit = c.max
	}
	old, ok := c.by[id]
	if ok && replace != nil && !replace(old) {
		return
	}
	if !ok && len(c.by) >= limit {
		if stale != nil {
			for k, e := range c.by {
				if stale(e) {
					delete(c.by, k)
				}
			}
		}
		if len(c.by) >= limit {
			c.by = nil
		}
	}
	if c.by == nil {
		c.by = make(map[string]V)
	}
	c.by[id] = v
}

// size is how many entries it holds.
func (c *capped[V]) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.by)
}
