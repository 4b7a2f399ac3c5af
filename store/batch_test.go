package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Concurrent writes through a Batcher all commit; one that fails fails
// alone, and nothing of it is written.
func TestBatcher(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		b := store.NewBatcher(db)
		bad := errors.New("refused")
		var wg sync.WaitGroup
		errs := make([]error, 60)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = b.Do(func(ctx context.Context, tx *store.Tx) error {
					if _, err := insertWidget(ctx, tx, sc, fmt.Sprint("w", i), nil); err != nil {
						return err
					}
					if i%10 == 0 {
						return bad // after its insert: the insert must not survive
					}
					return nil
				})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if want := i%10 == 0; (err != nil) != want || want && !errors.Is(err, bad) {
				t.Errorf("write %d: %v", i, err)
			}
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM widgets WHERE tenant_id = $1`, sc.TenantID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 54 {
			t.Errorf("%d widgets, want the 54 good writes", n)
		}
	}, widgets)
}
