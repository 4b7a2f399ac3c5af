package identity

// Acknowledged revocations (see the package doc, "Revocation"): each
// Service that caches credentials on a database several processes share
// registers in serversTable through a vcache.Acks on the credentials'
// counter, and a revocation, once committed, waits until every live
// process has seen its version (vcache.AwaitAcks).

// serversTable is where the processes caching credentials beat
// (migration 0003).
const serversTable = "auth_servers"
