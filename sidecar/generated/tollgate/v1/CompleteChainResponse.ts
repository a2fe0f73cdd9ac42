// Original file: proto/tollgate/v1/gateway.proto


export interface CompleteChainResponse {
  'chain_id'?: (string);
  /**
   * completed | failed
   */
  'status'?: (string);
  'receipt_id'?: (string);
  /**
   * PR-YYYY-NNNNN
   */
  'receipt_number'?: (string);
}

export interface CompleteChainResponse__Output {
  'chain_id': (string);
  /**
   * completed | failed
   */
  'status': (string);
  'receipt_id': (string);
  /**
   * PR-YYYY-NNNNN
   */
  'receipt_number': (string);
}
