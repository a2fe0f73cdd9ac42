/**
 * A real Kubernetes control plane (etcd + kube-apiserver) for tests, started the way
 * controller-runtime's envtest does: no kubelet, no controller-manager, no scheduler.
 * Objects are admitted and stored; pods never run; namespaces are never finalized.
 *
 * Binaries come from `scripts/build-control-plane.sh` (see docs/control-plane.md).
 * Certificates are issued with the `openssl` CLI, because Node's crypto cannot sign X.509.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { closeSync, constants as fsConstants, openSync } from "node:fs";
import { access, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import os from "node:os";
import path from "node:path";

/** Paths of every certificate and key generated for one control plane. */
export interface ControlPlaneCerts {
  /** CA that signed the API server's serving certificate (also usable for webhook certs). */
  caCertPath: string;
  /** Private key of the serving CA. */
  caKeyPath: string;
  /** Serving certificate of kube-apiserver, valid for 127.0.0.1 and localhost. */
  servingCertPath: string;
  /** Private key of the serving certificate. */
  servingKeyPath: string;
  /** CA the API server trusts for client certificates (`--client-ca-file`). */
  clientCaCertPath: string;
  /** Private key of the client CA, for issuing more user certificates in tests. */
  clientCaKeyPath: string;
  /** Client certificate for user `admin` in group `system:masters`. */
  adminCertPath: string;
  /** Private key of the admin client certificate. */
  adminKeyPath: string;
  /** RSA private key that signs service-account tokens. */
  serviceAccountKeyPath: string;
  /** RSA public key that verifies service-account tokens. */
  serviceAccountPubPath: string;
}

/** A running etcd + kube-apiserver pair, isolated in its own temporary directory. */
export interface ControlPlane {
  /** Admin kubeconfig (user `admin`, group `system:masters`), certificates embedded. */
  kubeconfigPath: string;
  /** API server URL, e.g. `https://127.0.0.1:41234`. */
  server: string;
  /** Directory holding kube-apiserver, etcd and kubectl (and helm, when built). */
  binDir: string;
  /** CA certificate that verifies the API server's serving certificate. */
  caCertPath: string;
  /** Temporary directory with certificates, etcd data, logs and the kubeconfig. */
  dir: string;
  /** etcd client URL, e.g. `http://127.0.0.1:41233`. */
  etcdEndpoint: string;
  /** All generated certificate and key paths. */
  certs: ControlPlaneCerts;
  /** Log files receiving each process's stdout and stderr. */
  logs: { etcd: string; apiserver: string };
  /** Stops kube-apiserver and etcd (SIGTERM, then SIGKILL after 10 s) and removes `dir`. Idempotent. */
  stop(): Promise<void>;
}

/** Options for {@link startControlPlane}. */
export interface StartControlPlaneOptions {
  /** Directory with the binaries; defaults to `$TOLLGATE_CONTROLPLANE_BIN`, then the build cache's `current` file. */
  binDir?: string;
  /** Receives progress messages (timings, ports, directories). */
  log?: (msg: string) => void;
}

const REQUIRED_BINARIES = ["etcd", "kube-apiserver", "kubectl"] as const;
const ETCD_READY_TIMEOUT_MS = 30_000;
const APISERVER_READY_TIMEOUT_MS = 90_000;
const STOP_GRACE_MS = 10_000;
const LOG_TAIL_LINES = 40;

