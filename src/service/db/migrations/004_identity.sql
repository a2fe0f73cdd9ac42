-- Verified workload identity (issue 27): the principal the service verified from a pod's
-- projected service account token, recorded on the chain (who opened it) and on every event
-- (who asked). NULL for API-key and session callers. Shape: policy/schema.ts WorkloadIdentity.
ALTER TABLE chains ADD COLUMN principal jsonb;
ALTER TABLE chain_events ADD COLUMN principal jsonb;
-- Client API keys can be turned off per organization (its agents must then present a verified
-- workload identity); admin keys and sessions are unaffected.
ALTER TABLE organizations ADD COLUMN api_keys_enabled boolean NOT NULL DEFAULT true;
