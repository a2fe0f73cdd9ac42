// Original file: proto/tollgate/v1/gateway.proto


export interface GetDecisionRequest {
  'chain_id'?: (string);
  'event_id'?: (string);
}

export interface GetDecisionRequest__Output {
  'chain_id': (string);
  'event_id': (string);
}
