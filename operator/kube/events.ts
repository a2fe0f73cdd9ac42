/**
 * Records core/v1 Events about objects (`kubectl describe` shows them). Events of cluster-scoped
 * objects go to the `default` namespace, as client-go's recorder does. Recording is best effort:
 * a failure is logged, never thrown.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type { CoreV1Api } from "./k8s.js";

/** The object an Event is about. */
export interface InvolvedObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
}

/** Records Events as `component` (e.g. tollgate-operator). */
export class EventRecorder {
  constructor(
    private readonly core: CoreV1Api,
    private readonly component: string,
    private readonly host: string,
    private readonly log: Logger,
  ) {}

  /** Creates one Event; resolves even when the API call fails. */
  async record(
    obj: InvolvedObject,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
  ): Promise<void> {
    const namespace = obj.namespace || "default";
    const now = new Date();
    try {
      await this.core.createNamespacedEvent({
        namespace,
        body: {
          metadata: { name: `${obj.name}.${randomBytes(8).toString("hex")}`, namespace },
          involvedObject: {
            apiVersion: obj.apiVersion,
            kind: obj.kind,
            name: obj.name,
            namespace: obj.namespace,
            uid: obj.uid,
            resourceVersion: obj.resourceVersion,
          },
          type,
          reason,
          message: message.slice(0, 1024),
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
          source: { component: this.component, host: this.host },
          reportingComponent: this.component,
          reportingInstance: this.host,
        },
      });
    } catch (err) {
      this.log.warn(
        { err: (err as Error).message, reason, object: `${obj.kind}/${obj.namespace ?? ""}/${obj.name}` },
        "event not recorded",
      );
    }
  }
}