/** Cache directory used by scripts/build-control-plane.sh. */
export function controlPlaneCacheDir(): string {
  const base = process.env.TOLLGATE_CACHE_DIR || path.join(os.homedir(), ".cache", "tollgate");
  return path.join(base, "controlplane");
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function hasBinaries(dir: string): Promise<boolean> {
  for (const b of REQUIRED_BINARIES) {
    if (!(await isExecutable(path.join(dir, b)))) return false;
  }
  return true;
}

/**
 * Finds the directory with etcd, kube-apiserver and kubectl: `explicit`, then
 * `$TOLLGATE_CONTROLPLANE_BIN`, then the path in `<cache>/controlplane/current`.
 * Throws an error naming the build script when none of them holds the binaries.
 */
export async function resolveControlPlaneBinDir(explicit?: string): Promise<string> {
  const tried: string[] = [];
  const candidates: Array<[string, string | undefined]> = [
    ["opts.binDir", explicit],
    ["$TOLLGATE_CONTROLPLANE_BIN", process.env.TOLLGATE_CONTROLPLANE_BIN],
  ];
  const currentFile = path.join(controlPlaneCacheDir(), "current");
  try {
    candidates.push([currentFile, (await readFile(currentFile, "utf8")).trim()]);
  } catch {
    tried.push(`${currentFile} (missing)`);
  }
  for (const [source, dir] of candidates) {
    if (!dir) continue;
    if (await hasBinaries(dir)) return dir;
    tried.push(`${dir} (from ${source}; needs ${REQUIRED_BINARIES.join(", ")})`);
  }
  throw new Error(
    [
      "Kubernetes control-plane binaries (etcd, kube-apiserver, kubectl) not found.",
      "Build them once with:  scripts/build-control-plane.sh",
      "(cold build about 20-40 minutes on 2 cores; cached afterwards, see docs/control-plane.md),",
      "or point TOLLGATE_CONTROLPLANE_BIN at a directory that holds them.",
      `Looked in: ${tried.length ? tried.join("; ") : "(nothing configured)"}`,
    ].join("\n"),
  );
}

/** Reserves `n` distinct free TCP ports on 127.0.0.1 (released before returning). */
export async function freePorts(n: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < n; i++) {
      const srv = net.createServer();
      servers.push(srv);
      await new Promise<void>((resolve, reject) => {
        srv.once("error", reject);
        srv.listen(0, "127.0.0.1", () => resolve());
      });
      ports.push((srv.address() as net.AddressInfo).port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}

function openssl(args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile("openssl", args, { cwd, timeout: 60_000 }, (err, _stdout, stderr) => {
      if (!err) return resolve();
      const e = err as NodeJS.ErrnoException;
      if (e.code === "ENOENT") {
        reject(
          new Error("openssl not found in PATH (apt-get install openssl); it issues the test certificates"),
        );
      } else {
        reject(new Error(`openssl ${args.join(" ")} failed: ${err.message}\n${stderr}`));
      }
    });
  });
}

/** Writes `dir/<name>.key`: ECDSA P-256 for TLS certificates (fast), or RSA 2048. */
async function newKey(dir: string, name: string, alg: "ec" | "rsa" = "ec"): Promise<string> {
  const keyPath = path.join(dir, `${name}.key`);
  const algArgs =
    alg === "rsa"
      ? ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
      : ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"];
  await openssl(["genpkey", ...algArgs, "-out", keyPath], dir);
  return keyPath;
}

async function newCa(dir: string, name: string, cn: string): Promise<{ cert: string; key: string }> {
  const key = await newKey(dir, name);
  const cert = path.join(dir, `${name}.crt`);
  await openssl(
    [
      "req",
      "-x509",
      "-new",
      "-key",
      key,
      "-out",
      cert,
      "-days",
      "3650",
      "-sha256",
      "-subj",
      `/CN=${cn}`,
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
    ],
    dir,
  );
  return { cert, key };
}

/**
 * Issues a certificate (ECDSA P-256 key) signed by `ca` into `dir/<name>.crt` / `dir/<name>.key`.
 * `subject` is an openssl subject such as `/O=system:masters/CN=admin`; `ext` holds
 * X.509 v3 extension lines (subjectAltName, extendedKeyUsage, ...).
 */
