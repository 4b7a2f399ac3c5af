-- integrations 0002: whether the tenant's admins hear of the
-- integration's failures (the custom webhooks integration: an endpoint
-- disabled, a delivery that failed for good). Off by default.
ALTER TABLE integration_states ADD COLUMN notify_admins_on_failure BOOLEAN NOT NULL DEFAULT FALSE;
