-- Replay before enforce (issue 28): the organization's environment label the policy engine saw
-- when it decided the event (CEL `org.environment`), so a candidate policy can be replayed over
-- the recorded events with the same facts. NULL for events recorded before this column existed
-- (replay then uses the organization's current environment; docs/policy-cel.md).
ALTER TABLE chain_events ADD COLUMN org_environment text;
