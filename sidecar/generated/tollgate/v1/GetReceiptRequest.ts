// Original file: proto/tollgate/v1/gateway.proto


export interface GetReceiptRequest {
  'chain_id'?: (string);
}

export interface GetReceiptRequest__Output {
  'chain_id': (string);
}
