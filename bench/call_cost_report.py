"""bench_call_cost's figures as its report: the warm calls against their floor, the wake cycle
and the session, then an appendix (the engine floor, the idle machine, threads, profiles)."""

from __future__ import annotations

from .common import machine_note, table
from .cpu_ledger import BARE_ACTOR, BARE_REPLICA, DAEMONS, DRIVER, OTHER, STARTING

FRONT_NAMES = {"python": "Python proxy", "haproxy": "HAProxy ingress"}
METHODS = ("getCount", "recall", "capture")
CLIENT_COUNTS = (1, 16)  # one client, then as many at once (bench_call_cost.CLIENTS_MANY)
SHORT_KINDS = {
    "workspace actors (their start included)": "ws actor",
    STARTING: "new workers",
    "Serve proxy": "py proxy",
    "HAProxy and its manager": "haproxy",
    BARE_REPLICA: "bare replica",
    BARE_ACTOR: "bare actor",
    "Serve ingress replicas": "replica",
    "directory": "directory",
    "scheduler": "scheduler",
    DAEMONS: "ray daemons",
    "replication daemon (Litestream)": "litestream",
    DRIVER: "clients",
    OTHER: "else",
}
SHOWN_KIND_MS = 0.05  # kinds below this many ms per call are left out of a cell
TOP_THREADS = 6
TOP_LEAVES = 15
TOP_OWN_FRAMES = 8


def kinds_cell(kinds: dict, floor_ms: float = SHOWN_KIND_MS) -> str:
    shown = sorted(((ms, kind) for kind, ms in kinds.items() if ms >= floor_ms), reverse=True)
    return ", ".join(f"{SHORT_KINDS.get(kind, kind)} {ms:.2f}" for ms, kind in shown)


def warm_rows(engine: dict, fronts: dict) -> list[list]:
    rows = []
    for front, got in fronts.items():
        for method in METHODS:
            for clients in CLIENT_COUNTS:
                pair = got["warm"][f"{method}/{clients}"]
                service, bare = pair["service"], pair["floor"]
                own = engine[method][clients] if method != "getCount" else 0.0
                floor = bare["cpuMs"] + own
                said = f"bare {bare['cpuMs']:.2f}" + (f" + engine {own:.2f}" if own else "")
                rows.append(
                    [
                        FRONT_NAMES[front],
                        method,
                        clients,
                        f"{service['cpuMs']:.2f} ms",
                        f"{said} = {floor:.2f} ms" if own else f"{said} ms",
                        f"{service['cpuMs'] / floor:.2f}×",
                        f"{service['p50']:.1f} ms ({bare['p50']:.1f})",
                        kinds_cell(service["kinds"]),
                        kinds_cell(bare["kinds"]),
                    ]
                )
    return rows


def above_idle(got: dict, cpu_ms: float, wall_s: float) -> float:
    """CPU beyond what the idle machine spends over the same wall time (its daemons' timers,
    the idle actors): a wake's window lasts until the pool settled, a warm call's a moment."""
    return cpu_ms - got["idle"]["cpuMs"] * wall_s


def churn_rows(fronts: dict) -> list[list]:
    rows = []
    for front, got in fronts.items():
        warm = {m: got["warm"][f"{m}/1"]["service"]["cpuMs"] for m in METHODS}
        wake, session = got["wake"], got["session"]
        same_calls = sum(warm.values()) * 10  # the session's 30 calls, 10 of each, warm
        wake_net = above_idle(got, wake["cpuMs"], wake["wallS"] / wake["cycles"])
        session_net = above_idle(got, session["cpuMs"], session["wallS"])
        rows += [
            [
                FRONT_NAMES[front],
                "wake cycle: hibernate, getCount",
                f"{wake['cpuMs']:.1f} ms ({wake_net:.1f} above idle)",
                f"{wake['cpuMs'] / warm['getCount']:.1f}× a warm getCount ({warm['getCount']:.2f}); "
                f"above idle {wake_net / warm['getCount']:.1f}×",
                f"the wake's getCount p50 {wake['wakeP50']:.1f} ms",
                f"{wake['started']} / {wake['ended']}",
                kinds_cell(wake["kinds"], 0.5),
            ],
            [
                FRONT_NAMES[front],
                "session: wake, 30 calls, hibernate",
                f"{session['cpuMs']:.0f} ms ({session_net:.0f} above idle)",
                f"{session['cpuMs'] / same_calls:.1f}× its 30 calls warm ({same_calls:.0f})",
                f"{session['wallS'] * 1e3:.0f} ms a session",
                f"{session['started']} / {session['ended']}",
                kinds_cell(session["kinds"], 0.5),
            ],
        ]
    return rows


