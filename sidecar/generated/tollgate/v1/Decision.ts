// Original file: proto/tollgate/v1/gateway.proto


/**
 * The spec's PolicyDecision plus where it was recorded. Absent optional fields mean null.
 */
export interface Decision {
  /**
   * allow | allow_with_flag (in a response); require_approval | deny (in error details).
   */
  'policy_decision'?: (string);
  'decision_reason'?: (string);
  /**
   * backend_evaluation | human_approval | fail_mode (service unreachable, fail mode allow).
   */
  'decision_source'?: (string);
  'policy_name'?: (string);
  'kill_switch_active'?: (boolean);
  'pause_reason'?: (string);
  'remediation'?: (string);
  'docs_url'?: (string);
  /**
   * enforce | shadow
   */
  'evaluation_mode'?: (string);
  'shadow_decision'?: (string);
  /**
   * USD, for llm_call events.
   */
  'estimated_cost_usd'?: (number | string);
  'auto_paused'?: (boolean);
  'chain_id'?: (string);
  /**
   * The recorded chain event; absent when nothing was recorded (fail mode allow).
   */
  'event_id'?: (string);
  /**
   * The approval gate the action went through, if any.
   */
  'approval_id'?: (string);
  /**
   * The time-boxed exception that allowed the action, or that the approval created.
   */
  'exception_id'?: (string);
  /**
   * The action category: financial, external_communication, ..., default.
   */
  'category'?: (string);
  /**
   * True when policy_decision is allow_with_flag.
   */
  'flagged'?: (boolean);
  /**
   * 1-based position of the recorded event in the chain; absent when nothing was recorded.
   */
  'sequence'?: (number);
  '_policy_name'?: "policy_name";
  '_pause_reason'?: "pause_reason";
  '_remediation'?: "remediation";
  '_docs_url'?: "docs_url";
  '_evaluation_mode'?: "evaluation_mode";
  '_shadow_decision'?: "shadow_decision";
  '_estimated_cost_usd'?: "estimated_cost_usd";
  '_event_id'?: "event_id";
  '_approval_id'?: "approval_id";
  '_exception_id'?: "exception_id";
  '_category'?: "category";
  '_sequence'?: "sequence";
}

/**
 * The spec's PolicyDecision plus where it was recorded. Absent optional fields mean null.
 */
export interface Decision__Output {
  /**
   * allow | allow_with_flag (in a response); require_approval | deny (in error details).
   */
  'policy_decision': (string);
  'decision_reason': (string);
  /**
   * backend_evaluation | human_approval | fail_mode (service unreachable, fail mode allow).
   */
  'decision_source': (string);
  'policy_name'?: (string);
  'kill_switch_active': (boolean);
  'pause_reason'?: (string);
  'remediation'?: (string);
  'docs_url'?: (string);
  /**
   * enforce | shadow
   */
  'evaluation_mode'?: (string);
  'shadow_decision'?: (string);
  /**
   * USD, for llm_call events.
   */
  'estimated_cost_usd'?: (number);
  'auto_paused': (boolean);
  'chain_id': (string);
  /**
   * The recorded chain event; absent when nothing was recorded (fail mode allow).
   */
  'event_id'?: (string);
  /**
   * The approval gate the action went through, if any.
   */
  'approval_id'?: (string);
  /**
   * The time-boxed exception that allowed the action, or that the approval created.
   */
  'exception_id'?: (string);
  /**
   * The action category: financial, external_communication, ..., default.
   */
  'category'?: (string);
  /**
   * True when policy_decision is allow_with_flag.
   */
  'flagged': (boolean);
  /**
   * 1-based position of the recorded event in the chain; absent when nothing was recorded.
   */
  'sequence'?: (number);
  '_policy_name'?: "policy_name";
  '_pause_reason'?: "pause_reason";
  '_remediation'?: "remediation";
  '_docs_url'?: "docs_url";
  '_evaluation_mode'?: "evaluation_mode";
  '_shadow_decision'?: "shadow_decision";
  '_estimated_cost_usd'?: "estimated_cost_usd";
  '_event_id'?: "event_id";
  '_approval_id'?: "approval_id";
  '_exception_id'?: "exception_id";
  '_category'?: "category";
  '_sequence'?: "sequence";
}