export async function issueCertificate(
  dir: string,
  name: string,
  ca: { cert: string; key: string },
  subject: string,
  ext: string[],
): Promise<{ cert: string; key: string }> {
  const key = await newKey(dir, name);
  const csr = path.join(dir, `${name}.csr`);
  const extFile = path.join(dir, `${name}.ext`);
  const cert = path.join(dir, `${name}.crt`);
  await openssl(["req", "-new", "-key", key, "-out", csr, "-subj", subject], dir);
  await writeFile(extFile, `${ext.join("\n")}\n`);
  const serial = `0x${Buffer.from(Array.from({ length: 16 }, () => Math.floor(Math.random() * 256)))
    .toString("hex")
    .replace(/^./, "1")}`;
  await openssl(
    [
      "x509",
      "-req",
      "-in",
      csr,
      "-CA",
      ca.cert,
      "-CAkey",
      ca.key,
      "-set_serial",
      serial,
      "-out",
      cert,
      "-days",
      "3650",
      "-sha256",
      "-extfile",
      extFile,
    ],
    dir,
  );
  return { cert, key };
}

/**
 * Issues a serving certificate for 127.0.0.1/localhost signed by the control plane's
 * serving CA (`cp.caCertPath`), e.g. for a webhook server that the API server calls
 * through a `url:` with `caBundle` set to that CA.
 */
export async function issueServingCertificate(
  cp: Pick<ControlPlane, "certs" | "dir">,
  name: string,
  extraSans: string[] = [],
): Promise<{ cert: string; key: string }> {
  return issueCertificate(
    cp.dir,
    name,
    { cert: cp.certs.caCertPath, key: cp.certs.caKeyPath },
    `/CN=${name}`,
    [
      "basicConstraints=critical,CA:FALSE",
      "keyUsage=critical,digitalSignature",
      "extendedKeyUsage=serverAuth",
      `subjectAltName=${["DNS:localhost", "IP:127.0.0.1", ...extraSans].join(",")}`,
    ],
  );
}

async function generateCerts(dir: string): Promise<ControlPlaneCerts> {
  // The service-account key is RSA (what kube-apiserver's token signer expects by default).
  const saKeyPromise = newKey(dir, "service-account", "rsa");
  const [ca, clientCa] = await Promise.all([
    newCa(dir, "ca", "tollgate-test-serving-ca"),
    newCa(dir, "client-ca", "tollgate-test-client-ca"),
  ]);
  const [serving, admin] = await Promise.all([
    issueCertificate(dir, "apiserver", ca, "/CN=kube-apiserver", [
      "basicConstraints=critical,CA:FALSE",
      "keyUsage=critical,digitalSignature",
      "extendedKeyUsage=serverAuth",
      "subjectAltName=DNS:localhost,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1",
    ]),
    issueCertificate(dir, "admin", clientCa, "/O=system:masters/CN=admin", [
      "basicConstraints=critical,CA:FALSE",
      "keyUsage=critical,digitalSignature",
      "extendedKeyUsage=clientAuth",
    ]),
  ]);
  const saKey = await saKeyPromise;
  const saPub = path.join(dir, "service-account.pub");
  await openssl(["pkey", "-in", saKey, "-pubout", "-out", saPub], dir);
  return {
    caCertPath: ca.cert,
    caKeyPath: ca.key,
    servingCertPath: serving.cert,
    servingKeyPath: serving.key,
    clientCaCertPath: clientCa.cert,
    clientCaKeyPath: clientCa.key,
    adminCertPath: admin.cert,
    adminKeyPath: admin.key,
    serviceAccountKeyPath: saKey,
    serviceAccountPubPath: saPub,
  };
}

async function kubeconfigYaml(server: string, certs: ControlPlaneCerts): Promise<string> {
  const b64 = async (p: string) => (await readFile(p)).toString("base64");
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: tollgate-test",
    "  cluster:",
    `    server: ${server}`,
    `    certificate-authority-data: ${await b64(certs.caCertPath)}`,
    "users:",
    "- name: admin",
    "  user:",
    `    client-certificate-data: ${await b64(certs.adminCertPath)}`,
    `    client-key-data: ${await b64(certs.adminKeyPath)}`,
    "contexts:",
    "- name: tollgate-test",
    "  context:",
    "    cluster: tollgate-test",
    "    user: admin",
    "    namespace: default",
    "current-context: tollgate-test",
    "",
  ].join("\n");
}

