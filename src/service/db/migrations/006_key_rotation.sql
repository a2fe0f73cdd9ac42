-- Key rotation and revocation (issue 32, ADR 0010). A signing key (receipt or approval, Ed25519)
-- can be revoked: signatures it made at or after revoked_at are refused, earlier ones still verify.
ALTER TABLE signing_keys ADD COLUMN revoked_at timestamptz;
ALTER TABLE signing_keys ADD COLUMN revocation_reason text;

-- Each organization's receipt HMAC keys. Before the first rotation an organization has no rows
-- and uses the key derived from the master key (kid 'master'); its first rotation records that
-- key as a row with key_sealed NULL, retired. Others: 32 random bytes, AES-256-GCM sealed with
-- the master key's sealing key (as signing_keys.private_key_sealed).
CREATE TABLE receipt_hmac_keys (
  org_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  kid text NOT NULL,
  key_sealed text,
  created_at timestamptz NOT NULL,
  retired_at timestamptz,
  revoked_at timestamptz,
  revocation_reason text,
  PRIMARY KEY (org_id, kid)
);

-- The HMAC key a receipt's `signature` was made with; NULL for receipts issued before this
-- migration, all made with the key derived from the master key ('master').
ALTER TABLE receipts ADD COLUMN hmac_kid text;

-- Rotations requested by deployment configuration (the chart's keys.rotate values): the last
-- token applied per key kind, so that every replica starting with the same token rotates once.
CREATE TABLE key_rotation_triggers (
  kind text PRIMARY KEY,
  token text NOT NULL,
  applied_at timestamptz NOT NULL
);
