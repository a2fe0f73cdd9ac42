// Original file: proto/tollgate/v1/gateway.proto

import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from '../../google/protobuf/Struct.js';

export interface InvokeRequest {
  /**
   * A chain opened through this sidecar. Required.
   */
  'chain_id'?: (string);
  /**
   * The agent taking the action. Required.
   */
  'agent_name'?: (string);
  /**
   * Category: tool_call (default when empty), llm_call, state_update, ...
   */
  'action_type'?: (string);
  /**
   * Name within the type; for tool_call, the tool name. Required.
   */
  'action_name'?: (string);
  /**
   * Action inputs: sanitized before they reach the service, forwarded to the upstream
   * unchanged. At most 256 KiB as JSON (configurable).
   */
  'payload'?: (_google_protobuf_Struct | null);
  /**
   * The delegating agent, for hierarchical workflows. Optional.
   */
  'parent_agent_name'?: (string);
  /**
   * The configured upstream to forward to. Empty: record and decide only, nothing forwarded.
   */
  'upstream'?: (string);
  /**
   * Re-attach key of this call: a retry with the same key joins the call's pending approval
   * instead of failing APPROVAL_PENDING. At most 200 characters. Optional (metadata
   * `tollgate-idempotency-key` is the alternative; this field wins).
   */
  'idempotency_key'?: (string);
}

export interface InvokeRequest__Output {
  /**
   * A chain opened through this sidecar. Required.
   */
  'chain_id': (string);
  /**
   * The agent taking the action. Required.
   */
  'agent_name': (string);
  /**
   * Category: tool_call (default when empty), llm_call, state_update, ...
   */
  'action_type': (string);
  /**
   * Name within the type; for tool_call, the tool name. Required.
   */
  'action_name': (string);
  /**
   * Action inputs: sanitized before they reach the service, forwarded to the upstream
   * unchanged. At most 256 KiB as JSON (configurable).
   */
  'payload': (_google_protobuf_Struct__Output | null);
  /**
   * The delegating agent, for hierarchical workflows. Optional.
   */
  'parent_agent_name': (string);
  /**
   * The configured upstream to forward to. Empty: record and decide only, nothing forwarded.
   */
  'upstream': (string);
  /**
   * Re-attach key of this call: a retry with the same key joins the call's pending approval
   * instead of failing APPROVAL_PENDING. At most 200 characters. Optional (metadata
   * `tollgate-idempotency-key` is the alternative; this field wins).
   */
  'idempotency_key': (string);
}
