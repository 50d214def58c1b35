package projections

// LeaseQueries are the reaper's queries of leases, for the plan test.
var LeaseQueries = []string{expiredLeasesQuery, liveLeasesQuery}
