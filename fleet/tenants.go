package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gorath/rath/events"
)

// ErrOtherTenant is matched by the error a worker ends a job with when
// the job's run is of a tenant it was not started for (a job on the
// wrong queue): it does not run it.
var ErrOtherTenant = errors.New("fleet: run of another tenant")

// tenantsOf returns opts' tenants, checked, with the default tenant's for
// none.
func tenantsOf(opts Options) ([]string, error) {
	if len(opts.Tenants) == 0 {
		return []string{events.DefaultTenant}, nil
	}
	out := make([]string, 0, len(opts.Tenants))
	for _, t := range opts.Tenants {
		if err := events.CheckTenant(t); err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		t = events.TenantOr(t)
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// queueOf is the queue a tenant's runs wait on: Options.Queue for the
// default tenant (so stores and workers from before tenants go on as
// they were), Options.Queue_TENANT for any other.
func (f *Fleet) queueOf(tenant string) string {
	if tenant = events.TenantOr(tenant); tenant == events.DefaultTenant {
		return f.opts.Queue
	}
	return f.opts.Queue + "_" + tenant
}

// queues are the queues of this worker's tenants.
func (f *Fleet) queues() []string {
	out := make([]string, len(f.opts.Tenants))
	for i, t := range f.opts.Tenants {
		out[i] = f.queueOf(t)
	}
	return out
}

// serves reports whether this worker works runs of tenant.
func (f *Fleet) serves(tenant string) bool {
	return slices.Contains(f.opts.Tenants, events.TenantOr(tenant))
}

// submitTenant is the tenant Submit records runs for: the first of
// Options.Tenants, as the run's event records it (empty for the default).
func (f *Fleet) submitTenant() string { return events.TenantField(f.opts.Tenants[0]) }

// mine keeps, of runs, those of this worker's tenants, and reports the
// queue of each.
func (f *Fleet) mine(ctx context.Context, runs []string) map[string]string {
	out := make(map[string]string, len(runs))
	for _, run := range runs {
		st, err := f.rt.Reader().RunState(ctx, run)
		if err != nil || !f.serves(st.Tenant) {
			continue
		}
		out[run] = f.queueOf(st.Tenant)
	}
	return out
}

// Tenants are the tenants whose runs this process works.
func (f *Fleet) Tenants() []string { return slices.Clone(f.opts.Tenants) }
