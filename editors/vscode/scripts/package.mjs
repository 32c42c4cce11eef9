// `npm run package [-- --bundle-python] [-- --python PY] [-- --out FILE.vsix]`
//
// Type-checks, bundles the extension with esbuild and writes a .vsix with
// @vscode/vsce. With --bundle-python, stackmark and its Python dependencies
// (pygls, lsprotocol, attrs, cattrs, pyelftools, cxxfilt: all pure Python)
// are installed into bundled/libs with PY's pip (default python3), so the
// extension runs the server with any Python 3.11+ and nothing installed.
// Without it, bundled/ is removed so that no stale copy is packaged.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const repo = resolve(root, "..", "..");
const args = process.argv.slice(2);

function option(name, fallback) {
  const at = args.indexOf(name);
  if (at < 0) return fallback;
  if (at + 1 >= args.length) throw new Error(`${name} needs a value`);
  return args[at + 1];
}

function run(command, commandArgs, cwd = root) {
  console.log(`$ ${command} ${commandArgs.join(" ")}`);
  execFileSync(command, commandArgs, { cwd, stdio: "inherit" });
}

const bundlePython = args.includes("--bundle-python");
const python = option("--python", "python3");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const suffix = bundlePython ? "-bundled" : "";
const out = resolve(option("--out", join(root, `${manifest.name}${suffix}-${manifest.version}.vsix`)));
const bin = join(root, "node_modules", ".bin");

run(join(bin, "tsc"), ["--noEmit", "-p", "."]);
run(process.execPath, [join(root, "scripts", "build.mjs")]);

const bundled = join(root, "bundled");
rmSync(bundled, { recursive: true, force: true });
if (bundlePython) {
  const libs = join(bundled, "libs");
  mkdirSync(libs, { recursive: true });
  run(python, [
    "-m", "pip", "install", "--quiet", "--no-compile", "--disable-pip-version-check",
    "--target", libs, `${repo}[lsp]`,
  ]);
  if (!existsSync(join(libs, "stackmark_lsp"))) {
    throw new Error(`pip did not install stackmark_lsp into ${libs}`);
  }
  // Console scripts point at the build machine's Python; the extension runs `-m stackmark_lsp`.
  rmSync(join(libs, "bin"), { recursive: true, force: true });
}

mkdirSync(dirname(out), { recursive: true });
run(join(bin, "vsce"), [
  "package", "--no-dependencies", "--allow-missing-repository", "--skip-license", "--out", out,
]);
console.log(`wrote ${out}`);
