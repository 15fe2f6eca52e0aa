"""Web console benchmark: page load and graph render in a real browser at 1,000 entries.

    python -m bench.bench_console                 # 10 rounds
    python -m bench.bench_console --rounds 3      # a quicker look

One local Ray + Serve on this machine (settings at their defaults but the data folder and
port), one workspace seeded with the browser tests' data (1,000 entries, 1,423 edges of all 8
types, revisions, stale entries), and Debian's headless chromium through its chromedriver.
Each figure is a full page load (a new document, the token already in the tab's
sessionStorage) until the console's `console:view-ready` mark: the view's API answers are
in and drawn, and for the graph the browser has painted it. The baseline, measured in the
same rounds, is the browser loading the service's bare `/healthz` JSON through the same
ingress: one request, nothing to run or draw. The scenarios are interleaved round by round, so
a slow moment of the machine lands on all of them alike.

"longest task" is the longest main-thread task Chrome reports (Long Tasks API) during the
load: what a user would feel as a freeze. The target: no view's longest task above 200 ms.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import httpx

from .common import p50, percentile, save_report, table
from .local_service import start_local_service, stop_local_service

ADMIN_TOKEN = "bench-console-admin-0123456789abcdef"
WORKSPACE = "console-bench"
ENTRIES = 1000
FREEZE_MS = 200.0
TOKEN_KEY = "minisphere.console.token"
# collects the main thread's long tasks from the very start of each document
LONG_TASKS = (
    "window.__longTasks = [];"
    "try { new PerformanceObserver((list) => { for (const e of list.getEntries())"
    " window.__longTasks.push(e.duration); }).observe({type: 'longtask', buffered: true});"
    "} catch (e) {}"
)


def wait_js(driver, script: str, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while True:
        value = driver.execute_script(script)
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {script!r} on {driver.current_url}")
        time.sleep(0.01)


def load(driver, url: str, *, console: bool) -> dict:
    """One full page load of `url`; milliseconds from navigation start."""
    driver.get("about:blank")
    driver.get(url)
    if console:
        ready = wait_js(
            driver,
            "const m = performance.getEntriesByName('console:view-ready');"
            "return m.length ? m[0].startTime : null;",
        )
        graph = driver.execute_script(
            "const r = performance.getEntriesByName('console:graph-render');"
            "const l = performance.getEntriesByName('console:graph-layout');"
            "return [r.length ? r[0].duration : null, l.length ? l[0].duration : null,"
            " document.querySelectorAll('#graph-svg g.node').length];"
        )
    else:
        ready = wait_js(
            driver,
            "const n = performance.getEntriesByType('navigation')[0];"
            "return n && n.loadEventEnd > 0 ? n.loadEventEnd : null;",
        )
        graph = [None, None, 0]
    longest = driver.execute_script("return Math.max(0, ...(window.__longTasks || []))")
    return {
        "ready": ready,
        "render": graph[0],
        "layout": graph[1],
        "nodes": graph[2],
        "longest": longest,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="loads of each page")
    args = parser.parse_args(argv)

    from tests.e2e.console_helpers import browser_available, chrome

    missing = browser_available()
    if missing:
        raise SystemExit(missing)
    settings, url, admin = start_local_service("bench-console", ADMIN_TOKEN)
    tmp = Path(settings.data_dir)
    driver = None
    try:
        seeded, token = seeded_workspace(url, admin, tmp)
        scenarios = page_scenarios(url, seeded)
        driver = chrome()
        samples = load_rounds(driver, url, token, scenarios, args.rounds)
        body = report_body(result_rows(scenarios, samples), driver)
        print(body)
        print(f"saved {save_report('console', body)}")
    finally:
        if driver is not None:
            driver.quit()
        stop_local_service(settings)
    return 0


def seeded_workspace(url: str, admin: dict, tmp: Path):
    """The browser tests' data imported into WORKSPACE, its staleness passed: (what the seed
    holds, a read token for the console)."""
    from tests.e2e.console_helpers import seed_service

    with httpx.Client(base_url=url, timeout=120) as http:
        created = http.post("/v1/workspaces", headers=admin, json={"id": WORKSPACE})
        created.raise_for_status()
        seeded = seed_service({"url": url, "admin": ADMIN_TOKEN}, WORKSPACE, tmp, ENTRIES)
        http.post(
            f"/v1/w/{WORKSPACE}/runStalenessPass", headers=admin, json={"limit": 5000}
        ).raise_for_status()
        read = http.post(
            f"/v1/workspaces/{WORKSPACE}/tokens",
            headers=admin,
            json={"scope": "read", "label": "bench"},
        )
        read.raise_for_status()
        return seeded, read.json()["token"]


def page_scenarios(url: str, seeded) -> list[tuple[str, str, bool]]:
    """(name, page, is a console view) of each page loaded; the baseline first."""
    hub = seeded.hubs["atlas"]
    base = f"{url}/ui/#/w/{WORKSPACE}"
    return [
        ("baseline: bare /healthz page, same ingress", f"{url}/healthz", False),
        ("sign-in page (the console's static files only)", f"{url}/ui/#/signin", False),
        (f"overview @ {ENTRIES} entries", f"{base}/overview", True),
        (
            f"search, 50 results with breakdowns @ {ENTRIES}",
            f"{base}/search?q=SQLite%20file%20per%20workspace&topK=50",
            True,
        ),
        ("needs-revalidation list", f"{base}/stale", True),
        ("entry page (3 revisions, edges)", f"{base}/entry/{seeded.revised}", True),
        ("graph, hub 1 hop (~50 nodes)", f"{base}/graph?seeds={hub}&hops=1", True),
        ("graph, hub 2 hops", f"{base}/graph?seeds={hub}&hops=2", True),
    ]


def load_rounds(driver, url: str, token: str, scenarios, rounds: int) -> dict[str, list[dict]]:
    """Sign the tab in, load every page once to warm up, then `rounds` rounds of them all."""
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": LONG_TASKS})
    driver.get(f"{url}/ui/#/signin")
    driver.execute_script("sessionStorage.setItem(arguments[0], arguments[1])", TOKEN_KEY, token)
    for _name, page, console in scenarios:  # warm: caches, resident workspace
        load(driver, page, console=console)
    samples: dict[str, list[dict]] = {name: [] for name, _p, _c in scenarios}
    for _round in range(rounds):
        for name, page, console in scenarios:
            samples[name].append(load(driver, page, console=console))
    return samples


def result_rows(scenarios, samples: dict[str, list[dict]]) -> list[list]:
    base_p50 = p50([s["ready"] for s in samples[scenarios[0][0]]])
    rows = []
    for name, _page, _console in scenarios:
        ready = [s["ready"] for s in samples[name]]
        render = [s["render"] for s in samples[name] if s["render"] is not None]
        layout = [s["layout"] for s in samples[name] if s["layout"] is not None]
        nodes = samples[name][-1]["nodes"]
        rows.append(
            [
                name + (f" [{nodes} nodes]" if nodes else ""),
                len(ready),
                p50(ready),
                percentile(ready, 90),
                f"{p50(ready) / base_p50:.1f}x",
                f"{p50(render):.1f} (layout {p50(layout):.1f})" if render else "-",
                max(s["longest"] for s in samples[name]),
            ]
        )
    return rows


def report_body(rows: list[list], driver) -> str:
    worst = max(row[-1] for row in rows)
    body = table(
        [
            "page (full load)",
            "n",
            "ready p50 ms",
            "ready p90 ms",
            "p50 / baseline",
            "graph render p50 ms",
            "longest task ms",
        ],
        rows,
    )
    verdict = "met" if worst <= FREEZE_MS else "missed"
    return body + (
        f'\n\n"ready": navigation start to the view drawn (`console:view-ready`); '
        "graph render: from the graphView answer to the painted SVG, our layout "
        f"included. Freeze target: no main-thread task above {FREEZE_MS:.0f} ms: "
        f"longest {worst:.0f} ms, {verdict}. Headless chromium "
        f"{driver.capabilities.get('browserVersion', '?')}, 1440x960."
    )


if __name__ == "__main__":
    raise SystemExit(main())
