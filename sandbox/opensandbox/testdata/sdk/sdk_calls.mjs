// Run by sdk_test.go: the official OpenSandbox TypeScript SDK's calls
// against the server at OPENSANDBOX_DOMAIN (host:port, http) with key
// OPENSANDBOX_API_KEY, with files below OPENSANDBOX_ROOT. Prints one line per step; exits non-zero on the
// first failure.
import { ConnectionConfig, Sandbox } from "@alibaba-group/opensandbox";

const root = process.env.OPENSANDBOX_ROOT;
const step = (name, detail = "") => console.log(`ok ${name} ${detail}`.trim());

const config = new ConnectionConfig({
  domain: process.env.OPENSANDBOX_DOMAIN,
  apiKey: process.env.OPENSANDBOX_API_KEY,
  protocol: "http",
  requestTimeoutSeconds: 30,
});

try {
  const sandbox = await Sandbox.create({ connectionConfig: config, image: "ubuntu", timeoutSeconds: 600 });
  step("create", sandbox.id);

  const lines = [];
  const run = await sandbox.commands.run("echo one; echo two; echo oops >&2", undefined, {
    onStdout: (m) => lines.push(m.text),
  });
  const out = run.logs.stdout.map((m) => m.text).join("");
  if (!out.includes("one") || !out.includes("two")) throw new Error(`stdout ${JSON.stringify(run.logs)}`);
  if (lines.length === 0) throw new Error("no streamed stdout");
  step("run", JSON.stringify(lines));

  await sandbox.files.writeFiles([{ path: `${root}/sdk/hello.txt`, data: "hello from the sdk", mode: 644 }]);
  step("write");
  const text = await sandbox.files.readFile(`${root}/sdk/hello.txt`);
  if (text !== "hello from the sdk") throw new Error(`read ${JSON.stringify(text)}`);
  step("read");
  const found = await sandbox.files.listDirectory({ path: `${root}/sdk`, depth: 1 });
  if (!found.some((f) => String(f.path).endsWith("hello.txt"))) throw new Error(`list ${JSON.stringify(found)}`);
  step("list", String(found.length));

  await sandbox.kill();
  await sandbox.close();
  step("delete");
} catch (err) {
  console.error(`FAIL: ${err?.stack ?? err}`);
  if (err?.error) console.error(JSON.stringify(err.error));
  process.exit(1);
}
