-- Approver side (issue 7): one-time use of the signed approval e-mail links, and delivery
-- bookkeeping of the notification outbox.

-- A link is identified by (approval, decision, recipient): each recipient gets one approve
-- and one deny link per approval, and each works once.
CREATE TABLE approval_link_uses (
  approval_id uuid NOT NULL REFERENCES approvals(id) ON DELETE CASCADE,
  decision text NOT NULL CHECK (decision IN ('approve', 'deny')),
  recipient text NOT NULL,
  used_by text NOT NULL,
  used_at timestamptz NOT NULL,
  PRIMARY KEY (approval_id, decision, recipient)
);

-- Mail that will never be sent (its approval was decided or expired first) is dropped, not
-- marked sent; message_id is what the SMTP server answered for a sent mail.
ALTER TABLE outbox ADD COLUMN dropped_at timestamptz;
ALTER TABLE outbox ADD COLUMN dropped_reason text;
ALTER TABLE outbox ADD COLUMN message_id text;
DROP INDEX IF EXISTS outbox_due;
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE sent_at IS NULL AND dropped_at IS NULL;
