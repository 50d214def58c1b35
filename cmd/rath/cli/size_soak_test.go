//go:build soak

package cli

// serveRequests is how many requests TestServe_TenantsRandomRequests
// makes under make soak.
const serveRequests = 10000
