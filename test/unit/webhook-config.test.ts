import { expect, test } from "vitest";
import { loadConfig } from "../../src/config.js";

test("webhook delivery defaults to a 10 s timeout and 10 attempts from 30 s to an hour apart, with no exempt hosts", () => {
  expect(loadConfig({}).webhooks).toEqual({
    allowHosts: [],
    timeoutMs: 10_000,
    maxAttempts: 10,
    retryInitialMs: 30_000,
    retryMaxMs: 3_600_000,
    secretReplayMs: 86_400_000,
  });
});

test("WEBHOOK_ALLOW_HOSTS is a comma list of host names and addresses, trimmed and lower-cased", () => {
  const { allowHosts } = loadConfig({ WEBHOOK_ALLOW_HOSTS: " Receiver.Test ,127.0.44.9,,::1" }).webhooks;
  expect(allowHosts).toEqual(["receiver.test", "127.0.44.9", "::1"]);
});

test("names every bad webhook setting in one error", () => {
  const load = () =>
    loadConfig({
      WEBHOOK_ALLOW_HOSTS: "ok.test,https://bad.test/",
      WEBHOOK_MAX_ATTEMPTS: "0",
      WEBHOOK_TIMEOUT_MS: "120000",
      WEBHOOK_RETRY_INITIAL_MS: "5000",
      WEBHOOK_RETRY_MAX_MS: "1000",
    });
  expect(load).toThrow(/WEBHOOK_ALLOW_HOSTS.*https:\/\/bad\.test\//);
  expect(load).toThrow(/WEBHOOK_MAX_ATTEMPTS/);
  expect(load).toThrow(/WEBHOOK_TIMEOUT_MS/);
  expect(load).toThrow(/WEBHOOK_RETRY_MAX_MS must not be below WEBHOOK_RETRY_INITIAL_MS/);
});
