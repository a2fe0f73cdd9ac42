-- Tollgate core schema: organizations and their configuration, credentials, chains, events,
-- approvals, exceptions, receipts, durable jobs and the notification outbox.

CREATE TABLE organizations (
  id uuid PRIMARY KEY,
  slug text NOT NULL UNIQUE,
  display_name text,
  environment text NOT NULL DEFAULT 'production',
  kill_switch_active boolean NOT NULL DEFAULT false,
  kill_switch_reason text,
  paused boolean NOT NULL DEFAULT false,
  pause_reason text,
  approval_timeout_hours double precision NOT NULL DEFAULT 24,
  -- organization-level policy settings (evaluation_mode, runaway_limits) as a PolicyConfig override
  settings jsonb NOT NULL DEFAULT '{}',
  -- hash over the organization, its policies and approver teams; bumps on every change
  config_version text NOT NULL,
  managed_by text,
  receipt_seq bigint NOT NULL DEFAULT 0,
  last_receipt_hash text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE TABLE policies (
  org_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name text NOT NULL,
  config jsonb NOT NULL,
  policy_version text,
  version text NOT NULL,
  managed_by text,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (org_id, name)
);

CREATE TABLE approver_teams (
  org_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name text NOT NULL,
  approvers jsonb NOT NULL DEFAULT '[]',
  fallback_approvers jsonb NOT NULL DEFAULT '[]',
  version text NOT NULL,
  managed_by text,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (org_id, name)
);

CREATE TABLE members (
  org_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  email text NOT NULL,
  display_name text,
  roles text[] NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (org_id, email)
);

CREATE TABLE api_keys (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name text NOT NULL,
  role text NOT NULL CHECK (role IN ('client', 'admin')),
  prefix text NOT NULL,
  key_hash text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX api_keys_org ON api_keys (org_id);

CREATE TABLE user_sessions (
  id uuid PRIMARY KEY,
  token_hash text NOT NULL UNIQUE,
  org_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  email text NOT NULL,
  display_name text,
  roles text[] NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);

CREATE TABLE chains (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name text NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}',
  policy_config jsonb NOT NULL DEFAULT '{}',
  environment text NOT NULL,
  status text NOT NULL CHECK (status IN ('open', 'pending_approval', 'paused', 'completed', 'failed')),
  failure jsonb,
  started_at timestamptz NOT NULL,
  completed_at timestamptz,
  event_count integer NOT NULL DEFAULT 0,
  total_tokens bigint NOT NULL DEFAULT 0,
  financial_exposure_usd double precision NOT NULL DEFAULT 0,
  external_comm_agents text[] NOT NULL DEFAULT '{}',
  external_communications_count integer NOT NULL DEFAULT 0,
  records_modified_count integer NOT NULL DEFAULT 0,
  domains_contacted text[] NOT NULL DEFAULT '{}',
  estimated_cost_usd double precision NOT NULL DEFAULT 0,
  receipt_id uuid,
  created_by text
);
CREATE INDEX chains_org_started ON chains (org_id, started_at DESC);

CREATE TABLE chain_events (
  id uuid PRIMARY KEY,
  chain_id uuid NOT NULL REFERENCES chains(id) ON DELETE CASCADE,
  org_id uuid NOT NULL,
  sequence integer NOT NULL,
  agent_name text NOT NULL,
  parent_agent_name text,
  action_type text NOT NULL,
  action_name text NOT NULL,
  payload jsonb NOT NULL,
  category text NOT NULL,
  facts jsonb NOT NULL,
  decision jsonb NOT NULL,
  triggers jsonb NOT NULL DEFAULT '[]',
  exception_id uuid,
  approval_id uuid,
  recorded_at timestamptz NOT NULL,
  outcome jsonb,
  UNIQUE (chain_id, sequence)
);

CREATE TABLE approvals (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL,
  chain_id uuid NOT NULL REFERENCES chains(id) ON DELETE CASCADE,
  event_id uuid NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'timed_out', 'cancelled')),
  requested_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  escalate_at timestamptz NOT NULL,
  escalated_at timestamptz,
  decided_at timestamptz,
  decided_by text,
  notes text,
  exception_id uuid,
  -- the decision that required approval, and the final decision once resolved
  requested_decision jsonb NOT NULL,
  final_decision jsonb,
  -- Ed25519 attestation of the decision (verification v2)
  signed_payload text,
  signature text,
  signing_kid text
);
CREATE UNIQUE INDEX approvals_one_pending_per_chain ON approvals (chain_id) WHERE status = 'pending';
CREATE INDEX approvals_org_status ON approvals (org_id, status, requested_at DESC);

CREATE TABLE exceptions (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL,
  approval_id uuid NOT NULL,
  agent_name text NOT NULL,
  action_type text NOT NULL,
  destination_domain text,
  duration text NOT NULL CHECK (duration IN ('1h', '1d', '1w', '1m')),
  granted_by text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX exceptions_scope ON exceptions (org_id, agent_name, action_type, expires_at);

CREATE TABLE signing_keys (
  kid text PRIMARY KEY,
  purpose text NOT NULL CHECK (purpose IN ('receipt', 'approval')),
  public_key_pem text NOT NULL,
  -- AES-256-GCM sealed PKCS#8 PEM, key derived from the master key
  private_key_sealed text NOT NULL,
  created_at timestamptz NOT NULL,
  retired_at timestamptz
);

CREATE TABLE receipts (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  chain_id uuid NOT NULL UNIQUE,
  sequence bigint NOT NULL,
  receipt_number text NOT NULL,
  -- the canonical JSON (RFC 8785) of the complete signed receipt
  body text NOT NULL,
  receipt_hash text NOT NULL,
  created_at timestamptz NOT NULL,
  UNIQUE (org_id, sequence)
);

CREATE TABLE jobs (
  id bigserial PRIMARY KEY,
  kind text NOT NULL,
  run_at timestamptz NOT NULL,
  payload jsonb NOT NULL DEFAULT '{}',
  dedupe_key text UNIQUE,
  attempts integer NOT NULL DEFAULT 0,
  last_error text,
  locked_until timestamptz,
  done_at timestamptz
);
CREATE INDEX jobs_due ON jobs (run_at) WHERE done_at IS NULL;

CREATE TABLE outbox (
  id bigserial PRIMARY KEY,
  kind text NOT NULL,
  org_id uuid,
  recipient text NOT NULL,
  subject text NOT NULL,
  payload jsonb NOT NULL DEFAULT '{}',
  dedupe_key text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL,
  next_attempt_at timestamptz NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  last_error text,
  sent_at timestamptz
);
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE sent_at IS NULL;
