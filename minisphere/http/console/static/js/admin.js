// The admin view: every workspace (label, created, the contract it was born with, entries,
// resident or hibernated, last snapshot and its age, maintenance), recent maintenance runs,
// and a workspace's snapshot versions with a restore action, and a restore to any second the
// replica holds (both confirmed first).
// Details come from GET /v1/workspaces/{id}, which never wakes a hibernated workspace; the
// entry count of a hibernated one is the count in its newest snapshot.

import {get, isAbort, request, call} from "./api.js";
import {fmtAge, fmtTime, h, renderInSlices, replace} from "./dom.js";
import {confirmDialog, errorBox, loading, notice, section} from "./ui.js";

const DETAIL_LANES = 4;
const PAGE = 50;

function versionTime(version) {   // 20261130T120000000Z-000003 -> epoch ms
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z/.exec(version || "");
  return m ? Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6], +m[7]) : null;
}

function bytes(n) {
  if (n === null || n === undefined) return "—";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function bornWith(record, active) {
  const born = (record.contracts || [])[0];
  if (!born) return "—";
  const current = active.some((c) => c.sha256 === born.sha256);
  return h("span", {title: born.reference, class: current ? "" : "warn"},
           `${born.name}@${born.version}`, current ? "" : " (not the active pin)");
}

function cell(cls, ...children) {
  return h("td", {class: cls}, ...children);
}

async function loadDetails(row, record, signal) {
  const [detail, runs] = await Promise.all([
    get(`/v1/workspaces/${encodeURIComponent(record.id)}`, signal),
    get(`/v1/maintenance/runs?workspace=${encodeURIComponent(record.id)}&limit=1`, signal),
  ]);
  const durability = detail.durability || {};
  const resident = Boolean(detail.resident);
  replace(row.querySelector(".resident"),
          h("span", {class: `badge ${resident ? "resident" : "hibernated"}`}, resident ? "resident" : detail.state));
  const status = durability.snapshots || {};
  const lastAt = status.lastSnapshotAt ? status.lastSnapshotAt * 1000
                                       : versionTime(durability.lastSnapshotVersion || status.lastVersion);
  replace(row.querySelector(".snapshot"), lastAt
    ? h("span", {title: durability.lastSnapshotVersion || status.lastVersion || ""}, fmtAge(lastAt),
        status.pendingWrites ? h("small", null, ` · ${status.pendingWrites} writes since`) : null,
        status.consecutiveFailures ? h("small", {class: "warn"}, ` · ${status.consecutiveFailures} failures`) : null)
    : h("span", {class: "hint"}, "none yet"));
  const last = runs.items[0];
  const cron = ((record.blueprint || {}).scheduledTasks || {}).cron;
  replace(row.querySelector(".maintenance"),
    h("span", null, cron ? h("code", null, cron) : "—"),
    last ? h("small", null, ` · last ${last.outcome || "running"} ${fmtAge(last.startedAt)}`,
             last.nextDueAt ? `; next entry due ${fmtAge(last.nextDueAt)}` : "") : h("small", null, " · never ran"));
  let count;
  let exact = true;
  if (resident) {
    count = (await call(record.id, "getCount", {}, signal)).count;
  } else {
    const snaps = await get(`/v1/workspaces/${encodeURIComponent(record.id)}/snapshots`, signal);
    const newest = snaps.items[snaps.items.length - 1];
    count = newest ? newest.entryCount : null;
    exact = false;
  }
  replace(row.querySelector(".entries"), count === null || count === undefined ? "—"
    : h("span", {title: exact ? "live count" : "count in the newest snapshot"}, `${exact ? "" : "≈"}${count}`));
}

function snapshotsPanel(panel, record, signal) {
  replace(panel, section(`Snapshots of ${record.id}`, loading()));
  get(`/v1/workspaces/${encodeURIComponent(record.id)}/snapshots`, signal).then((snaps) => {
    const items = [...snaps.items].reverse();        // newest first
    const body = items.length ? h("table", {class: "snapshots", id: "snapshot-table"},
      h("thead", null, h("tr", null, ["version", "taken", "reason", "entries", "size", ""].map((c) => h("th", null, c)))),
      h("tbody", null, items.map((snap, index) => h("tr", {"data-version": snap.version},
        cell("", h("code", null, snap.version), snap.restoredFrom ? h("small", null, ` (restores ${snap.restoredFrom})`) : null),
        cell("", snap.createdAtMs ? `${fmtTime(snap.createdAtMs)} (${fmtAge(snap.createdAtMs)})` : (snap.createdAt || "—")),
        cell("", snap.reason || "—"), cell("", snap.entryCount ?? "—"), cell("", bytes(snap.compressedBytes)),
        cell("", h("button", {type: "button", class: "small danger restore", "data-version": snap.version,
                              onclick: () => restore(panel, record, snap, index === 0, signal)}, "Restore…"))))))
      : h("p", {class: "hint"}, "No snapshots yet.");
    replace(panel, section(`Snapshots of ${record.id} (${items.length})`,
      momentForm(panel, record, signal),
      h("p", {class: "hint"}, "A restore verifies the version, keeps the current file aside and publishes the restored state as the newest version."),
      body));
  }).catch((error) => { if (!isAbort(error)) replace(panel, section(`Snapshots of ${record.id}`, errorBox(error))); });
}

function utcSecond(date) {   // 2026-12-02T09:41:07 (what a datetime-local input with step=1 takes)
  return date.toISOString().slice(0, 19);
}

// Restore to any second the replica still holds (continuous replication), next to the named
// versions above; the replication line says how far the replica reaches.
function momentForm(panel, record, signal) {
  const status = h("p", {class: "hint", id: "replication-status"}, "Continuous replication: …");
  get(`/v1/workspaces/${encodeURIComponent(record.id)}`, signal).then((detail) => {
    const replication = (detail.durability || {}).replication;
    replace(status, replication
      ? `Continuous replication: ${replication.mode}` +
        (replication.lastSyncAt ? ` · last shipped ${fmtAge(Date.parse(replication.lastSyncAt))}` : "") +
        (replication.pendingTransactions ? ` · ${replication.pendingTransactions} transactions not yet on the replica` : "")
      : "Continuous replication: off, or not resident now (its replica is current as of its hibernation).");
  }).catch(() => {});
  const input = h("input", {type: "datetime-local", step: "1", id: "moment-input", value: utcSecond(new Date()),
                            "aria-label": "moment to restore, UTC"});
  const button = h("button", {type: "button", class: "small danger", id: "moment-restore",
                              onclick: () => restoreToMoment(panel, record, input.value, signal)}, "Restore to this moment…");
  return h("div", {class: "moment"}, h("label", null, "Restore to a moment (UTC) ", input), " ", button, status);
}

async function restoreToMoment(panel, record, value, signal) {
  if (!value) return;
  const moment = `${value.length === 16 ? `${value}:00` : value.slice(0, 19)}Z`;
  const ok = await confirmDialog({
    title: `Restore ${record.id} to ${moment}?`, confirmLabel: "Restore",
    message: `The workspace goes back to exactly what it held at ${moment}, from its replica. ` +
             "Everything written after that second is replaced; the current file is kept aside on the server.",
    details: ["needs continuous replication (sync or async)", "a moment before the replica's history is refused"]});
  if (!ok) return;
  try {
    const done = await request("POST", `/v1/workspaces/${encodeURIComponent(record.id)}/restore-to-moment`,
                               {body: {timestamp: moment}});
    notice(`Restored ${record.id} to the moment ${done.moment} (position ${done.position}).`);
    snapshotsPanel(panel, record, signal);
  } catch (error) {
    if (error.status !== 401) notice(`Restore failed: ${error.code}: ${error.message}`, "error");
  }
}

async function restore(panel, record, snap, newest, signal) {
  const ok = await confirmDialog({
    title: `Restore ${record.id}?`, confirmLabel: "Restore",
    message: `The workspace goes back to version ${snap.version}` +
             `${snap.createdAtMs ? ` (${fmtTime(snap.createdAtMs)})` : ""}. ` +
             "Everything written after it is replaced; the current file is kept aside on the server.",
    details: [`${snap.entryCount ?? "?"} entries in that version`, newest ? "this is the newest version" : "this is an older version"]});
  if (!ok) return;
  try {
    const done = await request("POST", `/v1/workspaces/${encodeURIComponent(record.id)}/restore`,
                               {body: {version: snap.version}});
    notice(`Restored ${record.id} to ${done.version} in ${Math.round(done.tookMs)} ms (${done.entryCount ?? "?"} entries).`);
    snapshotsPanel(panel, record, signal);
  } catch (error) {
    if (error.status !== 401) notice(`Restore failed: ${error.code}: ${error.message}`, "error");
  }
}

function runsTable(runs) {
  if (!runs.length) return h("p", {class: "hint"}, "No maintenance runs yet.");
  return h("table", {class: "runs", id: "runs-table"},
    h("thead", null, h("tr", null, ["workspace", "trigger", "started", "took", "outcome", "scanned", "marked", "cleared", "remaining", "error"]
                                   .map((c) => h("th", null, c)))),
    h("tbody", null, runs.map((run) => h("tr", {class: `run outcome-${run.outcome || "running"}`},
      cell("", h("a", {href: `#/w/${encodeURIComponent(run.workspaceId)}/overview`}, run.workspaceId)),
      cell("", run.trigger), cell("", `${fmtTime(run.startedAt)} (${fmtAge(run.startedAt)})`),
      cell("", run.finishedAt ? `${run.finishedAt - run.startedAt} ms` : "…"),
      cell("", h("span", {class: `badge outcome-${run.outcome || "running"}`}, run.outcome || "running")),
      cell("num", run.scanned), cell("num", run.marked), cell("num", run.cleared), cell("num", run.remaining ?? "—"),
      cell("", run.error || "")))));
}

export async function adminView(root, ctx) {
  const [list, runs, contracts] = await Promise.all([
    get("/v1/workspaces?limit=1000", ctx.signal),
    get("/v1/maintenance/runs?limit=50", ctx.signal),
    get("/v1/contracts", ctx.signal),
  ]);
  const active = contracts.contracts.filter((c) => c.active);
  const panel = h("div", {id: "snapshot-panel"});
  const body = h("tbody", null);
  const queue = [];
  let lanes = 0;
  const pump = () => {
    while (lanes < DETAIL_LANES && queue.length && !ctx.signal.aborted) {
      const [row, record] = queue.shift();
      lanes++;
      loadDetails(row, record, ctx.signal).catch((error) => {
        if (isAbort(error) || error.status === 401) return;
        replace(row.querySelector(".resident"), h("span", {class: "error", title: error.message}, error.code || "error"));
      }).finally(() => { lanes--; pump(); });
    }
  };
  const filter = h("input", {type: "search", id: "workspace-filter", placeholder: "filter by id or label",
                             "aria-label": "filter workspaces"});
  const table = h("table", {class: "workspaces", id: "workspace-table"},
    h("thead", null, h("tr", null, ["workspace", "label", "created", "born with", "entries", "residency",
                                    "last snapshot", "maintenance", ""].map((c) => h("th", null, c)))), body);
  root.append(section(`Workspaces (${list.items.length}${list.items.length >= 1000 ? "+" : ""})`,
                      filter, h("div", {class: "scroll"}, table)), panel,
              section("Recent maintenance runs", h("div", {class: "scroll"}, runsTable(runs.items))));
  const render = (record) => {
    const row = h("tr", {class: "workspace-row", "data-id": record.id},
      cell("", h("a", {href: `#/w/${encodeURIComponent(record.id)}/overview`, class: "ws-link"}, record.id)),
      cell("", record.label || ""), cell("", fmtTime(record.createdAt)), cell("", bornWith(record, active)),
      cell("entries num", "…"), cell("resident", "…"), cell("snapshot", "…"), cell("maintenance", "…"),
      cell("", h("button", {type: "button", class: "small", onclick: () => {
        snapshotsPanel(panel, record, ctx.signal);
        panel.scrollIntoView({block: "nearest"});
      }}, "Snapshots")));
    queue.push([row, record]);
    pump();
    return row;
  };
  let items = list.items;
  let more = null;
  const draw = () => {
    replace(body);
    if (more) more.remove();
    more = renderInSlices(body, items, render, {first: PAGE, step: PAGE, after: table.parentElement});
  };
  filter.addEventListener("input", () => {
    const text = filter.value.trim().toLowerCase();
    queue.length = 0;
    items = text ? list.items.filter((r) => r.id.includes(text) || (r.label || "").toLowerCase().includes(text)) : list.items;
    draw();
  });
  draw();
  if (!list.items.length) body.appendChild(h("tr", null, h("td", {colspan: "9", class: "hint"}, "No workspaces yet.")));
}
