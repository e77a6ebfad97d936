// The Helm chart, linted and rendered by the real helm for the value sets in its ci/ folder, and the rendered objects
// held to what a deployment needs: probes on the right ports, metrics scraped from the status port, disruption
// budgets, secrets referenced and never inlined, the PROXY protocol wired from the load balancer to the smtp role
// with the load balancer's addresses as the only ones trusted to send it.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { beforeAll, describe, expect, test } from "vitest";
import { parseAllDocuments } from "yaml";
import { ensureHelm } from "../support/tools.js";

const run = promisify(execFile);
const CHART = new URL("../../deploy/helm/agent-mailbox/", import.meta.url).pathname;
const VALUE_SETS = ["default", "production"] as const;
const ROLES = ["api", "smtp", "worker"] as const;

interface K8sObject {
  kind: string;
  metadata: { name: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  spec?: any;
  stringData?: Record<string, string>;
}

let helm: string;
const rendered = new Map<string, K8sObject[]>();

async function template(valueSet: string, ...set: string[]): Promise<K8sObject[]> {
  const { stdout } = await run(helm, ["template", "mbx", CHART, "--namespace", "mail", "-f", `${CHART}ci/${valueSet}-values.yaml`, ...set.flatMap((s) => ["--set", s])], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return parseAllDocuments(stdout).map((d) => d.toJS() as K8sObject).filter((o) => o !== null);
}

const one = (objects: K8sObject[], kind: string, name: string): K8sObject => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} among ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(", ")}`);
  return found;
};
const container = (objects: K8sObject[], role: string) => one(objects, "Deployment", `mbx-agent-mailbox-${role}`).spec.template.spec.containers[0];
const env = (c: any): Map<string, any> => new Map(c.env.map((e: any) => [e.name, e]));

beforeAll(async () => {
  helm = await ensureHelm();
  for (const set of VALUE_SETS) rendered.set(set, await template(set));
}, 20 * 60_000);

test.each(VALUE_SETS)("helm lint --strict passes with the %s values", async (set) => {
  const { stdout } = await run(helm, ["lint", "--strict", CHART, "-f", `${CHART}ci/${set}-values.yaml`]);
  expect(stdout).toContain("0 chart(s) failed");
});

describe.each(VALUE_SETS)("rendered with the %s values", (set) => {
  const objects = () => rendered.get(set)!;

  test("each role runs the one image with its role as the argument, and migrations run as a hook Job first", () => {
    for (const role of ROLES) expect(container(objects(), role).args).toEqual(["serve", "--role", role]);
    const job = one(objects(), "Job", "mbx-agent-mailbox-migrate");
    expect(job.spec.template.spec.containers[0].args).toEqual(["migrate"]);
    expect(job.metadata.annotations!["helm.sh/hook"]).toBe("pre-install,pre-upgrade");
    const images = new Set([...ROLES.map((r) => container(objects(), r).image), job.spec.template.spec.containers[0].image]);
    expect(images).toEqual(new Set(["registry.example/agent-mailbox:0.1.0"]));
  });

  test("readiness probes ask /readyz and liveness /healthz, on the API port for api and the status port for smtp and worker", () => {
    for (const role of ROLES) {
      const c = container(objects(), role);
      const port = role === "api" ? "http" : "status";
      expect(c.readinessProbe.httpGet).toEqual({ path: "/readyz", port });
      expect(c.livenessProbe.httpGet).toEqual({ path: "/healthz", port });
      const ports = new Map(c.ports.map((p: any) => [p.name, p.containerPort]));
      if (role === "api") expect(ports.get("http")).toBe(Number(env(c).get("HTTP_PORT").value));
      expect(ports.get("status")).toBe(Number(env(c).get("STATUS_PORT").value));
    }
  });

  test("Prometheus scrapes /metrics from each role's status port (the API port serves it only behind METRICS_TOKEN)", () => {
    for (const role of ROLES) {
      const annotations = one(objects(), "Deployment", `mbx-agent-mailbox-${role}`).spec.template.metadata.annotations;
      expect(annotations).toMatchObject({ "prometheus.io/scrape": "true", "prometheus.io/path": "/metrics" });
      expect(annotations["prometheus.io/port"]).toBe(env(container(objects(), role)).get("STATUS_PORT").value);
    }
  });

  test("each role's drain (SHUTDOWN_TIMEOUT_MS) ends before the kubelet kills it (terminationGracePeriodSeconds)", () => {
    for (const role of ROLES) {
      const deployment = one(objects(), "Deployment", `mbx-agent-mailbox-${role}`);
      const killedAfterMs = deployment.spec.template.spec.terminationGracePeriodSeconds * 1000;
      const drainMs = Number(env(container(objects(), role)).get("SHUTDOWN_TIMEOUT_MS").value);
      expect(drainMs).toBeGreaterThanOrEqual(1000);
      expect(drainMs).toBeLessThan(killedAfterMs);
    }
  });

  test("every role has a PodDisruptionBudget selecting exactly its pods", () => {
    for (const role of ROLES) {
      const pdb = one(objects(), "PodDisruptionBudget", `mbx-agent-mailbox-${role}`);
      const deployment = one(objects(), "Deployment", `mbx-agent-mailbox-${role}`);
      expect(pdb.spec.maxUnavailable).toBe(1);
      expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
      expect(deployment.spec.template.metadata.labels).toMatchObject(pdb.spec.selector.matchLabels);
    }
  });

  test("secret variables come from a Secret by reference, never as values in a pod", () => {
    const secretName = set === "production" ? "mailbox-secrets" : "mbx-agent-mailbox";
    for (const c of [...ROLES.map((r) => container(objects(), r)), one(objects(), "Job", "mbx-agent-mailbox-migrate").spec.template.spec.containers[0]]) {
      const vars = env(c);
      for (const key of ["DATABASE_URL", "CURSOR_SECRET", "DKIM_KEY_SECRET", "TEMPORAL_API_KEY"]) {
        expect(vars.get(key)).toMatchObject({ valueFrom: { secretKeyRef: { name: secretName, key } } });
        expect(vars.get(key).value).toBeUndefined();
      }
    }
    const pods = JSON.stringify(objects().filter((o) => o.kind !== "Secret"));
    expect(pods).not.toContain("password@");
    expect(pods).not.toContain("secret-of-at-least-32-characters");
    expect(pods).not.toContain("PRIVATE KEY");
  });

  test("the smtp role is behind a TCP load balancer on port 25, its PROXY protocol setting and the load balancer's ranges taken from the values", () => {
    const service = one(objects(), "Service", "mbx-agent-mailbox-smtp");
    expect(service.spec.type).toBe("LoadBalancer");
    expect(service.spec.ports).toEqual([{ name: "smtp", port: 25, targetPort: "smtp", protocol: "TCP" }]);
    const smtp = env(container(objects(), "smtp"));
    if (set === "production") {
      expect(smtp.get("SMTP_PROXY_PROTOCOL").value).toBe("true");
      expect(smtp.get("SMTP_PROXY_TRUSTED").value).toBe("10.0.0.0/20,10.0.16.0/20");
      expect(service.metadata.annotations!["service.beta.kubernetes.io/aws-load-balancer-target-group-attributes"]).toBe("proxy_protocol_v2.enabled=true");
    } else {
      expect(smtp.get("SMTP_PROXY_PROTOCOL").value).toBe("false");
      expect(smtp.has("SMTP_PROXY_TRUSTED")).toBe(false);
      expect(service.spec.externalTrafficPolicy).toBe("Local");
    }
    for (const role of ["api", "worker"] as const) expect(env(container(objects(), role)).has("SMTP_PROXY_PROTOCOL")).toBe(false);
  });

  test("pods run as a non-root user on a read-only root with DATA_DIR on a volume", () => {
    for (const role of ROLES) {
      const deployment = one(objects(), "Deployment", `mbx-agent-mailbox-${role}`);
      expect(deployment.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
      const c = container(objects(), role);
      expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
      const dataDir = env(c).get("DATA_DIR").value;
      expect(c.volumeMounts.map((m: any) => m.mountPath)).toContain(dataDir);
    }
  });
});

test("the chart's Secret holds what the default values give, and exists before the migration Job", () => {
  const secret = one(rendered.get("default")!, "Secret", "mbx-agent-mailbox");
  expect(Object.keys(secret.stringData!).sort()).toEqual(["CURSOR_SECRET", "DATABASE_URL", "DKIM_KEY_SECRET", "managed-dkim-key.pem"]);
  expect(Number(secret.metadata.annotations!["helm.sh/hook-weight"])).toBeLessThan(0);
  expect(secret.metadata.annotations!["helm.sh/hook"]).toBe("pre-install,pre-upgrade");
  expect(rendered.get("production")!.some((o) => o.kind === "Secret")).toBe(false);
});

test("mTLS to Temporal mounts the client certificate and names its files, the API key stays optional", () => {
  const c = container(rendered.get("production")!, "worker");
  const vars = env(c);
  expect(vars.get("TEMPORAL_TLS").value).toBe("true");
  expect(vars.get("TEMPORAL_TLS_CERT").value).toBe("/etc/mailbox/temporal-tls/tls.crt");
  expect(vars.get("TEMPORAL_TLS_KEY").value).toBe("/etc/mailbox/temporal-tls/tls.key");
  expect(vars.get("TEMPORAL_TLS_CA").value).toBe("/etc/mailbox/temporal-tls/ca.crt");
  expect(vars.get("TEMPORAL_API_KEY").valueFrom.secretKeyRef.optional).toBe(true);
  const volumes = one(rendered.get("production")!, "Deployment", "mbx-agent-mailbox-worker").spec.template.spec.volumes;
  expect(volumes.find((v: any) => v.name === "temporal-tls").secret.secretName).toBe("temporal-client-tls");
  expect(c.volumeMounts).toContainEqual({ name: "temporal-tls", mountPath: "/etc/mailbox/temporal-tls", readOnly: true });
});

test("the PROXY protocol without the load balancer's addresses fails to render with a message naming the value", async () => {
  const err = await template("default", "smtp.proxyProtocol=true").catch((e: { stderr: string }) => e);
  expect((err as { stderr: string }).stderr).toContain("smtp.proxyTrusted (the load balancer's addresses or CIDR ranges) is required with smtp.proxyProtocol");
});

test("a release without a database URL or secrets fails to render with a message naming the value", async () => {
  const err = await template("default", "secrets.values.DATABASE_URL=").catch((e: { stderr: string }) => e);
  expect((err as { stderr: string }).stderr).toContain("secrets.values.DATABASE_URL (or secrets.existingSecret) is required");
});
