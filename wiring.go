package tenantkit

import (
	"fmt"
	"slices"

	"github.com/tenantkit/tenantkit/identity"
)

// The names of the built-in areas, as their modules' Name returns them.
const (
	AreaIdentity      = "identity"
	AreaToggles       = "toggles"
	AreaRules         = "rules"
	AreaWebhooks      = "webhooks"
	AreaEntities      = "entities"
	AreaAttachments   = "attachments"
	AreaIntegrations  = "integrations"
	AreaPayments      = "payments"
	AreaDashboards    = "dashboards"
	AreaProgress      = "progress"
	AreaDataSync      = "datasync"
	AreaNotifications = "notifications"
)

// areaOrder is every built-in area, in the order a Kit migrates and
// starts them.
var areaOrder = []string{
	AreaIdentity, AreaToggles, AreaRules, AreaWebhooks, AreaEntities, AreaAttachments,
	AreaIntegrations, AreaPayments, AreaDashboards, AreaProgress, AreaDataSync, AreaNotifications,
}

// buildOrder is the order a Kit builds the built-in areas in: an area that
// others look up when they are built comes before them (integrations
// before webhooks, whose tenants switch them on and off there; webhooks
// before rules, whose CALL_WEBHOOK calls they sign; identity before the
// dashboards and notifications that look up its users).
var buildOrder = []string{
	AreaIntegrations, AreaIdentity, AreaWebhooks, AreaEntities, AreaProgress, AreaToggles,
	AreaRules, AreaAttachments, AreaPayments, AreaDashboards, AreaDataSync, AreaNotifications,
}

// AllAreas returns the name of every built-in area, in the order a Kit
// migrates and starts them.
func AllAreas() []string { return slices.Clone(areaOrder) }

// Module adds one area to a Kit (Config.Areas). The built-in areas'
// modules are IdentityArea in this package and the Area functions of the
// area packages of httpapi (togglesapi.Area, rulesapi.Area, …), which
// also serve the area's routes; an area's code is linked into a host only
// when the host imports its module.
//
// A module may also implement Wirer, to connect its area to the others
// once all are built.
type Module interface {
	// Name is the area's name (AreaToggles, …). A Kit holds one module
	// per name: the first Config.Areas lists.
	Name() string
	// Needs returns the modules of the areas this one is built on, with
	// default options. The Kit adds those Config.Areas leaves out.
	Needs() []Module
	// Build returns the area's service over the Kit: its DB, SecretKey,
	// Logger and the areas built before it (AreaOf; the built-in areas
	// are built in a fixed order, so that an area finds those it looks
	// up). It starts nothing and reads nothing from the database.
	Build(k *Kit) (Area, error)
}

// Wirer is a Module that connects its area to the Kit's other areas once
// every area is built, migrated and has registered its jobs, before the
// Kit starts: the dashboards register the other areas' widgets, the
// notifications subscribe to their events.
type Wirer interface {
	// Wire connects the area built by the module to the Kit's others.
	Wire(k *Kit) error
}

// AreaOf returns the Kit's area of type T (*toggles.Service,
// *rules.Service, …) and whether the Kit has it.
func AreaOf[T Area](k *Kit) (T, bool) {
	for _, a := range k.areas {
		if t, ok := a.(T); ok {
			return t, true
		}
	}
	var zero T
	return zero, false
}

// Modules returns the modules the Kit was built from: Config.Areas and
// the modules they need, in the order the Kit built them.
func (k *Kit) Modules() []Module { return slices.Clone(k.modules) }

// chooseModules resolves Config.Areas: the modules listed and, after them,
// those they need that no listed module names (a need's own needs too),
// one per name, in build order.
func chooseModules(listed []Module) ([]Module, error) {
	byName := map[string]Module{}
	var names []string
	var add func(m Module, needed bool) error
	add = func(m Module, needed bool) error {
		if m == nil {
			return fmt.Errorf("tenantkit: a nil module in Config.Areas")
		}
		name := m.Name()
		if _, ok := byName[name]; ok {
			if !needed {
				return fmt.Errorf("tenantkit: area %q listed twice in Config.Areas", name)
			}
			return nil
		}
		byName[name] = m
		names = append(names, name)
		return nil
	}
	for _, m := range listed {
		if err := add(m, false); err != nil {
			return nil, err
		}
	}
	for i := 0; i < len(names); i++ { // names grows as needs are added
		for _, need := range byName[names[i]].Needs() {
			if err := add(need, true); err != nil {
				return nil, err
			}
		}
	}
	slices.SortStableFunc(names, func(a, b string) int { return rank(buildOrder, a) - rank(buildOrder, b) })
	out := make([]Module, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	return out, nil
}

// rank is name's place in order; names order does not hold come after
// every name it does, in their own order.
func rank(order []string, name string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}

// buildAreas builds the modules' areas in build order, and returns them in
// the order they migrate and start.
func (k *Kit) buildAreas(modules []Module) ([]Area, error) {
	built := make([]Area, 0, len(modules))
	names := make([]string, 0, len(modules))
	for _, m := range modules {
		k.areas = built // AreaOf finds the areas built so far
		a, err := m.Build(k)
		if err != nil {
			return nil, fmt.Errorf("tenantkit: %s: %w", m.Name(), err)
		}
		if svc, ok := a.(*identity.Service); ok {
			k.Identity = svc // the areas built after it look it up
		}
		built = append(built, a)
		names = append(names, m.Name())
	}
	order := make([]int, len(built))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return rank(areaOrder, names[a]) - rank(areaOrder, names[b]) })
	areas := make([]Area, len(built))
	for i, j := range order {
		areas[i] = built[j]
	}
	return areas, nil
}

// IdentityArea returns the identity area's module: tenants,
// organizations, users, roles and features, API keys and sessions, which
// httpapi authenticates callers with. opts.SecretKey is the Kit's;
// opts.Logger defaults to the Kit's.
func IdentityArea(opts identity.Options) Module { return identityModule{opts} }

type identityModule struct{ opts identity.Options }

func (identityModule) Name() string    { return AreaIdentity }
func (identityModule) Needs() []Module { return nil }

func (m identityModule) Build(k *Kit) (Area, error) {
	opts := m.opts
	opts.SecretKey = k.SecretKey
	if opts.Logger == nil {
		opts.Logger = k.Logger
	}
	return identity.New(k.DB, opts)
}
