-- Verification v2: public verification tokens (spec: "Public verification token").
-- Only the SHA-256 hash of a token is stored; the plaintext is returned once at issue.
-- Approval attestations (Ed25519) use the signed_payload, signature and signing_kid columns of
-- approvals (001); the public keys live in signing_keys (001).

CREATE TABLE public_verification_tokens (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  -- lowercase hex SHA-256 of the plaintext token; the public route looks tokens up by it
  token_hash text NOT NULL UNIQUE,
  artifact_type text NOT NULL CHECK (artifact_type IN ('approval', 'receipt')),
  artifact_id uuid NOT NULL,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL,
  revoked_at timestamptz,
  last_used_at timestamptz
);
CREATE INDEX public_verification_tokens_org ON public_verification_tokens (org_id, created_at DESC);
