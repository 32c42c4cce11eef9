// Drives VS Code (code-server in Debian's headless Chromium, through
// playwright-core) the way a person would: open a log, hover an element,
// go to its definition, read the inlay hints and the Problems panel, run
// "Stackmark: Show Symbolized Log" and the "Symbolize" code lens. It only
// observes: tests/editors/test_vscode.py checks what it saw. Every step
// waits on a condition, never on time, and records its error without
// stopping the next steps.
//
//   node vscode_driver.mjs SCENARIO.json
//
// SCENARIO: { url, folder, log_name, out, shots,
//             hover: {line, column, text}, definition: {line, column, text},
//             hints: [text...], symbolize: {line} }
// Lines and columns are 1-based, as VS Code's "Go to Line" takes them;
// `text` is the element's text, used to find its line on screen.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { tmpdir } from "node:os";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");

const scenario = JSON.parse(readFileSync(process.argv[2], "utf8"));
const TIMEOUT = 60000;
const out = { steps: [], console: [] };

function save() {
  writeFileSync(scenario.out, JSON.stringify(out, null, 1));
}

async function step(name, body) {
  const started = Date.now();
  try {
    out[name] = await body();
  } catch (error) {
    out[name] = { error: String(error && error.stack ? error.stack : error) };
    await shot(`${name}-failed`).catch(() => undefined);
    out[name].server_output = await serverOutput().catch((e) => [`(no output: ${e})`]);
  }
  out[name].seconds = (Date.now() - started) / 1000;
  out.steps.push(name);
  save();
}

let page;