async function tail(file: string, lines = LOG_TAIL_LINES): Promise<string> {
  try {
    const text = await readFile(file, "utf8");
    return text
      .split("\n")
      .slice(-lines - 1)
      .join("\n");
  } catch {
    return "(no log)";
  }
}

interface Proc {
  name: string;
  child: ChildProcess;
  logFile: string;
  exited: Promise<void>;
  exitInfo?: string;
}

function startProcess(name: string, bin: string, args: string[], logFile: string, cwd: string): Proc {
  const fd = openSync(logFile, "a");
  let child: ChildProcess;
  try {
    child = spawn(bin, args, { cwd, stdio: ["ignore", fd, fd], env: { ...process.env } });
  } finally {
    closeSync(fd);
  }
  const proc: Proc = { name, child, logFile, exited: Promise.resolve() };
  proc.exited = new Promise<void>((resolve) => {
    child.once("exit", (code, signal) => {
      proc.exitInfo = signal ? `signal ${signal}` : `exit code ${code}`;
      resolve();
    });
    child.once("error", (err) => {
      proc.exitInfo = `spawn error: ${err.message}`;
      resolve();
    });
  });
  return proc;
}

async function stopProcess(p: Proc): Promise<void> {
  if (p.exitInfo !== undefined) return;
  p.child.kill("SIGTERM");
  const timer = setTimeout(() => {
    if (p.exitInfo === undefined) p.child.kill("SIGKILL");
  }, STOP_GRACE_MS);
  await p.exited;
  clearTimeout(timer);
}

function get(
  url: string,
  tls?: { ca: Buffer; cert: Buffer; key: Buffer },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const opts = { timeout: 5_000, ...(tls ?? {}) };
    const req = (url.startsWith("https:") ? https : http).get(url, opts, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c) => {
        body += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
  });
}

class StartupError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

