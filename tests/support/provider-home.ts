/**
 * Test support for the provider suites: the fake providers on loopback, and a
 * broker home with the two example provider extensions (manifests/
 * openai-compatible and anthropic-compatible) installed and approved, each
 * copied with its base URL and `[net] allow` rule pointed at its fake, and
 * given test models: `shared` (both offer it), `boom` (the fake answers 500)
 * and `garbled` (a stream event that is not JSON). Beside them, `zz-twin`
 * declares `local-openai` again (it loses the name, and so every provider), and
 * `off-anthropic` is turned off globally. The operator policy allows loopback.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { Preferences } from "../../broker/sessions/preferences.js";
import { envOptions } from "./env-options.js";
import { fakeAnthropic, fakeOpenAi, type FakeProvider } from "../../examples/servers/fake-providers.js";
import { REPO } from "./satellites.js";

export interface ProviderHome {
  readonly tmp: string;
  readonly home: string;
  readonly broker: Broker;
  readonly openai: FakeProvider;
  readonly anthropic: FakeProvider;
  close(): Promise<void>;
}

const TEST_MODELS =
  'models = [\n  { id = "shared", context_window = 1000 },\n  { id = "boom", context_window = 1000 },\n  { id = "garbled", context_window = 1000 },';

/** Copies manifests/<example> to `tmp`/<as>, its port replaced and the test models added; `rename` edits the manifest and the module further. */
function copyExample(
  tmp: string,
  example: string,
  port: string,
  fake: FakeProvider,
  as: string,
  rename: (text: string) => string = (t) => t,
): string {
  const dir = join(tmp, as);
  cpSync(join(REPO, "manifests", example), dir, { recursive: true });
  const file = join(dir, "manifest.toml");
  writeFileSync(
    file,
    rename(readFileSync(file, "utf8").replaceAll(port, String(fake.port)).replace("models = [", TEST_MODELS)),
  );
  const code = join(dir, "index.ts");
  writeFileSync(code, rename(readFileSync(code, "utf8")));
  return dir;
}

export async function openProviderHome(prefix: string): Promise<ProviderHome> {
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  const [openai, anthropic] = await Promise.all([fakeOpenAi(), fakeAnthropic()]);
  const home = join(tmp, "home");
  const broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }) });
  writeFileSync(join(broker.home, "policy.toml"), "[net]\nallow_private = true\n");
  const folders = [
    copyExample(tmp, "openai-compatible", "17320", openai, "openai-compatible"),
    copyExample(tmp, "anthropic-compatible", "17321", anthropic, "anthropic-compatible"),
    copyExample(tmp, "openai-compatible", "17320", openai, "zz-twin", (t) =>
      t.replace('name = "openai-compatible"', 'name = "zz-twin"'),
    ),
    copyExample(tmp, "anthropic-compatible", "17321", anthropic, "off-anthropic", (t) =>
      t
        .replace('name = "anthropic-compatible"', 'name = "off-anthropic"')
        .replace('name = "local-anthropic"', 'name = "off-anthropic"')
        .replace('"local-anthropic": messages', '"off-anthropic": messages'),
    ),
  ];
  for (const folder of folders) {
    const { installed } = await broker.registry.install(folder);
    broker.registry.approve(installed.name);
  }
  new Preferences(broker.store).setGlobal("off-anthropic", false);
  return {
    tmp,
    home: broker.home,
    broker,
    openai,
    anthropic,
    close: async () => {
      await broker.close();
      await Promise.all([openai.close(), anthropic.close()]);
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}