def loaded_rows(fronts: dict) -> list[list]:
    """One workspace under a closed loop, each front against the Python proxy's run."""
    base = fronts.get("python", {}).get("loaded")
    rows = []
    for front, got in fronts.items():
        loaded = got["loaded"]
        ratio = f"{loaded['reqPerS'] / base['reqPerS']:.2f}×" if base else "-"
        rows.append(
            [
                FRONT_NAMES[front],
                f"{loaded['reqPerS']:,.0f}",
                ratio,
                f"{loaded['p50']:.1f} / {loaded['p99']:.1f} ms",
                f"{loaded['errors']} / {loaded['refusals']}",
                f"{loaded['cpuMs']:.2f} ms",
                kinds_cell(loaded["kinds"], 0.05),
            ]
        )
    return rows


def engine_lines(engine: dict) -> list[str]:
    return [
        f"- {method}: {engine[method][1] * 1e3:.0f} µs"
        + (
            f"; {engine[method][CLIENT_COUNTS[-1]] * 1e3:.0f} µs in run_batch ×{CLIENT_COUNTS[-1]}"
            if method == "capture"
            else ""
        )
        for method in METHODS
    ]


def thread_lines(fronts: dict) -> list[str]:
    lines = []
    for front, got in fronts.items():
        for key in ("getCount/1", "getCount/16", "recall/16"):
            method, clients = key.split("/")
            for label, spent in got["warm"][key]["service"]["threads"].items():
                top = sorted(spent.items(), key=lambda item: -item[1])[:TOP_THREADS]
                cells = ", ".join(f"`{name}` {ms:.2f}" for name, ms in top)
                lines.append(
                    f"- {FRONT_NAMES[front]}, {method} ×{clients}, {label} "
                    f"({sum(spent.values()):.2f} ms a call): {cells}"
                )
    return lines


def python_thread_lines(fronts: dict) -> list[str]:
    """Which Python thread each OS thread name is (py-spy dump, taken before the profiles)."""
    lines = []
    for front, got in fronts.items():
        for label, named in got.get("profile", {}).get("python threads", {}).items():
            said = "; ".join(f"`{comm}` = {', '.join(names)}" for comm, names in named.items())
            lines.append(f"- {FRONT_NAMES[front]}, {label}: {said}")
    return lines


def profile_lines(fronts: dict) -> list[str]:
    lines = []
    for front, got in fronts.items():
        for what, counts in got.get("profile", {}).items():
            if what == "python threads":
                continue
            total = max(1, counts["total"])
            lines.append(f"\n{FRONT_NAMES[front]}, {what}: {counts['total']} samples")
            if counts.get("error") and not counts["total"]:
                lines.append(f"  (py-spy: {counts['error']})")
            leaves = sorted(counts["leaves"].items(), key=lambda item: -item[1])[:TOP_LEAVES]
            lines += [f"    {n * 100 / total:5.1f}%  {name}" for name, n in leaves]
            own = sorted(counts["own"].items(), key=lambda item: -item[1])[:TOP_OWN_FRAMES]
            lines.append("  innermost frame of this project's code:")
            lines += [f"    {n * 100 / total:5.1f}%  {name}" for name, n in own]
    return lines


