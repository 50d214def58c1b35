package events

import (
	"fmt"
	"regexp"
)

// DefaultTenant is the tenant of everything recorded without one: runs of
// stores written before tenants existed, and single-user use. An event's
// empty tenant field means it.
const DefaultTenant = "default"

// tenantName is what a tenant may be called: lowercase letters and digits
// in words joined by single hyphens or underscores, so that it is also a
// valid part of a fleet queue's name and never needs quoting anywhere.
var tenantName = regexp.MustCompile(`^[a-z0-9]+(?:[_-][a-z0-9]+)*$`)

// maxTenant bounds a tenant's name (a fleet queue's name holds it).
const maxTenant = 40

// CheckTenant returns an error matching ErrInvalid for a name that is
// not a valid tenant's. The empty name is valid: it means DefaultTenant.
func CheckTenant(name string) error {
	if name == "" {
		return nil
	}
	if len(name) > maxTenant || !tenantName.MatchString(name) {
		return invalid("tenant %q: a tenant is at most %d lowercase letters, digits, and single - or _ between them", name, maxTenant)
	}
	return nil
}

// TenantOr returns name, or DefaultTenant for the empty name.
func TenantOr(name string) string {
	if name == "" {
		return DefaultTenant
	}
	return name
}

// TenantField is a tenant as an event's field records it: empty for
// DefaultTenant, so that records of the default tenant read as those
// written before tenants existed.
func TenantField(name string) string {
	if name == DefaultTenant {
		return ""
	}
	return name
}

// checkTenantOf validates the tenant field of a payload.
func checkTenantOf(what, tenant string) error {
	if err := CheckTenant(tenant); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
