package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/tenantkit/tenantkit/store"
)

// sweepBatch bounds the running jobs one read of the sweep looks at.
const sweepBatch = 100

// runSweeper sweeps lapsed leases every renewEvery (±10%) until ctx ends.
// Every process runs it, from Start to Stop: it does not wait for River's
// leader election, which lapses with a killed leader.
func (e *Engine) runSweeper(ctx context.Context) {
	every := e.renewEvery()
	t := time.NewTimer(every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := error(nil)
		if !e.leasesFrozen.Load() {
			err = e.sweepLeases(ctx)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			e.logger.Warn("jobs: sweeping lapsed leases failed (retrying)", "err", err, "holder", e.holder)
		case err == nil && failing:
			e.logger.Info("jobs: sweeping lapsed leases again", "holder", e.holder)
		}
		failing = err != nil
		t.Reset(every*9/10 + rand.N(every/5+1))
	}
}

// leaseRow is a job_leases row as the sweep reads it.
type leaseRow struct {
	run     int
	holder  *string
	expires store.NullTime
}

// sweepLeases runs again, at once, every running job whose lease has
// lapsed: its process was killed or stalled past Config.LeaseTTL. A job
// that has lapsed ParkAfterCrashes times is parked (discarded with the
// error) instead; one whose cancel was requested is cancelled. A job
// without a lease row counts as leased from River's attempted_at. The
// engine runs it every LeaseTTL/5 from Start to Stop; when no job has run
// longer than LeaseTTL it costs one indexed read of River's job table.
func (e *Engine) sweepLeases(ctx context.Context) error {
	now := e.bg.Now()
	var after int64
	for {
		rows, err := e.client.running(ctx, now.Add(-e.leaseTTL()), after, sweepBatch)
		if err != nil || len(rows) == 0 {
			return err
		}
		leases, err := e.readLeases(ctx, rows)
		if err != nil {
			return err
		}
		for _, row := range rows {
			l, ok := leases[row.ID]
			if ok && l.run == runNumber(row.Attempt, row.Metadata) && (!l.expires.Valid || !l.expires.Time.Before(now)) {
				continue // live, or already declared dead
			}
			lapsed := ""
			if ok && l.holder != nil {
				lapsed = *l.holder
			}
			if err := e.rescue(ctx, row, lapsed); err != nil {
				return err
			}
		}
		if len(rows) < sweepBatch {
			return nil
		}
		after = rows[len(rows)-1].ID
	}
}

func (e *Engine) readLeases(ctx context.Context, rows []*rivertype.JobRow) (map[int64]leaseRow, error) {
	marks := make([]string, len(rows))
	args := make([]any, len(rows))
	for i, r := range rows {
		marks[i] = "$" + strconv.Itoa(i+1)
		args[i] = r.ID
	}
	out := map[int64]leaseRow{}
	_, err := store.Many(ctx, e.bg, func(sc store.Scanner) (struct{}, error) {
		var id int64
		var l leaseRow
		err := sc.Scan(&id, &l.run, &l.holder, &l.expires)
		out[id] = l
		return struct{}{}, err
	}, `SELECT job_id, run, holder, expires_at FROM job_leases WHERE job_id IN (`+strings.Join(marks, ", ")+`)`, args...)
	return out, err
}

// rescue declares the run of row dead and makes the job
// available at once (or parks or cancels it), in one transaction that
// first checks the job still runs that attempt.
func (e *Engine) rescue(ctx context.Context, row *rivertype.JobRow, lapsed string) error {
	var crashes int
	var state string
	err := e.bg.Tx(ctx, func(tx *store.Tx) error {
		crashes = 0
		n, err := tx.Exec(ctx, `UPDATE `+e.table+` SET attempt = attempt WHERE id = $1 AND state = 'running' AND attempt = $2`,
			row.ID, row.Attempt)
		if err != nil || n == 0 {
			return err // it moved on meanwhile
		}
		now := tx.Now()
		cs, err := store.Many(ctx, tx, func(sc store.Scanner) (int, error) {
			var n int
			return n, sc.Scan(&n)
		}, leaseDead, row.ID, runNumber(row.Attempt, row.Metadata), now)
		if err != nil || len(cs) == 0 {
			return err // renewed meanwhile
		}
		crashes = cs[0]
		var meta struct {
			CancelAttemptedAt *time.Time `json:"cancel_attempted_at"`
		}
		_ = json.Unmarshal(row.Metadata, &meta)
		msg := fmt.Sprintf("jobs: the process running attempt %d stopped renewing the job's lease (killed or stalled)", row.Attempt)
		finalized := &now
		switch {
		case meta.CancelAttemptedAt != nil:
			state = string(rivertype.JobStateCancelled)
			msg += "; cancelled, as requested"
		case crashes >= ParkAfterCrashes:
			state = string(rivertype.JobStateDiscarded)
			msg += fmt.Sprintf("; parked after %d such stops, not run again", crashes)
		default:
			state, finalized = string(rivertype.JobStateAvailable), nil
			msg += "; run again"
		}
		if lapsed != "" {
			msg += " (its holder: " + lapsed + ")"
		}
		data, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: row.Attempt, Error: msg})
		if err != nil {
			return err
		}
		return e.client.rescueTx(ctx, tx, &riverdriver.JobRescueManyParams{ID: []int64{row.ID}, Error: [][]byte{data},
			FinalizedAt: []*time.Time{finalized}, ScheduledAt: []time.Time{now}, State: []string{state}}, []string{row.Queue})
	})
	if err == nil && crashes > 0 {
		e.logger.Warn("jobs: took over a job whose process stopped renewing its lease", "job", row.ID, "kind", row.Kind,
			"attempt", row.Attempt, "lapsed_holder", cmp.Or(lapsed, "unknown (it had not renewed yet)"), "crashes", crashes, "state", state, "holder", e.holder)
	}
	return err
}