def appendix_text(engine: dict, fronts: dict, took_s: float) -> str:
    idle = [
        f"- {FRONT_NAMES[f]}: idle {sum(g['idle']['kinds'].values()):.0f} ms of CPU a second "
        f"({kinds_cell(g['idle']['kinds'], 1.0)}); `else` over all windows, ms a second: "
        + ", ".join(f"{name} {ms:.0f}" for name, ms in g["othersMsPerS"].items())
        + f"; windows: {g['windows']}"
        for f, g in fronts.items()
    ]
    parts = [
        "\n\n## Appendix\n\nThe engine floor, CPU per call in process (time.process_time):",
        *engine_lines(engine),
        "\nThe machine idle (the service and the floor up, no calls), what `else` was (the "
        "shared machine's other processes), and how the windows went:",
        *idle,
        "\nThreads of the workspace actor and the ingress replica, CPU ms per warm call by "
        "thread name (/proc/PID/task; threads of one name summed), top 6:",
        *thread_lines(fronts),
    ]
    named = python_thread_lines(fronts)
    if named:
        parts += ["\nThe Python threads among them (py-spy dump; the others are native):", *named]
    profiled = profile_lines(fronts)
    if profiled:
        parts += [
            "\npy-spy (Python frames, 100 Hz, 16 clients): samples by leaf function",
            "```",
            *profiled,
            "```",
        ]
    parts.append(f"\nThe whole run took {took_s / 60:.1f} minutes:")
    parts += [
        f"- {FRONT_NAMES[front]}: {got['tookS']:.0f} s in all (Ray and Serve started and "
        "stopped included), of it "
        + ", ".join(f"{name} {s:.0f} s" for name, s in got["phasesS"].items())
        for front, got in fronts.items()
    ]
    return "\n".join(parts)


def render(engine: dict, fronts: dict, took_s: float) -> tuple[str, list[str], str]:
    """(the tables, the notes, the appendix) of a run."""
    return tables(engine, fronts), notes(), appendix_text(engine, fronts, took_s)


def tables(engine: dict, fronts: dict) -> str:
    """The warm calls against their floor, the wake cycle and session, the closed loop."""
    body = table(
        [
            "front",
            "call",
            "clients",
            "machine CPU per call",
            "floor: bare pair (+ engine)",
            "ratio",
            "wall p50 (floor's)",
            "the call's CPU by process, ms",
            "the floor's CPU by process, ms",
        ],
        warm_rows(engine, fronts),
    )
    body += "\n\n" + table(
        [
            "front",
            "measure",
            "machine CPU",
            "against",
            "wall",
            "processes started / ended",
            "by process, ms",
        ],
        churn_rows(fronts),
    )
    return (
        body
        + "\n\n"
        + table(
            [
                "front",
                "one workspace, 32 clients, 70/30: req/s",
                "against the Python proxy",
                "p50 / p99",
                "errors / refusals",
                "machine CPU per request",
                "by process, ms",
            ],
            loaded_rows(fronts),
        )
    )


def notes() -> list[str]:
    return [
        "machine CPU: every process on the machine (/proc/stat, all but idle and iowait), so "
        "`else` is whatever else the shared machine ran in the window; by process: "
        "bench/cpu_ledger.py's kinds (`clients` is this benchmark's own process)",
        "the floor: bench/bare_pair.py, a second Serve application in the same cluster behind "
        "the same front, its replica deployed like the service's; its route reads the JSON body "
        "and awaits one call of an async actor that answers a constant",
        "warm calls: 6 rounds a side, the service's and the floor's taking turns (150 calls a "
        "round from one client, 240 from 16); a window starts once no process has started or "
        "ended for 5 s and is measured again if one did inside it; recall over 200 short "
        "entries; the engine's recall includes its recall-count write, its capture at 16 "
        "clients is a run_batch of 16 (the actor commits concurrent writes together)",
        "closed loop: 32 clients on the measured workspace, each sending its next request as "
        "its last answers, 70% getCount and 30% capture, for 15 s (bench/closed_loop.py, the "
        "load of bench_serverless's one-workspace run)",
        "above idle: less the idle machine's CPU a second (the appendix) times the window's "
        "wall time",
        "wake cycle and session: each window runs until the spare pool has settled again; "
        "idle hibernation pushed out of the run (the directory's set_residency), other "
        "settings at their defaults",
        machine_note("; each front in a fresh local Ray"),
    ]
