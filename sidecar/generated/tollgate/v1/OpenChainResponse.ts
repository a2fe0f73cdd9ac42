// Original file: proto/tollgate/v1/gateway.proto


export interface OpenChainResponse {
  /**
   * UUID assigned by the governance service.
   */
  'chain_id'?: (string);
}

export interface OpenChainResponse__Output {
  /**
   * UUID assigned by the governance service.
   */
  'chain_id': (string);
}
