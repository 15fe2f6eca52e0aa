"""The web console in a real browser: Debian's headless chromium, driven through Debian's
chromedriver, against the session's Serve cluster over real HTTP, with a seeded workspace of
1,000 entries (all 8 edge types, revisions, stale entries, a markup probe).

Every test saves a PNG screenshot; the folder is printed at the end of the module
(`MINISPHERE_CONSOLE_SCREENSHOTS` chooses it, else a pytest temporary folder).
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from pathlib import Path

import pytest

from tests.e2e.console_helpers import XSS_PROBE, browser_available, chrome, seed_service

pytestmark = pytest.mark.skipif(browser_available() is not None, reason=str(browser_available()))

WAIT_S = 20
SEARCH_QUERY = "SQLite file per workspace"


# ---- fixtures -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shots(request, tmp_path_factory):
    chosen = os.environ.get("MINISPHERE_CONSOLE_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("console-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    yield folder
    # written past pytest's output capture, so the path shows in every run
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(f"\nconsole screenshots: {folder}", flush=True)


@pytest.fixture(scope="module")
def console(service, http, admin_headers, tmp_path_factory):
    """The seeded workspace and its tokens: write (from creation), read (issued by the admin)."""
    workspace = f"console-{uuid.uuid4().hex[:8]}"
    created = http.post(
        "/v1/workspaces", json={"id": workspace, "label": "console demo"}, headers=admin_headers
    )
    assert created.status_code == 201, created.text
    seeded = seed_service(service, workspace, tmp_path_factory.mktemp("console-seed"))
    read = http.post(
        f"/v1/workspaces/{workspace}/tokens",
        headers=admin_headers,
        json={"scope": "read", "label": "dashboard"},
    )
    assert read.status_code == 201, read.text
    # a maintenance run and a snapshot, so the admin view has something in each table
    passed = http.post(
        f"/v1/w/{workspace}/runStalenessPass", json={"limit": 5000}, headers=admin_headers
    )
    assert passed.status_code == 200, passed.text
    snap = http.post(f"/v1/workspaces/{workspace}/snapshot", headers=admin_headers)
    assert snap.status_code in (200, 201), snap.text
    yield {
        "workspace": workspace,
        "seeded": seeded,
        "url": service["url"],
        "admin": service["admin"],
        "write": created.json()["token"],
        "read": read.json()["token"],
        "read_id": read.json()["tokenId"],
    }
    http.delete(f"/v1/workspaces/{workspace}", headers=admin_headers)


@pytest.fixture(scope="module")
def driver():
    browser = chrome()
    yield browser
    browser.quit()


@pytest.fixture
def page(driver, console, shots, request):
    """The browser on a blank console tab (no token); a screenshot is saved after the test."""
    driver.get(console["url"] + "/ui/")
    driver.execute_script("sessionStorage.clear(); window.__pwned = undefined;")
    driver.get("about:blank")
    driver.get(console["url"] + "/ui/#/signin")
    wait_for(driver, "#signin-token")
    yield driver
    driver.save_screenshot(str(shots / f"{request.node.name}.png"))
    errors = [
        entry["message"]
        for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE" and "status of 40" not in entry["message"]
    ]
    assert not errors, f"the page logged errors: {errors}"


@pytest.fixture
def screenshot(driver, shots, request):
    """Save the page as it is now, named after the test and `name`."""

    def save(name: str) -> Path:
        path = shots / f"{request.node.name}-{name}.png"
        driver.save_screenshot(str(path))
        return path

    return save


# ---- helpers -------------------------------------------------------------------------------
def wait_for(driver, css, *, count=1, timeout=WAIT_S):
    """The elements matching `css` once at least `count` of them are there."""
    from selenium.webdriver.common.by import By

    deadline = time.monotonic() + timeout
    while True:
        found = driver.find_elements(By.CSS_SELECTOR, css)
        if len(found) >= count:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{css!r} did not appear within {timeout} s (page: {driver.current_url})"
            )
        time.sleep(0.05)


def wait_until(driver, predicate, what, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what} did not happen within {timeout} s (page: {driver.current_url})"
            )
        time.sleep(0.05)


def view_ready(driver):
    """Wait until the routed view has finished loading (its aria-busy turns false)."""
    wait_for(driver, '.view[aria-busy="false"]')


def sign_in(driver, token, expect="#who"):
    from selenium.webdriver.common.keys import Keys

    box = wait_for(driver, "#signin-token")[0]
    box.send_keys(token, Keys.ENTER)
    wait_for(driver, expect)


def leave(driver):
    """Mark the view on screen as left, so `next_view` waits for the one a click or a hash
    change brings (a hash change is no page load: the old view lingers for a moment)."""
    driver.execute_script(
        "document.querySelectorAll('.view').forEach((v) => v.setAttribute('data-left', '1'))"
    )


def next_view(driver):
    wait_for(driver, '.view[aria-busy="false"]:not([data-left])')


@contextlib.contextmanager
def reloaded(driver):
    """Run the block's clicks, then wait until the view they bring (a new route, or the same
    one loaded again) has finished loading."""
    leave(driver)
    yield
    next_view(driver)


def go(driver, console, hash_route):
    leave(driver)
    driver.get(f"{console['url']}/ui/#{hash_route}")
    next_view(driver)


def ws_route(console, rest):
    return f"/w/{console['workspace']}/{rest}"


def text_of(driver, css):
    return wait_for(driver, css)[0].text


def browser_fetch(driver, path, body):
    """POST from inside the page with the signed-in token, as the console itself would."""
    return driver.execute_async_script(
        """
        const [path, body, done] = arguments;
        const token = sessionStorage.getItem("minisphere.console.token");
        fetch(path, {method: "POST", body: JSON.stringify(body), headers: {
            "Authorization": "Bearer " + token, "Content-Type": "application/json"}})
          .then(async (r) => done({status: r.status, body: await r.json()}))
          .catch((e) => done({status: 0, body: String(e)}));""",
        path,
        body,
    )


# ---- tests --------------------------------------------------------------------------------
def test_admin_sees_every_workspace_with_residency_snapshots_and_runs(page, console, screenshot):
    sign_in(page, console["admin"], expect="#workspace-table")
    assert text_of(page, "#who") == "admin"
    row = wait_for(page, f'.workspace-row[data-id="{console["workspace"]}"]')[0]
    wait_until(
        page,
        lambda: row.find_element("css selector", ".resident").text != "…",
        "the residency column",
    )
    assert row.find_element("css selector", ".resident").text in ("resident", "hibernated")
    wait_until(
        page,
        lambda: (
            row.find_element("css selector", ".entries").text.strip("≈")
            == str(console["seeded"].entries)
        ),
        "the entry count",
    )
    assert "console demo" in row.text and "MINI_SPHERE" in row.text.upper()
    assert "never ran" not in row.find_element("css selector", ".maintenance").text
    runs = wait_for(page, "#runs-table tr.run")
    assert any(console["workspace"] in run.text for run in runs)
    # the snapshots panel and its restore confirmation (cancelled: nothing is restored)
    row.find_element("xpath", ".//button[text()='Snapshots']").click()
    restore = wait_for(page, "#snapshot-table button.restore")[0]
    screenshot("workspaces")
    restore.click()
    dialog = wait_for(page, "dialog#confirm-dialog[open]")[0]
    assert "Restore" in dialog.text and console["workspace"] in dialog.text
    page.find_element("css selector", "#confirm-cancel").click()
    wait_until(
        page,
        lambda: not page.find_elements("css selector", "dialog#confirm-dialog"),
        "the dialog closing",
    )
    # the admin token also opens the workspace itself
    leave(page)
    row.find_element("css selector", "a.ws-link").click()
    next_view(page)
    assert text_of(page, "#stat-count") == str(console["seeded"].entries)


def test_admin_restores_a_snapshot_from_the_console_and_later_writes_are_gone(
    page, console, http, admin_headers, new_workspace
):
    ws, h = new_workspace()
    kept = [
        http.post(f"/v1/w/{ws}/capture", headers=h, json={"content": f"kept {n}"}).json()["id"]
        for n in range(2)
    ]
    snap = http.post(f"/v1/workspaces/{ws}/snapshot", headers=admin_headers)
    assert snap.status_code in (200, 201), snap.text
    later = http.post(f"/v1/w/{ws}/capture", headers=h, json={"content": "after the snapshot"})
    assert http.post(f"/v1/w/{ws}/getCount", headers=h, json={}).json()["count"] == 3
    sign_in(page, console["admin"], expect="#workspace-table")
    row = wait_for(page, f'.workspace-row[data-id="{ws}"]')[0]
    row.find_element("xpath", ".//button[text()='Snapshots']").click()
    wait_for(page, "#snapshot-table button.restore")[0].click()
    wait_for(page, "dialog#confirm-dialog[open]")
    page.find_element("css selector", "#confirm-ok").click()
    wait_until(
        page,
        lambda: "Restored" in page.find_element("css selector", "#toast").text,
        "the restore notice",
    )
    assert http.post(f"/v1/w/{ws}/getCount", headers=h, json={}).json()["count"] == 2
    gone = http.post(f"/v1/w/{ws}/getEntry", headers=h, json={"id": later.json()["id"]})
    assert gone.status_code == 404, gone.text
    for entry_id in kept:
        assert (
            http.post(f"/v1/w/{ws}/getEntry", headers=h, json={"id": entry_id}).status_code == 200
        )


def test_admin_restores_a_moment_from_the_console_and_writes_after_it_are_gone(
    page, console, http, admin_headers, new_workspace, screenshot
):
    from tests.e2e.test_replication import MOMENT_GAP_S, contents, moment_now, shipped

    ws, h = new_workspace()
    http.post(f"/v1/w/{ws}/capture", headers=h, json={"content": "kept: before the moment"})
    shipped(http, admin_headers, ws)
    time.sleep(MOMENT_GAP_S)
    moment = moment_now()
    time.sleep(MOMENT_GAP_S)
    http.post(f"/v1/w/{ws}/capture", headers=h, json={"content": "undone: after the moment"})
    sign_in(page, console["admin"], expect="#workspace-table")
    row = wait_for(page, f'.workspace-row[data-id="{ws}"]')[0]
    row.find_element("xpath", ".//button[text()='Snapshots']").click()
    box = wait_for(page, "#moment-input")[0]
    wait_until(
        page, lambda: "async" in text_of(page, "#replication-status"), "the replication line"
    )
    # a datetime-local input takes the moment without its zone (the form says UTC)
    page.execute_script("arguments[0].value = arguments[1]", box, moment.rstrip("Z"))
    page.find_element("css selector", "#moment-restore").click()
    assert moment in text_of(page, "dialog#confirm-dialog[open]")
    page.find_element("css selector", "#confirm-ok").click()
    wait_until(
        page,
        lambda: "Restored" in page.find_element("css selector", "#toast").text,
        "the restore notice",
    )
    screenshot("restored-to-a-moment")
    assert contents(http, ws, h) == ["kept: before the moment"]


def test_search_explains_each_score_with_bars_and_the_query_used(page, console, screenshot):
    from selenium.webdriver.common.keys import Keys

    sign_in(page, console["write"])
    assert "write" in text_of(page, "#who")
    view_ready(page)
    # keyboard only: "/" jumps to the search box, Enter recalls
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(page).send_keys("/").perform()
    box = wait_for(page, "#search-query")[0]
    wait_until(page, lambda: page.switch_to.active_element == box, "the focus on the query")
    box.send_keys(SEARCH_QUERY + " last week", Keys.ENTER)
    results = wait_for(page, "#results .result", count=3)
    first = results[0]
    bars = first.find_elements("css selector", ".breakdown .bar")
    widths = {
        bar.find_element("xpath", "../..").get_attribute("data-factor"): bar.size["width"]
        for bar in bars
    }
    # every factor of the answer's rerank breakdown is drawn, the newest ones too
    assert widths["fused"] > 0 and {"decay", "importance", "subject", "brevity", "rerank"} <= set(
        widths
    )
    assert any(widths.get(arm, 0) > 0 for arm in ("keyword", "graph", "vector"))
    screenshot("search")
    used = text_of(page, "#query-used")
    assert "last week" in used and SEARCH_QUERY in used  # the time phrase came out
    assert "time bounds" in used and "→" in used
    assert "arm weighting" not in used  # no vector arm ran: nothing was weighed
    # arrow keys walk the results and Enter opens one (the box is a new one: the search
    # is a route of its own, drawn afresh)
    wait_for(page, "#search-query")[0].send_keys(Keys.ARROW_DOWN)
    wait_until(page, lambda: page.switch_to.active_element == results[0], "focus on result 1")
    page.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    wait_until(page, lambda: page.switch_to.active_element == results[1], "focus on result 2")
    opened = results[1].get_attribute("data-id")
    leave(page)
    page.switch_to.active_element.send_keys(Keys.ENTER)
    next_view(page)
    assert text_of(page, "#entry-id") == opened


def test_entry_page_shows_its_revisions_as_a_diff_and_its_edges(page, console):
    seeded = console["seeded"]
    sign_in(page, console["read"])
    go(page, console, ws_route(console, f"entry/{seeded.revised}"))
    assert "easy to snapshot" in text_of(page, "#entry-content")
    revisions = wait_for(page, "#revisions li.revision", count=3)
    reasons = [r.get_attribute("data-reason") for r in revisions]
    assert reasons.count("append") == 2 and "update" in reasons, reasons
    assert page.find_elements("css selector", "#revisions ins")
    assert page.find_elements("css selector", "#revisions del")  # the update removed text
    assert "design-review-2026-07" in text_of(page, "#entry")  # evidence of the claim
    edges = {
        (row.get_attribute("data-type"), row.get_attribute("data-direction")): row
        for row in wait_for(page, "#edges tr.edge-row", count=2)
    }
    assert ("relates_to", "both") in edges and ("part_of_project", "out") in edges
    leave(page)
    edges[("relates_to", "both")].find_element("css selector", "a.entry-link").click()
    next_view(page)
    assert text_of(page, "#entry-id") == seeded.neighbour


def test_graph_is_coloured_by_type_and_a_click_opens_the_neighbour(page, console, screenshot):
    seeded = console["seeded"]
    sign_in(page, console["read"])
    # the hub of a project: 60 entries one hop away, well past 50 nodes
    go(page, console, ws_route(console, f"graph?seeds={seeded.hubs['atlas']}&hops=1"))
    # (graphView takes at most 50 edges of one node, so about 50 nodes)
    wait_for(page, "#graph-svg g.node", count=45)
    screenshot("graph")
    colours = {}
    for edge in page.find_elements("css selector", "#graph-svg path.edge"):
        colours.setdefault(edge.get_attribute("data-type"), edge.value_of_css_property("stroke"))
    assert len(colours) >= 2 and len(set(colours.values())) == len(colours), colours
    viewport = page.find_element("css selector", "#graph-svg g.viewport")
    page.find_element("css selector", "#zoom-in").click()
    assert "scale(1.250)" in viewport.get_attribute("transform")
    page.find_element("css selector", "#zoom-fit").click()
    # hops 1 to 3 from the revised entry, then click through to its relates_to neighbour
    go(page, console, ws_route(console, f"graph?seeds={seeded.revised}&hops=2"))
    two_hops = len(wait_for(page, "#graph-svg g.node", count=3))
    go(page, console, ws_route(console, f"graph?seeds={seeded.revised}&hops=1"))
    one_hop = wait_for(page, "#graph-svg g.node", count=3)
    assert two_hops > len(one_hop)
    hops = page.find_element("css selector", "#graph-hops")
    assert [o.get_attribute("value") for o in hops.find_elements("tag name", "option")] == [
        "1",
        "2",
        "3",
    ]
    neighbour = page.find_element(
        "css selector", f'#graph-svg g.node[data-id="{seeded.neighbour}"]'
    )
    leave(page)
    neighbour.find_element("css selector", "circle").click()
    next_view(page)
    assert text_of(page, "#entry-id") == seeded.neighbour


def test_overview_and_revalidation_list_show_the_seeded_workspace(page, console):
    sign_in(page, console["read"])
    view_ready(page)
    assert text_of(page, "#stat-count") == str(console["seeded"].entries)
    assert page.find_elements("css selector", "#tag-vocabulary li")
    assert len(page.find_elements("css selector", "#recent li.entry-row")) == 20
    assert int(text_of(page, "#stat-stale")) > 0
    leave(page)
    page.find_element("css selector", 'a[data-tab="stale"]').click()
    next_view(page)
    items = wait_for(page, "#stale-list li.stale-item")
    assert "is this still true?" in items[0].text


def test_write_token_captures_appends_sets_status_links_and_forgets(page, console):
    seeded = console["seeded"]
    sign_in(page, console["write"])
    view_ready(page)  # the overview has loaded: the click below replaces it
    with reloaded(page):
        page.find_element("css selector", 'a[data-tab="capture"]').click()
    marker = f"console capture {uuid.uuid4().hex[:6]}"
    page.find_element("css selector", "#capture-content").send_keys(
        f"The {marker} went through the browser."
    )
    page.find_element("css selector", "#capture-tags").send_keys("console, probe")
    page.find_element("css selector", "#capture-form button[type=submit]").click()
    link = wait_for(page, "#capture-outcome a.entry-link")[0]
    with reloaded(page):
        link.click()
    captured = text_of(page, "#entry-id")
    # Each write below reloads the entry view: the step waits for the new view to finish
    # loading before it reads or clicks anything, so no step acts on the view being replaced
    # (an edge row gone while the view reloads is not yet the view without the edge).
    with reloaded(page):
        page.find_element("css selector", "#append-text").send_keys("Added from the console.")
        page.find_element("css selector", "#append-form button[type=submit]").click()
    assert "Added from the console." in text_of(page, "#entry-content")
    assert wait_for(page, "#revisions li.revision")
    from selenium.webdriver.support.select import Select

    with reloaded(page):
        Select(page.find_element("css selector", "#status")).select_by_value("draft")
        page.find_element("css selector", "#status-form button[type=submit]").click()
    assert "draft" in text_of(page, "#entry .facts")
    with reloaded(page):
        page.find_element("css selector", "#link-dst").send_keys(seeded.neighbour)
        page.find_element("css selector", "#link-form button[type=submit]").click()
    unlink = wait_for(page, '#edges tr.edge-row[data-type="relates_to"] button.unlink')[0]
    with reloaded(page):
        unlink.click()
        wait_for(page, "dialog#confirm-dialog[open]")
        page.find_element("css selector", "#confirm-ok").click()
    assert not page.find_elements("css selector", "#edges tr.edge-row")
    # forget (confirmed): the entry is gone
    with reloaded(page):
        wait_for(page, "#forget")[0].click()
        wait_for(page, "dialog#confirm-dialog[open]")
        page.find_element("css selector", "#confirm-ok").click()
    assert "/overview" in page.current_url
    gone = browser_fetch(page, f"/v1/w/{console['workspace']}/getEntry", {"id": captured})
    assert gone["status"] == 404, gone


def test_read_token_shows_no_write_controls_and_the_api_refuses_its_writes(page, console):
    seeded = console["seeded"]
    sign_in(page, console["read"])
    assert "read" in text_of(page, "#who")
    view_ready(page)
    assert not page.find_elements("css selector", 'a[data-tab="capture"]')
    go(page, console, ws_route(console, f"entry/{seeded.revised}"))
    for control in ("#write-controls", "#append-form", "#forget", "button.unlink"):
        assert not page.find_elements("css selector", control), control
    # an absent control leaves nothing behind (not even a stray "null" text node)
    assert "null" not in page.find_element("id", "main").text.split()
    page.get(f"{console['url']}/ui/#{ws_route(console, 'capture')}")
    wait_until(
        page,
        lambda: "No such page." in page.find_element("id", "main").text,
        "the capture page being refused",
    )
    refused = browser_fetch(
        page,
        f"/v1/w/{console['workspace']}/append",
        {"id": seeded.revised, "addition": "from a read token"},
    )
    assert refused["status"] == 403, refused
    assert refused["body"]["error"]["code"] == "insufficient_scope"


def test_revoked_token_is_sent_back_to_sign_in(page, console, http, admin_headers):
    issued = http.post(
        f"/v1/workspaces/{console['workspace']}/tokens",
        headers=admin_headers,
        json={"scope": "read", "label": "soon revoked"},
    ).json()
    sign_in(page, issued["token"])
    view_ready(page)
    assert "soon revoked" in text_of(page, "#who")
    revoked = http.delete(
        f"/v1/workspaces/{console['workspace']}/tokens/{issued['tokenId']}", headers=admin_headers
    )
    assert revoked.status_code == 200, revoked.text
    page.find_element("css selector", 'a[data-tab="search"]').click()
    message = wait_for(page, "#signin-message.error")[0]
    assert "revoked" in message.text
    assert page.execute_script("return sessionStorage.length") == 0
    assert "#/signin" in page.current_url


def test_markup_in_memory_content_is_shown_as_text_and_never_runs(page, console, screenshot):
    seeded = console["seeded"]
    sign_in(page, console["read"])
    go(page, console, ws_route(console, f"entry/{seeded.xss}"))
    assert text_of(page, "#entry-content") == XSS_PROBE
    assert not page.find_elements("css selector", "#entry-content *")
    screenshot("entry")
    go(page, console, ws_route(console, "search?q=console%20must%20show%20this%20as%20text"))
    card = wait_for(page, f'.result[data-id="{seeded.xss}"]')[0]
    assert XSS_PROBE in card.find_element("css selector", ".content").text
    go(page, console, ws_route(console, f"graph?seeds={seeded.xss}&hops=1"))
    wait_for(page, "#graph-svg g.node")
    assert not page.find_elements("css selector", "main img, main script, main b")
    assert page.execute_script("return window.__pwned") is None


def test_a_superseded_entry_is_marked_and_links_to_its_replacement(page, console, http, screenshot):
    """A fact replaced through `supersedes`: the search marks it and links to the replacement,
    which comes first; the replaced entry's page says what replaced it, the replacement's page
    what it replaces."""
    workspace, marker = console["workspace"], f"heron{uuid.uuid4().hex[:6]}"
    headers = {"Authorization": f"Bearer {console['write']}"}

    def call(method, **body):
        answer = http.post(f"/v1/w/{workspace}/{method}", json=body, headers=headers)
        assert answer.status_code == 200, answer.text
        return answer.json()

    old = call("capture", content=f"The {marker} billing job deploys to us-east-1 on Fridays")["id"]
    new = call("capture", content=f"The {marker} billing job moved: eu-west-1 is the region now")[
        "id"
    ]
    call("link", src=new, dst=old, type="supersedes")
    sign_in(page, console["read"])
    go(page, console, ws_route(console, f"search?q={marker}%20billing%20deploys%20Fridays"))
    results = wait_for(page, "#results .result", count=2)
    ids = [r.get_attribute("data-id") for r in results]
    # the console's workspace holds other tests' entries too: one may rank between the two
    assert ids[0] == new and old in ids, ids
    replaced = results[ids.index(old)]
    note = replaced.find_element("css selector", ".superseded-by a.successor")
    assert note.get_attribute("data-id") == new
    assert not results[0].find_elements("css selector", ".superseded-by")
    assert replaced.find_element("css selector", '[data-factor="superseded"]')
    screenshot("search")
    with reloaded(page):
        note.click()
    assert text_of(page, "#entry-id") == new
    assert wait_for(page, f'#supersedes a.entry-link[data-id="{old}"]')
    go(page, console, ws_route(console, f"entry/{old}"))
    link = wait_for(page, "#superseded-by a.successor")[0]
    assert link.get_attribute("data-id") == new
    screenshot("entry")


def test_a_bound_recall_shows_how_it_weighed_its_arms(page, console, http, admin_headers):
    """A workspace with a vector binding: the query-used box says what share the lexical arm
    got, how sharply each arm's head stood out, the arms' agreement and whether the page kept
    the lexical order (an unbound recall has no such line)."""
    workspace = f"console-bound-{uuid.uuid4().hex[:8]}"
    created = http.post(
        "/v1/workspaces",
        headers=admin_headers,
        json={
            "id": workspace,
            "blueprint": {"bindings": {"vector": {"provider": "hash", "dimensions": 64}}},
        },
    )
    assert created.status_code == 201, created.text
    token = created.json()["token"]
    try:
        for text in (
            "The heron nests by the north pond every spring",
            "Ferry timetable changes on the north route",
            "Spring planting list: beans, kale, heron-proof netting",
        ):
            wrote = http.post(
                f"/v1/w/{workspace}/capture",
                json={"content": text},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert wrote.status_code == 200, wrote.text
        sign_in(page, token)
        go(
            page,
            {**console, "workspace": workspace},
            f"/w/{workspace}/search?q=where%20does%20the%20heron%20nest",
        )
        wait_for(page, "#results .result")
        used = text_of(page, "#query-used")
        assert "arm weighting" in used and "lexical share" in used and "dense margin" in used
        assert "page kept the lexical order" in used or "fused order of both arms" in used
    finally:
        http.delete(f"/v1/workspaces/{workspace}", headers=admin_headers)


def test_the_overview_lists_an_open_supersession_hint_with_both_entries(
    page, console, http, admin_headers, screenshot
):
    """A capture that restates an entry with a detail changed, in a bound workspace: the
    overview lists the hint with both entries and what changed, until the agent links it."""
    workspace = f"console-hint-{uuid.uuid4().hex[:8]}"
    created = http.post(
        "/v1/workspaces",
        headers=admin_headers,
        json={
            "id": workspace,
            "blueprint": {"bindings": {"vector": {"provider": "hash", "dimensions": 64}}},
        },
    )
    assert created.status_code == 201, created.text
    token = created.json()["token"]
    tenant = {"Authorization": f"Bearer {token}"}

    def capture(text):
        wrote = http.post(f"/v1/w/{workspace}/capture", json={"content": text}, headers=tenant)
        assert wrote.status_code == 200, wrote.text
        return wrote.json()

    try:
        old = capture("The billing service deploys to us-east-1 on Fridays.")["id"]
        new = capture("The billing service deploys to eu-west-1 on Fridays.")
        assert new["supersessionHint"]["id"] == old
        sign_in(page, token)
        go(page, {**console, "workspace": workspace}, f"/w/{workspace}")
        pair = wait_for(page, "#supersession-hints li.hint-pair")[0]
        assert pair.get_attribute("data-id") == new["id"]
        assert "us-east-1 → eu-west-1" in pair.text
        shown = [
            e.get_attribute("data-id") for e in pair.find_elements("css selector", "li.entry-row")
        ]
        assert shown == [new["id"], old]
        screenshot("hint")
        linked = http.post(
            f"/v1/w/{workspace}/link",
            json={"src": new["id"], "dst": old, "type": "supersedes"},
            headers=tenant,
        )
        assert linked.status_code == 200, linked.text
        go(page, {**console, "workspace": workspace}, f"/w/{workspace}/search?q=billing")
        go(page, {**console, "workspace": workspace}, f"/w/{workspace}")
        wait_for(page, "#stats")
        assert not page.find_elements("css selector", "#supersession-hints")
    finally:
        http.delete(f"/v1/workspaces/{workspace}", headers=admin_headers)
