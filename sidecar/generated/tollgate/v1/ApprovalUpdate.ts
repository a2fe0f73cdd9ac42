// Original file: proto/tollgate/v1/gateway.proto


/**
 * Where a call's approval stands (WatchInvoke).
 */
export interface ApprovalUpdate {
  'approval_id'?: (string);
  /**
   * pending | approved | denied | timed_out | cancelled | failed
   */
  'status'?: (string);
  /**
   * The dashboard page where a person decides (the service's public URL + /dashboard/approvals).
   */
  'review_url'?: (string);
  'policy_name'?: (string);
  /**
   * Why the action needs approval (pending), or how it was resolved.
   */
  'reason'?: (string);
  /**
   * Seconds since the call started waiting.
   */
  'waited_seconds'?: (number | string);
  '_policy_name'?: "policy_name";
}

/**
 * Where a call's approval stands (WatchInvoke).
 */
export interface ApprovalUpdate__Output {
  'approval_id': (string);
  /**
   * pending | approved | denied | timed_out | cancelled | failed
   */
  'status': (string);
  /**
   * The dashboard page where a person decides (the service's public URL + /dashboard/approvals).
   */
  'review_url': (string);
  'policy_name'?: (string);
  /**
   * Why the action needs approval (pending), or how it was resolved.
   */
  'reason': (string);
  /**
   * Seconds since the call started waiting.
   */
  'waited_seconds': (number);
  '_policy_name'?: "policy_name";
}
