// Original file: proto/tollgate/v1/gateway.proto

import type { ChainFailure as _tollgate_v1_ChainFailure, ChainFailure__Output as _tollgate_v1_ChainFailure__Output } from '../../tollgate/v1/ChainFailure.js';

export interface CompleteChainRequest {
  'chain_id'?: (string);
  /**
   * Set when the chain ended through a failure; the receipt records it (status failed).
   */
  'failure'?: (_tollgate_v1_ChainFailure | null);
}

export interface CompleteChainRequest__Output {
  'chain_id': (string);
  /**
   * Set when the chain ended through a failure; the receipt records it (status failed).
   */
  'failure': (_tollgate_v1_ChainFailure__Output | null);
}