async function shot(name) {
  const path = join(scenario.shots, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

const clean = (text) => (text ?? "").replace(/\u00a0/g, " ");

/** Visible lines of the active editor, top to bottom. */
async function visibleLines() {
  return page.evaluate(() => {
    const group = document.querySelector(".editor-group-container.active") ?? document;
    const lines = [...group.querySelectorAll(".view-lines .view-line")];
    lines.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
    return lines.map((line) => line.textContent.replace(/\u00a0/g, " "));
  });
}

/** What the active editor group shows (run in the page): its document's URI
 * (Monaco's `data-uri`), the cursor's line (Monaco marks its number
 * `active-line-number` in the same render pass that draws the lines, unlike
 * the status bar, which updates on its own schedule) and the visible lines.
 * With `want` ({scheme, line?}), null until the group shows a document of that
 * scheme with symbolized frames on screen and the cursor's line drawn (on line
 * number `line`). */
function inspectActiveGroup(want) {
  const viewScheme = want && want.scheme;
  const group = document.querySelector(".editor-group-container.active");
  if (!group) return null;
  const text = (node) => node.textContent.replace(/\u00a0/g, " ");
  const uri = group.querySelector("[data-uri]")?.getAttribute("data-uri") ?? null;
  const nodes = [...group.querySelectorAll(".view-lines .view-line")];
  nodes.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
  const number = group.querySelector(".margin-view-overlays .line-numbers.active-line-number");
  const top = number ? number.parentElement.style.top : null;
  const line = top === null ? undefined : nodes.find((node) => node.style.top === top);
  const seen = {
    uri,
    cursorNumber: number ? Number(number.textContent.trim()) : null,
    cursor: line ? text(line) : null,
    lines: nodes.map(text),
  };
  if (!viewScheme) return seen;
  const ready = uri !== null && uri.startsWith(`${viewScheme}:`)
    && seen.lines.some((l) => /#\d+\s+0x[0-9a-f]+ \S/.test(l))
    && seen.cursor !== null
    && (!want.line || seen.cursorNumber === want.line);
  return ready ? seen : null;
}

/** Wait until the active group shows the symbolized view, cursor drawn; on a
 * timeout the error says what the group showed instead (a raw log, another tab). */
async function waitForView(line) {
  try {
    const handle = await page.waitForFunction(inspectActiveGroup,
      { scheme: "stackmark-symbolized", line }, { timeout: TIMEOUT });
    return await handle.jsonValue();
  } catch (error) {
    const seen = await page.evaluate(inspectActiveGroup, null).catch(() => null);
    const shown = seen ? { ...seen, lines: seen.lines.slice(0, 6) } : null;
    throw new Error(`${String(error).split("\n")[0]}; the active group showed ${JSON.stringify(shown)}`);
  }
}

async function statusSelection() {
  return clean(await page.locator("[id='status.editor.selection']").first().textContent());
}

async function activeTab() {
  const tab = page.locator(".editor-group-container.active .tab.active").first();
  return {
    label: clean(await tab.locator(".label-name").first().textContent()),
    title: clean(await tab.getAttribute("title")),
    aria: clean(await tab.getAttribute("aria-label")),
    resource: await tab.getAttribute("data-resource-name"),
  };
}

async function closeWidgets() {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Escape");
}

/** Run a command from the palette by its title. */
async function runCommand(title) {
  await closeWidgets();
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input").first();
  await input.waitFor({ state: "visible", timeout: TIMEOUT });
  await input.fill(`>${title}`);
  // Enter takes the focused row: wait until the filter has put ours there.
  await page
    .locator(".quick-input-list .monaco-list-row.focused", { hasText: title })
    .first()
    .waitFor({ timeout: TIMEOUT });
  await page.keyboard.press("Enter");
}

/** The last lines of the "Stackmark" output channel (the server's stderr), for a failed step. */
async function serverOutput() {
  await runCommand("Stackmark: Show Server Output");
  const lines = page.locator(".part.panel .view-lines .view-line");
  await lines.first().waitFor({ timeout: 10000 });
  await runCommand("View: Toggle Maximized Panel");
  const texts = await page.evaluate(() => {
    const nodes = [...document.querySelectorAll(".part.panel .view-lines .view-line")];
    nodes.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
    return nodes.map((node) => node.textContent.replace(/\u00a0/g, " "));
  });
  await runCommand("View: Toggle Maximized Panel");
  // Give the editors their room back: the next steps look for code lenses in them.
  await runCommand("View: Hide Panel").catch(() => undefined);
  await closeWidgets();
  return texts;
}

/** Put the cursor at 1-based line:column through "Go to Line/Column". */
async function goTo(line, column) {
  await closeWidgets();
  await page.keyboard.press("Control+G");
  const input = page.locator(".quick-input-widget input").first();
  await input.waitFor({ state: "visible", timeout: TIMEOUT });
  await input.fill(`:${line}:${column}`);
  await page.keyboard.press("Enter");
  await page.waitForFunction(
    (want) => {
      const item = document.querySelector("[id='status.editor.selection']");
      return item && item.textContent.replace(/\u00a0/g, " ").includes(want);
    },
    `Ln ${line}, Col ${column}`,
    { timeout: TIMEOUT },
  );
}

/** Open a workspace file: a click in the Explorer (Quick Open waits for the file search),
 * else Quick Open (Ctrl+P); once more if the first try is lost. */
async function openFile(name) {
  const opened = page.locator(".editor-group-container.active .tab.active", { hasText: name });
  const row = page.locator(".explorer-folders-view .monaco-list-row", { hasText: name }).first();
  if (await row.isVisible().catch(() => false)) {
    try {
      await row.click();
      await opened.first().waitFor({ timeout: 15000 });
      await page.locator(".editor-group-container.active .view-line").first()
        .waitFor({ timeout: TIMEOUT });
      return 0;
    } catch (error) {
      out.retries = [...(out.retries ?? []), `explorer ${name}: ${String(error).split("\n")[0]}`];
    }
  }
  for (let attempt = 1; ; attempt++) {
    try {
      await closeWidgets();
      await page.keyboard.press("Control+P");
      const input = page.locator(".quick-input-widget input").first();
      await input.waitFor({ state: "visible", timeout: TIMEOUT });
      await input.fill(name);
      // The list first shows recently opened files: wait until the filtered
      // result is the focused row, which Enter opens.
      await page
        .locator(".quick-input-list .monaco-list-row.focused", { hasText: name })
        .first()
        .waitFor({ timeout: TIMEOUT });
      await page.keyboard.press("Enter");
      await page
        .locator(".editor-group-container.active .tab.active", { hasText: name })
        .first()
        .waitFor({ timeout: TIMEOUT });
      await page.locator(".editor-group-container.active .view-line").first()
        .waitFor({ timeout: TIMEOUT });
      return attempt;
    } catch (error) {
      out.retries = [...(out.retries ?? []), `open ${name}: ${String(error).split("\n")[0]}`];
      if (attempt >= 2) throw error;
    }
  }
}

const profile = mkdtempSync(join(tmpdir(), "stackmark-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: scenario.chromium ?? "/usr/bin/chromium",
  headless: true,
  // Only 127.0.0.1: no background networking, updates, sync or QUIC.
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
  viewport: { width: 1500, height: 950 },
});
page = context.pages()[0] ?? (await context.newPage());
page.setDefaultTimeout(TIMEOUT);
page.on("console", (message) => {
  if (message.type() === "error") out.console.push(message.text().slice(0, 500));
});

try {
  await step("open", async () => {
    const started = Date.now();
    const marks = {};
    const mark = (name) => { marks[name] = (Date.now() - started) / 1000; };
    await page.goto(`${scenario.url}/?folder=${encodeURIComponent(scenario.folder)}`);
    await page.locator(".monaco-workbench").first().waitFor({ timeout: TIMEOUT * 2 });
    mark("workbench");
    await page.locator(".explorer-folders-view .monaco-list-row", { hasText: scenario.log_name })
      .first().waitFor({ timeout: TIMEOUT }).catch(() => undefined);
    const attempts = await openFile(scenario.log_name);
    mark("file");
    // The server answered: its code lenses are on screen.
    await page.locator(".codelens-decoration").first().waitFor({ timeout: TIMEOUT * 2 });
    mark("code_lens");
    const mode = clean(await page.locator("[id='status.editor.mode']").first().textContent());
    return { attempts, mode, tab: await activeTab(), marks };
  });

  await step("hints", async () => {
    // Inlay hints arrive after the code lenses; wait until each target line has one.
    const wanted = scenario.hints;
    await page.waitForFunction(
      (texts) => {
        const lines = [...document.querySelectorAll(".editor-group-container.active .view-line")]
          .map((line) => line.textContent.replace(/\u00a0/g, " "));
        return texts.every((text) =>
          lines.some((line) => line.includes(text) && line.includes("→")));
      },
      wanted,
      { timeout: TIMEOUT },
    );
    const lines = await visibleLines();
    return { lines: wanted.map((text) => lines.find((line) => line.includes(text))) };
  });

  await step("hover", async () => {
    await goTo(scenario.hover.line, scenario.hover.column);
    await page.keyboard.press("Control+K");
    await page.keyboard.press("Control+I");
    const hover = page.locator(".monaco-hover-content").filter({ hasText: /\S/ }).last();
    await page.waitForFunction(() => {
      const nodes = [...document.querySelectorAll(".monaco-hover-content")];
      return nodes.some((node) => node.offsetParent !== null && /\S/.test(node.textContent)
        && !/^\s*Loading/.test(node.textContent));
    }, null, { timeout: TIMEOUT });
    const text = clean(await hover.innerText());
    const heading = clean(await hover.locator("h3").first().textContent().catch(() => ""));
    const screenshot = await shot("vscode-hover");
    return { text, heading, screenshot };
  });

  await step("definition", async () => {
    await goTo(scenario.definition.line, scenario.definition.column);
    const before = await activeTab();
    const from = await statusSelection(); // the log's position, which goTo waited for
    await page.keyboard.press("F12");
    const pressed = Date.now();
    await page.waitForFunction(
      (label) => {
        const tab = document.querySelector(".editor-group-container.active .tab.active .label-name");
        return tab && tab.textContent !== label;
      },
      before.label,
      { timeout: TIMEOUT },
    );
    // The cursor lands after the editor opened, and the status bar follows on its
    // own schedule (once it still showed the log's position with the source's tab):
    // wait until it shows neither line 1 nor the log's position.
    await page.waitForFunction((logPosition) => {
      const item = document.querySelector("[id='status.editor.selection']");
      const text = item ? item.textContent.replace(/\u00a0/g, " ") : "";
      return text && !/Ln 1, Col 1\b/.test(text) && text !== logPosition;
    }, from, { timeout: TIMEOUT });
    const tab = await activeTab();
    const selection = await statusSelection();
    const jump_seconds = (Date.now() - pressed) / 1000;
    const screenshot = await shot("vscode-definition");
    const reopened = await openFile(scenario.log_name);
    return { tab, selection, screenshot, reopened, jump_seconds };
  });

  await step("problems", async () => {
    await closeWidgets();
    await page.keyboard.press("Control+Shift+M");
    const rows = page.locator(".markers-panel .monaco-list-row");
    await rows.first().waitFor({ timeout: TIMEOUT });
    // Expand and read every marker row (file rows and marker rows).
    const texts = await page.evaluate(() =>
      [...document.querySelectorAll(".markers-panel .monaco-list-row")].map((row) =>
        (row.getAttribute("aria-label") || row.textContent).replace(/\u00a0/g, " ")),
    );
    const screenshot = await shot("vscode-problems");
    await page.keyboard.press("Control+Shift+M"); // close the panel again
    return { rows: texts, screenshot };
  });

  await step("symbolized_view", async () => {
    await openFile(scenario.log_name);
    await goTo(scenario.symbolize.line, 1);
    await runCommand("Stackmark: Show Symbolized Log");
    await page.waitForFunction(
      () => document.querySelectorAll(".editor-group-container").length >= 2,
      null,
      { timeout: TIMEOUT },
    );
    const view = await waitForView();
    const tab = await activeTab();
    const screenshot = await shot("vscode-symbolized");
    return { tab, uri: view.uri, line: view.cursorNumber, cursor: view.cursor, lines: view.lines,
      screenshot };
  });

  await step("edited_view", async () => {
    // The view is open beside the log. A line typed above the backtrace moves it
    // down one, and the command runs at once (a key binding), before the server's
    // own refresh of the open view (half a second after the last edit): the view
    // must still open on the new text, the cursor on the backtrace's first frame,
    // one line further down than before.
    const before = out.symbolized_view?.line;
    if (!before) throw new Error("no symbolized view to compare with");
    await page.keyboard.press("Control+1"); // the log's group
    await goTo(scenario.symbolize.line, 1);
    await page.keyboard.insertText(`${scenario.edit_marker}\n`); // one edit
    await page.keyboard.press(scenario.view_key);
    const view = await waitForView(before + 1);
    await page.keyboard.press("Control+1");
    await runCommand("File: Revert File"); // the log as it is on disk again, not dirty
    await page.waitForFunction(
      () => !document.querySelector(".editor-group-container .tab.dirty"), null, { timeout: TIMEOUT });
    return { uri: view.uri, line: view.cursorNumber, cursor: view.cursor, lines: view.lines };
  });

  await step("code_lens", async () => {
    // Close the view, then click the "Symbolize" lens: the extension turns the
    // server's command into "Show Symbolized Log", which opens the view beside.
    await runCommand("View: Close All Editors");
    await page.waitForFunction(
      () => document.querySelectorAll(".editor-group-container .tab").length === 0,
      null,
      { timeout: TIMEOUT },
    );
    await openFile(scenario.log_name);
    const lens = page.locator(".codelens-decoration a", { hasText: scenario.lens_title }).first();
    await lens.waitFor({ timeout: TIMEOUT });
    await lens.click();
    const view = await waitForView();
    const tab = await activeTab();
    await page.keyboard.press("Control+1"); // the log's group: still showing the log?
    const logTab = await activeTab();
    return { tab, log_tab: logTab, uri: view.uri, line: view.cursorNumber, cursor: view.cursor,
      lines: view.lines };
  });

  await step("detected", async () => {
    // A .txt file (plain text) whose first lines carry markup: the extension
    // switches it to the "Symbolizer markup log" language and the server attaches.
    await runCommand("View: Close All Editors");
    await openFile(scenario.detect_name);
    await page.waitForFunction(() => {
      const item = document.querySelector("[id='status.editor.mode']");
      return item && !/Plain Text/.test(item.textContent);
    }, null, { timeout: TIMEOUT });
    await page.locator(".editor-group-container.active .codelens-decoration").first()
      .waitFor({ timeout: TIMEOUT });
    const mode = clean(await page.locator("[id='status.editor.mode']").first().textContent());
    const lines = await visibleLines();
    return { mode, hinted: lines.filter((line) => line.includes("→")).length };
  });

  await step("python_mismatch", async () => {
    // The user points stackmark.server.pythonPath at a Python without the server:
    // the extension restarts the server, checks that Python, and says what is wrong.
    // Through the Settings editor, as a person would.
    await runCommand("Preferences: Open User Settings");
    await page.locator(".settings-editor").first().waitFor({ timeout: TIMEOUT });
    await page.keyboard.type("stackmark.server.pythonPath");
    // A machine-scoped setting: in code-server (a remote window) it is set for the remote.
    await page.locator(".settings-editor .settings-tabs-widget .action-label", { hasText: "Remote" })
      .first().click();
    const input = page.locator(".settings-editor .setting-item-contents", {
      hasText: "Python Path",
    }).locator("input").first();
    await input.waitFor({ timeout: TIMEOUT });
    await input.fill(scenario.bare_python);
    await input.press("Enter");
    const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "stackmark" });
    await toast.first().waitFor({ timeout: TIMEOUT });
    const text = clean(await toast.first().innerText());
    const buttons = await toast.first().locator(".monaco-button").allInnerTexts();
    await shot("vscode-python-mismatch");
    return { text, buttons: buttons.map(clean) };
  });
} finally {
  save();
  await context.close().catch(() => undefined);
  rmSync(profile, { recursive: true, force: true });
}
