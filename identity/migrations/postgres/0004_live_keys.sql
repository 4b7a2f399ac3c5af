-- auth 0004: the live API keys of a tenant, newest first, for the keys
-- list and its count. A revoked key stays in auth_api_keys (deleted_at
-- set) for good; through auth_api_keys_tenant_idx, or a scan, the list
-- and its count read every revoked key of the tenant too, more with each
-- revocation (a 30-minute soak: 1,622 revoked keys read for 2 live ones).
CREATE INDEX auth_api_keys_live_idx ON auth_api_keys (tenant_id, created_at, id) WHERE deleted_at IS NULL;