async function waitFor(
  what: string,
  proc: Proc,
  timeoutMs: number,
  probe: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastErr = "";
  for (;;) {
    if (proc.exitInfo !== undefined) {
      const logTail = await tail(proc.logFile);
      throw new StartupError(
        `${proc.name} exited (${proc.exitInfo}) before ${what}. Last ${LOG_TAIL_LINES} lines of ${proc.logFile}:\n${logTail}`,
        /address already in use/i.test(logTail),
      );
    }
    try {
      if (await probe()) return;
    } catch (err) {
      lastErr = (err as Error).message;
    }
    if (Date.now() > deadline) {
      throw new StartupError(
        `${proc.name}: ${what} not reached within ${timeoutMs / 1000}s${lastErr ? ` (last error: ${lastErr})` : ""}. ` +
          `Last ${LOG_TAIL_LINES} lines of ${proc.logFile}:\n${await tail(proc.logFile)}`,
        false,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Starts etcd and kube-apiserver on free loopback ports, with freshly generated
 * certificates, and resolves once `/readyz` answers `ok` (up to 90 s). Throws, with the
 * tail of the failing process's log, if the binaries are missing or startup fails; it
 * never silently skips. Call `stop()` when done (e.g. in `afterAll`).
 */
export async function startControlPlane(opts: StartControlPlaneOptions = {}): Promise<ControlPlane> {
  const binDir = await resolveControlPlaneBinDir(opts.binDir);
  const log = opts.log ?? (() => {});
  // Ports are probed, released and then bound by etcd/apiserver; retry if another
  // process grabs one in between.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(binDir, log);
    } catch (err) {
      if (err instanceof StartupError && err.retryable && attempt < 3) {
        log(`control plane: port collision, retrying (${err.message.split("\n")[0]})`);
        continue;
      }
      throw err;
    }
  }
}

async function startOnce(binDir: string, log: (msg: string) => void): Promise<ControlPlane> {
  const t0 = Date.now();
  const dir = await mkdtemp(path.join(os.tmpdir(), "tollgate-cp-"));
  const procs: Proc[] = [];
  const killAll = () => {
    for (const p of procs) if (p.exitInfo === undefined) p.child.kill("SIGKILL");
  };
  process.once("exit", killAll);
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      for (const p of [...procs].reverse()) await stopProcess(p);
      process.removeListener("exit", killAll);
      if (!process.env.TOLLGATE_CONTROLPLANE_KEEP) await rm(dir, { recursive: true, force: true });
    })();
    return stopped;
  };

  try {
    const certDir = path.join(dir, "pki");
    await mkdir(certDir);
    const certs = await generateCerts(certDir);
    log(`control plane: certificates ready in ${Date.now() - t0} ms (${dir})`);

    const [etcdPort, peerPort, apiPort] = await freePorts(3);
    const etcdEndpoint = `http://127.0.0.1:${etcdPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const etcdLog = path.join(dir, "etcd.log");
    const apiLog = path.join(dir, "kube-apiserver.log");

    const etcd = startProcess(
      "etcd",
      path.join(binDir, "etcd"),
      [
        "--name=tollgate-test",
        `--data-dir=${path.join(dir, "etcd-data")}`,
        `--listen-client-urls=${etcdEndpoint}`,
        `--advertise-client-urls=${etcdEndpoint}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=tollgate-test=${peerUrl}`,
        "--unsafe-no-fsync=true",
        "--log-level=warn",
      ],
      etcdLog,
      dir,
    );
    procs.push(etcd);
    await waitFor("GET /health", etcd, ETCD_READY_TIMEOUT_MS, async () => {
      const r = await get(`${etcdEndpoint}/health`);
      return r.status === 200 && /"health":\s*"true"/.test(r.body);
    });
    log(`control plane: etcd healthy at ${etcdEndpoint} after ${Date.now() - t0} ms`);

    const server = `https://127.0.0.1:${apiPort}`;
    const apiserver = startProcess(
      "kube-apiserver",
      path.join(binDir, "kube-apiserver"),
      [
        `--etcd-servers=${etcdEndpoint}`,
        `--secure-port=${apiPort}`,
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        `--cert-dir=${path.join(dir, "apiserver-certs")}`,
        `--tls-cert-file=${certs.servingCertPath}`,
        `--tls-private-key-file=${certs.servingKeyPath}`,
        `--client-ca-file=${certs.clientCaCertPath}`,
        "--authorization-mode=RBAC",
        "--service-cluster-ip-range=10.0.0.0/24",
        "--allow-privileged=true",
        "--disable-admission-plugins=ServiceAccount",
        // The "kubernetes" Service endpoint would be 127.0.0.1, which Endpoints reject
        // (loopback); without this the reconciler logs an error every 10 s.
        "--endpoint-reconciler-type=none",
        `--service-account-issuer=${server}/`,
        `--service-account-key-file=${certs.serviceAccountPubPath}`,
        `--service-account-signing-key-file=${certs.serviceAccountKeyPath}`,
        "--v=1",
      ],
      apiLog,
      dir,
    );
    procs.push(apiserver);
    const tls = {
      ca: await readFile(certs.caCertPath),
      cert: await readFile(certs.adminCertPath),
      key: await readFile(certs.adminKeyPath),
    };
    await waitFor("GET /readyz", apiserver, APISERVER_READY_TIMEOUT_MS, async () => {
      const r = await get(`${server}/readyz`, tls);
      return r.status === 200 && r.body.trim() === "ok";
    });
    log(`control plane: kube-apiserver ready at ${server} after ${Date.now() - t0} ms`);

    const kubeconfigPath = path.join(dir, "kubeconfig");
    await writeFile(kubeconfigPath, await kubeconfigYaml(server, certs), { mode: 0o600 });

    return {
      kubeconfigPath,
      server,
      binDir,
      caCertPath: certs.caCertPath,
      dir,
      etcdEndpoint,
      certs,
      logs: { etcd: etcdLog, apiserver: apiLog },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
