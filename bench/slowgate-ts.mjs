// Claudopilot TS v1.0's driver in its host mode (worktrees, the agent as a
// subprocess) for bench/slowgate.sh DRIVER=ts: what `claudopilot run`
// does (src/cli.ts cmdRun) without the Docker worker image. Copied into
// the v1.0.0 tree as src/slowgate-ts.ts and bundled there by tsup.
import { readFile } from "node:fs/promises";
import { runDriver } from "./orchestrator/index.js";
import { loadConfig } from "./config.js";
import { Git } from "./git.js";

const repoRoot = process.cwd();
const config = await loadConfig(repoRoot, process.env);
const git = new Git({ cwd: repoRoot });
const baseBranch = (await git.currentBranch()) ?? "main";
const workerPrompt = await readFile(config.promptFile, "utf8");
const supervisorPrompt = await readFile(config.supervisorPromptFile, "utf8");
const code = await runDriver(
  { git, log: (m) => console.log(m) },
  { config, baseBranch, workerPrompt, supervisorPrompt },
);
process.exit(code);
