"""Latency and memory of the bot process, measured through the local fake Discord.

The fake Discord runs in this process; the bot runs as its own process
(``python -m bot run``), pointed at the fake over loopback, exactly as in
production but for the two URLs. Latency is measured by the fake: from the
moment it sends INTERACTION_CREATE on the gateway to the moment the bot's
interaction callback arrives.

1. ``--games 50,200,400`` (the default; one bot process for each count): the
   guilds each start a game of 16 players (2 cities), by a bot whose global
   rate limit is raised (a start makes some 70 REST calls, and Discord's 50 a
   second would make 200 starts take minutes); the bot is then restarted as it
   ships, under Discord's global limit, with the games open. Every game plays
   a day at once (nominations and votes from all games interleaved) and the
   latency of each player command is recorded (p50, p99, max). The floor, in
   the same run before the day: a trivial command, ``/mafia status`` in a
   guild with no game (one lookup, one answer). ``--timeline T`` writes every
   command of the day (``T.<games>.tsv``) and both processes' CPU every
   0.25 s (``T.<games>.cpu.tsv``).
2. ``--memory-games 200``: 200 guilds each start a game of 30 players; the
   bot's resident memory (VmRSS) is read once they all run.

The machine is measured alongside the day (:mod:`benchmarks.machine_noise`, in a
process of its own): the slow windows its CPUs had (both at once, every 1.5 s or
so on the machines here, running some ten times slower for 20-90 ms) and, apart
from the day's figures, those of the commands away from the windows.

The fake is instrumentation here, not the subject: its OpenAPI schema check
of every request and answer (on in the tests) is off unless ``--strict-fake``
(at 200 games it alone saturates this process), its record of the setup's
calls is dropped and its garbage collector is off while the games play (its
full collections paused it for up to 200 ms). The bench prints the CPU both
processes used, so a fake that limits the figures shows.

The fixed cost: the bot's CPU (user + system, read from /proc) is taken over
the floor's 300 commands and over the day, less what it spends idle (2 s of
nothing, measured just before), and printed per command, beside p99 / floor
p99. The tail is printed with what explains it, from this run: how many
commands were in flight (sent, not yet answered) when the slowest 1 % were
sent, against the others; with ``--probe`` also what the bot did in each
section (:mod:`benchmarks.service_probe`: SQL statements and trips to
aiosqlite's threads per command, group commits and their time with the
fsync, garbage collections and their pauses, the loop's stalls).

Profiling: ``BENCH_PYSPY=out.raw`` (the bot) and ``BENCH_PYSPY_FAKE=out.raw``
(this process) sample 7 s of the day with py-spy; ``--probe`` with
``BENCH_CPROFILE=PREFIX`` writes a cProfile of the bot's loop thread for the
floor and for the day (``PREFIX.1.prof``, ``PREFIX.2.prof``).

Run: ``python benchmarks/service_bench.py`` (about five minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import collections
import contextlib
import gc
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine_noise import Sampler, Window, describe  # noqa: E402
from tests.fakediscord import FakeDiscord, InteractionResult  # noqa: E402

#: ``--timeline``: where to write each command of the day (sent at, command, latency), per count
TIMELINE: str | None = None
#: ``--no-machine`` turns it off: sample the machine's slow windows alongside the day
MACHINE = True
#: ``--database``: a postgresql:// URL of an empty database instead of a SQLite file
DATABASE: str | None = None
#: ``--probe``: the file the bot's probe appends each section's figures to (None: no probe)
PROBE: str | None = None
#: ``--variants``: the change (:mod:`benchmarks.service_probe`) the bot of the current run has
VARIANT = "stock"
#: ``--synchronous``: SQLite's setting for the bot of the current run (``sqlite_synchronous``)
SYNCHRONOUS = "full"
CONFIG = """\
database: {database}
sqlite_synchronous: {synchronous}
log_level: WARNING
timers: {{discussion: 0, voting: 0, night: 0, reminders: []}}
"""
#: the games are set up by a bot whose global limit Discord raised (every start makes some 70
#: REST calls: 200 starts at Discord's 50 a second would take minutes); they are played by the
#: bot as it ships, under Discord's limit, restarted with the games open
SETUP_REST = "rest_per_second: 100000\n"
#: seconds from the bot's gateway session to its being ready (discord.py waits 2 s for guilds)
READY_WAIT = 3.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


#: what a command whose answer Discord refused (too late: "Unknown interaction") counts as
EXPIRED = float("inf")


def latency_ms(result: InteractionResult) -> float:
    """INTERACTION_CREATE -> accepted callback; :data:`EXPIRED` when the callback was refused."""
    if result.callback is None:
        return EXPIRED
    return (result.callback.time - result.sent_at) * 1000


class Bench:
    def __init__(self, guilds: int, players: int, *, strict: bool = False) -> None:
        # Discord's OpenAPI schema check of every request and answer costs the fake more CPU
        # than the bot spends on the same command: at 200 games it saturates this process and
        # the figures become the fake's. The tests keep it on; the bench, unless --strict-fake.
        self.fake = FakeDiscord() if strict else FakeDiscord(openapi=None)
        self.guilds = []
        for g in range(guilds):
            owner = self.fake.create_user(f"host{g}")
            guild = self.fake.create_guild(f"Club {g}", owner=owner, preferred_locale="ru")
            general = self.fake.create_channel(guild.id, "general")
            members = [self.fake.add_member(guild.id, f"g{g}p{p}") for p in range(players)]
            self.guilds.append((guild, owner, general, members))
        self.empty_guild = self.fake.create_guild("Empty", owner=self.fake.create_user("nobody"))
        self.empty_channel = self.fake.create_channel(self.empty_guild.id, "general")
        self.process: subprocess.Popen[bytes] | None = None
        self.timeline: list[tuple[str, float, float]] = []
        self.cpu_trace: list[tuple[float, float, float]] = []
        self.fake_stalls: list[tuple[float, float]] = []
        """(seconds into the day, bot's and fake's % of a core) for ``--timeline``."""
        """(command, when sent, latency in ms) of every command of the day, for ``--timeline``."""
        # The fake's wait_until wakes every waiter on every change it sees: with 200 games waiting
        # at once, most of this process's time went to waking them (15 % of its samples). The
        # day's commands wait for their callback alone instead, checked when the fake notifies.
        self._answers: dict[InteractionResult, asyncio.Future[None]] = {}
        notify = self.fake.notify

        def notified() -> None:
            notify()
            for result in [r for r in self._answers if r.callback is not None or r.attempts]:
                future = self._answers.pop(result)
                if not future.done():
                    future.set_result(None)

        self.fake.notify = notified  # type: ignore[method-assign]

    async def answered(self, result: InteractionResult, timeout: float) -> None:
        """Until the bot acknowledged ``result`` (or Discord refused its callback)."""
        if result.callback is None and not result.attempts:
            future = self._answers.setdefault(result, asyncio.get_running_loop().create_future())
            await asyncio.wait_for(future, timeout)

    async def start_bot(self, folder: Path, *, extra: str = "") -> None:
        """Start the bot (and, the first time, the fake); ``extra``: more lines of its config."""
        if not self.fake.port:
            await self.fake.start()
        config = folder / "config.yaml"
        config.write_text(
            CONFIG.format(database=DATABASE or folder / "bench.sqlite3", synchronous=SYNCHRONOUS)
            + extra
        )
        self.fake.global_limit.enforce = not extra
        env = {
            **os.environ,
            "DISCORD_TOKEN": self.fake.token,
            "DISCORD_API_BASE": self.fake.api_base,
            "DISCORD_GATEWAY_URL": self.fake.gateway_url,
            "PYTHONPATH": str(ROOT),
        }
        command = os.environ.get("BENCH_BOT_COMMAND", f"{sys.executable} -m bot run").split()
        if PROBE or VARIANT != "stock":
            command = [sys.executable, str(ROOT / "benchmarks" / "service_probe.py"), "run"]
            env["BENCH_VARIANT"] = "" if VARIANT == "stock" else VARIANT
        if PROBE:
            env["BENCH_PROBE_OUT"] = PROBE
        self.process = subprocess.Popen([*command, "--config", str(config)], env=env, cwd=ROOT)
        began = time.monotonic()
        await self.fake.wait_until(
            lambda: self.fake.calls("PUT", "/applications/{application_id}/commands") or None,
            60.0,
            "the bot did not sync its commands",
        )
        await self.fake.wait_until(
            lambda: next(
                (
                    session
                    for session in self.fake.gateway.sessions.values()
                    if session.connected and session.identified_at >= began
                ),
                None,
            ),
            60.0,
            "the bot did not connect",
        )
        # discord.py is ready 2 s after the last guild arrived (guild_ready_timeout); then the bot
        # freezes what it built for the garbage collector: neither belongs to the figures
        await asyncio.sleep(READY_WAIT)

    async def restart_bot(self, folder: Path) -> float:
        """Stop the bot and start it again with the shipped limits; seconds until it is connected."""
        assert self.process is not None
        self.process.terminate()
        self.process.wait(30)
        began = time.monotonic()
        await self.start_bot(folder)
        return time.monotonic() - began - READY_WAIT

    def cpu_seconds(self) -> tuple[float, float]:
        """CPU time used so far (user + system) by the bot's process and by this one (the fake)."""
        assert self.process is not None
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        bot = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return bot, time.process_time()

    def run_queue_seconds(self) -> float:
        """How long the bot's main thread (its event loop) has waited on a run queue of the
        kernel, runnable but not running (``/proc/PID/task/PID/schedstat``'s second field)."""
        assert self.process is not None
        pid = self.process.pid
        return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[1]) / 1e9

    async def watch_loop(self, since: float) -> None:
        """Record this process's (the fake's) event-loop stalls over 15 ms, for ``--timeline``."""
        while True:
            began = time.monotonic()
            await asyncio.sleep(0.002)
            late = (time.monotonic() - began - 0.002) * 1000
            if late > 15:
                self.fake_stalls.append((began - since, late))

    async def sample_cpu(self, since: float, every: float = 0.25) -> None:
        """Every ``every`` s: the share of a core each process used since the last sample."""
        last, last_at = self.cpu_seconds(), time.monotonic()
        while True:
            await asyncio.sleep(every)
            now, at = self.cpu_seconds(), time.monotonic()
            self.cpu_trace.append(
                (
                    at - since,
                    100 * (now[0] - last[0]) / (at - last_at),
                    100 * (now[1] - last[1]) / (at - last_at),
                )
            )
            last, last_at = now, at

    async def section(self, begin: bool) -> None:
        """Tell the bot's probe (``--probe``) a measured section begins or ends; at its end, until
        the probe has written the section's figures."""
        if not PROBE or self.process is None:
            return
        path = Path(PROBE)
        written = len(path.read_text().splitlines()) if path.exists() else 0
        self.process.send_signal(signal.SIGUSR1 if begin else signal.SIGUSR2)
        if not begin:
            await self.fake.wait_until(
                lambda: path.exists() and len(path.read_text().splitlines()) > written or None,
                30.0,
                "the probe wrote nothing",
            )

    async def idle_cpu(self, seconds: float = 2.0) -> float:
        """The bot's CPU seconds per second while nothing is asked of it (heartbeats, the WAL's
        checkpointer and its stat, the collector)."""
        before, began = self.cpu_seconds()[0], time.perf_counter()
        await asyncio.sleep(seconds)
        return (self.cpu_seconds()[0] - before) / (time.perf_counter() - began)

    def rss_mib(self) -> float:
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    async def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        await self.fake.close()

    async def floor(self, count: int) -> list[float]:
        """The latencies of ``count`` trivial commands in turn: ``/mafia status`` with no game."""
        latencies = []
        for _ in range(count):
            result = await self.fake.slash(
                self.empty_guild.id, self.empty_guild.owner_id, "mafia status", {}, locale="ru"
            )
            await result.wait_callback()
            latencies.append(latency_ms(result))
        return latencies

    async def slash(self, guild, user, command, options=None) -> InteractionResult:
        result = await self.fake.slash(
            guild.id, user.id, command, options or {}, locale="ru", wait=False
        )
        await self.answered(result, 30.0)
        return result

    async def start_game(self, index: int, cities: str) -> None:
        guild, owner, general, members = self.guilds[index]
        opened = await self.fake.slash(
            guild.id, owner.id, "mafia new", {}, channel_id=general.id, locale="ru", timeout=30.0
        )
        await opened.wait_original(30.0)
        # the lobby message is posted by the outbox, with the Join button carrying the game's id
        lobby = await self.fake.wait_until(
            lambda: next(
                (
                    m
                    for m in self.fake.messages(general.id)
                    if any(c.startswith("mafia:join:") for c in m.custom_ids())
                ),
                None,
            ),
            30.0,
            "no lobby message",
        )
        game_id = next(c for c in lobby.custom_ids() if c.startswith("mafia:join:")).split(":")[2]
        for member in members:
            await self.fake.click(lobby, f"mafia:join:{game_id}", member.user.id, timeout=30.0)
        await self.slash(guild, owner, "host setup", {"cities": cities, "maniac": False})
        started = await self.slash(guild, owner, "host start")
        await started.wait_original(60.0)
        assert "началась" in started.text, started.text

    async def play_day(self, index: int, rng: random.Random, pace: float) -> list[float]:
        """Nominations then votes of one game; the latency of each command.

        Each game sends a command every ``pace`` seconds on average (people
        type slower than that), so the fake Discord in this process is not
        the bottleneck and the figures are the bot's.
        """
        guild, owner, general, members = self.guilds[index]
        latencies = []
        half = len(members) // 2
        cities = [members[:half], members[half:]]
        for city in cities:
            for nominator in rng.sample(city, 3):
                target = rng.choice(members)
                await asyncio.sleep(rng.uniform(0, 2 * pace))
                result = await self.slash(
                    guild, nominator, "nominate", {"player": str(target.user.id)}
                )
                latencies.append(latency_ms(result))
                self.timeline.append(("nominate", result.sent_at, latencies[-1]))
        result = await self.slash(guild, owner, "host next")
        self.timeline.append(("host next", result.sent_at, latency_ms(result)))
        for member in members:
            candidate = rng.choice(members)
            await asyncio.sleep(rng.uniform(0, 2 * pace))
            result = await self.slash(guild, member, "vote", {"player": str(candidate.user.id)})
            latencies.append(latency_ms(result))
            self.timeline.append(("vote", result.sent_at, latencies[-1]))
        return latencies


#: a command this close (seconds) after a slow window of the machine waited for the backlog it left
BACKLOG = 0.15


def away_from(windows: list[Window], timeline: list[tuple[str, float, float]]) -> list[float]:
    """The latencies of the day's player commands that neither overlapped one of the machine's
    slow windows nor came within :data:`BACKLOG` after one."""
    kept = []
    for kind, sent, ms in timeline:
        if kind == "host next":
            continue
        answered = sent + (ms if ms != EXPIRED else 30_000) / 1000
        if not any(sent < w.end + BACKLOG and answered > w.start for w in windows):
            kept.append(ms)
    return kept


def in_flight(timeline: list[tuple[str, float, float]]) -> str:
    """How many commands the bot had in hand (sent, not yet answered) as each command was sent:
    for the slowest 1 % and for the others (a backlog shows as more in flight)."""
    spans = sorted(
        (sent, sent + (ms if ms != EXPIRED else 30_000) / 1000) for _, sent, ms in timeline
    )
    ends = sorted(end for _, end in spans)
    waiting = {}
    for sent, _ in spans:
        # sent before this one and answered after it was sent
        waiting[sent] = bisect.bisect_left(spans, (sent, -1.0)) - bisect.bisect_right(ends, sent)
    ordered = sorted(timeline, key=lambda row: row[2])
    slowest = ordered[-max(1, len(ordered) // 100) :]
    rest = ordered[: -len(slowest)]
    slow_depths = [waiting[sent] for _, sent, _ in slowest]
    rest_depths = [waiting[sent] for _, sent, _ in rest] or [0]
    return (
        f"commands in flight when sent: slowest 1 % ({len(slowest)}, from "
        f"{slowest[0][2]:.1f} ms) median {statistics.median(slow_depths):.0f}, max "
        f"{max(slow_depths)}; the others median {statistics.median(rest_depths):.0f}, p99 "
        f"{percentile(rest_depths, 0.99)}"
    )


def overlapping(spans: list[tuple[float, float]], sent: float, answered: float) -> bool:
    """Whether one of ``spans`` ((began, seconds)) overlaps [sent, answered]."""
    return any(began < answered and began + spent > sent for began, spent in spans)


def explain_tail(
    timeline: list[tuple[str, float, float]],
    slow: dict[str, list[tuple[float, float]]],
    stall_cpu: float,
) -> str:
    """The share of the slowest 1 % of the day's commands, and of the others, that were in the
    bot's hands while one of its group commits (fsync included) or one stall of its loop took
    10 ms or more: a cause of the tail is one the slowest meet far more often. ``stall_cpu``:
    the CPU the loop's thread had in those stalls (the rest of them it waited for a CPU)."""
    ordered = sorted(timeline, key=lambda row: row[2])
    slowest = ordered[-max(1, len(ordered) // 100) :]
    rest = ordered[: -len(slowest)]

    def share(rows: list[tuple[str, float, float]], kind: str) -> str:
        hit = sum(
            1
            for _, sent, ms in rows
            if overlapping(slow[kind], sent, sent + (ms if ms != EXPIRED else 30_000) / 1000)
        )
        return f"{100 * hit / max(1, len(rows)):.0f} %"

    commits, stalls = slow["commit"], slow["loop"]
    return (
        f"{len(commits)} group commits of 10 ms or more (fsync included; "
        f"{sum(spent for _, spent in commits):.2f} s in all) and {len(stalls)} stalls of the "
        f"loop of 10 ms or more ({sum(spent for _, spent in stalls):.2f} s, of which the "
        f"loop's thread ran {stall_cpu:.2f} s and waited for a CPU the rest) in the day; "
        f"waiting over such a commit: slowest 1 % {share(slowest, 'commit')}, the others "
        f"{share(rest, 'commit')}; over such a stall: slowest 1 % {share(slowest, 'loop')}, "
        f"the others {share(rest, 'loop')}"
    )


def print_probe(
    path: str, floor: int, commands: int, timeline: list[tuple[str, float, float]]
) -> None:
    """The probe's two sections (the floor, then the day), per command; what the day's tail met."""
    lines = Path(path).read_text().splitlines()[-2:]
    for name, count, line in zip(("floor", "day"), (floor, commands), lines, strict=True):
        f = json.loads(line)
        print(
            f"  probe, {name}: {f['statements'] / count:.1f} SQL statements and "
            f"{f['trips'] / count:.2f} trips to aiosqlite's threads per command; "
            f"{f['groups']} group commits, {1000 * f['group_seconds']:.0f} ms in them (the "
            f"longest {f['group_longest_ms']:.1f} ms, its fsync included); gc "
            f"{f['gc']['0']}/{f['gc']['1']}/{f['gc']['2']} collections (gen 0/1/2), "
            f"{1000 * f['gc_seconds']:.0f} ms, the longest {f['gc_longest_ms']:.1f} ms; loop "
            f"late > 5 ms {f['lags_over_5ms']} times, > 20 ms {f['lags_over_20ms']}, the "
            f"longest {f['lag_longest_ms']:.1f} ms"
        )
    day = json.loads(lines[-1])
    print(f"  the tail, with the probe: {explain_tail(timeline, day['slow'], day['stall_cpu'])}")


def figures(values: list[float]) -> str:
    """n, p50, p99 and max of latencies in ms (an expired answer counts as the slowest)."""
    expired = sum(1 for ms in values if ms == EXPIRED)
    return (
        f"n={len(values)}: p50 {statistics.median(values):.2f} ms, "
        f"p99 {percentile(values, 0.99):.2f} ms, max {max(values):.2f} ms"
        + (f"; {expired} answered too late for Discord (counted as slowest)" if expired else "")
    )


def profile(variable: str, pid: int) -> None:
    """Sample ``pid`` with py-spy for 7 s into the file ``$variable`` names, if it is set."""
    if os.environ.get(variable):
        subprocess.Popen(
            [
                "py-spy",
                "record",
                "-o",
                os.environ[variable],
                "-f",
                "raw",
                "-r",
                "250",
                "-d",
                "7",
                "-p",
                str(pid),
            ]
        )


async def latency_run(games: int, pace: float, *, strict: bool = False) -> None:
    bench = Bench(games, 16, strict=strict)
    with tempfile.TemporaryDirectory() as folder:
        try:
            await bench.start_bot(Path(folder), extra=SETUP_REST)
            began = time.perf_counter()
            for index in range(games):
                await bench.start_game(index, "Верона, Падуя")
            print(f"started {games} games of 16 players in {time.perf_counter() - began:.1f} s")
            restarted = await bench.restart_bot(Path(folder))
            print(
                f"restarted the bot with Discord's global limit, {games} games open: connected "
                f"in {restarted:.1f} s"
            )
            bench.fake.recorder.clear()  # the calls of the setup: only work for the fake's collector
            # The fake's collector paused this process for up to 200 ms while the games played (its
            # world of guilds, messages and interactions is big): not the bot's latency. It is off
            # while they play.
            gc.collect()
            gc.freeze()
            # a bot that has been running keeps open connections to Discord (aiohttp's pool); the
            # restarted one opens them as the first commands come in at once: do it before measuring
            warm = [
                await bench.fake.slash(
                    bench.empty_guild.id,
                    bench.empty_guild.owner_id,
                    "mafia status",
                    {},
                    locale="ru",
                    wait=False,
                )
                for _ in range(60)
            ]
            for result in warm:
                await result.wait_callback()
            idle = await bench.idle_cpu()
            await bench.section(True)
            floor_cpu, floor_began = bench.cpu_seconds()[0], time.perf_counter()
            floor = await bench.floor(300)
            floor_cpu = (
                bench.cpu_seconds()[0] - floor_cpu - idle * (time.perf_counter() - floor_began)
            )
            await bench.section(False)
            rng = random.Random(7)
            assert bench.process is not None
            profile("BENCH_PYSPY", bench.process.pid)  # the bot while the games play
            profile("BENCH_PYSPY_FAKE", os.getpid())  # and this process, the fake
            await bench.section(True)
            machine = Sampler() if MACHINE else None  # the machine's own slow windows, alongside
            if machine is not None:
                machine.start()
            cpu_before = bench.cpu_seconds()
            queued_before = bench.run_queue_seconds()
            began = time.perf_counter()
            began_at = time.monotonic()
            gc.disable()
            sampler = asyncio.create_task(bench.sample_cpu(began_at)) if TIMELINE else None
            watcher = asyncio.create_task(bench.watch_loop(began_at)) if TIMELINE else None
            wal = Path(folder) / "bench.sqlite3-wal"
            wal_sizes = [0]

            async def sample_wal() -> None:  # the WAL's size, every 50 ms
                while True:
                    with contextlib.suppress(OSError):
                        wal_sizes.append(wal.stat().st_size)
                    await asyncio.sleep(0.05)

            wal_sampler = asyncio.create_task(sample_wal())
            try:
                rounds = await asyncio.gather(
                    *(bench.play_day(i, random.Random(rng.random()), pace) for i in range(games))
                )
            finally:
                gc.enable()
                for task in (sampler, watcher, wal_sampler):
                    if task is not None:
                        task.cancel()
            elapsed = time.perf_counter() - began
            cpu_after = bench.cpu_seconds()
            queued = bench.run_queue_seconds() - queued_before
            await bench.section(False)
            slow = machine.stop() if machine is not None else None
            latencies = [ms for game in rounds for ms in game]
            print(
                f"player commands in {games} concurrent games, one every {pace} s per game "
                f"({len(latencies) / elapsed:.0f}/s): {figures(latencies)}"
            )
            print(f"floor (/mafia status with no game, same run): {figures(floor)}")
            commands = len(bench.timeline)
            day_cpu = cpu_after[0] - cpu_before[0] - idle * elapsed
            per_game, per_floor = 1000 * day_cpu / commands, 1000 * floor_cpu / len(floor)
            print(
                f"bot CPU per command, less its idle {100 * idle:.1f} % of a core: game "
                f"{per_game:.2f} ms ({commands} commands, their outbox work included), floor "
                f"{per_floor:.2f} ms; ratio {per_game / per_floor:.2f}. p99 / floor p99: "
                f"{percentile(latencies, 0.99) / percentile(floor, 0.99):.1f}"
            )
            print(
                f"the tail: {in_flight(bench.timeline)}; the bot's loop thread waited "
                f"{queued:.2f} s of the day's {elapsed:.1f} s for a CPU, runnable (schedstat)"
            )
            if PROBE:
                print_probe(PROBE, len(floor), commands, bench.timeline)
            if not DATABASE:
                print(
                    f"SQLite synchronous={SYNCHRONOUS}: the WAL's largest size during the day "
                    f"{max(wal_sizes) / 2**20:.1f} MiB"
                )
            if slow is not None:
                print(
                    f"the machine meanwhile (benchmarks/machine_noise.py): {describe(slow, elapsed)}"
                )
            if slow:
                away = away_from(slow, bench.timeline)
                print(
                    f"  player commands away from those windows (not in one, nor within "
                    f"{BACKLOG * 1000:.0f} ms after one): {figures(away) if away else 'none'}"
                )
            print(
                f"CPU while they played: bot {100 * (cpu_after[0] - cpu_before[0]) / elapsed:.0f} %, "
                f"fake {100 * (cpu_after[1] - cpu_before[1]) / elapsed:.0f} % of one core"
                f"{'' if strict else ' (without its OpenAPI schema check)'}"
            )
            print(f"bot RSS with {games} games running: {bench.rss_mib():.0f} MiB")
            calls = collections.Counter(
                f"{record.method} {record.route}" for record in bench.fake.recorder.records
            )
            print(
                f"REST calls while they played: {sum(calls.values())} ("
                + ", ".join(f"{route} {count}" for route, count in calls.most_common(6))
                + ")"
            )
            if TIMELINE:
                with open(f"{TIMELINE}.{games}.tsv", "w") as out:
                    for kind, sent, ms in sorted(bench.timeline, key=lambda row: row[1]):
                        out.write(f"{sent - began_at:.4f}\t{kind}\t{ms:.2f}\n")
                with open(f"{TIMELINE}.{games}.cpu.tsv", "w") as out:
                    for at, bot, fake in bench.cpu_trace:
                        out.write(f"{at:.2f}\t{bot:.0f}\t{fake:.0f}\n")
                with open(f"{TIMELINE}.{games}.fake-stalls.tsv", "w") as out:
                    for at, late in bench.fake_stalls:
                        out.write(f"{at:.3f}\t{late:.1f}\n")
        finally:
            await bench.stop()


async def memory_run(games: int) -> None:
    bench = Bench(games, 30)
    with tempfile.TemporaryDirectory() as folder:
        try:
            await bench.start_bot(Path(folder), extra=SETUP_REST)
            idle = bench.rss_mib()
            began = time.perf_counter()
            for index in range(games):
                await bench.start_game(index, "Верона, Падуя, Мантуя")
            print(f"started {games} games of 30 players in {time.perf_counter() - began:.1f} s")
            await asyncio.sleep(2.0)
            print(
                f"bot RSS: {idle:.0f} MiB idle, {bench.rss_mib():.0f} MiB with {games} games "
                f"of 30 players running"
            )
        finally:
            await bench.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--games",
        default="50,200,400",
        help="concurrent games, or several counts separated by commas (one bot each)",
    )
    parser.add_argument("--memory-games", type=int, default=200)
    parser.add_argument(
        "--pace", type=float, default=0.5, help="mean seconds between two commands of one game"
    )
    parser.add_argument(
        "--database",
        help="an empty PostgreSQL database's postgresql:// URL "
        "(one run per database: give --games one count, and --memory-games 0)",
    )
    parser.add_argument(
        "--strict-fake",
        action="store_true",
        help="keep the fake's OpenAPI schema check on (it then limits the figures)",
    )
    parser.add_argument(
        "--timeline",
        help="write each command of the day to TIMELINE.<games>.tsv: "
        "seconds since the day began, the command, its latency in ms",
    )
    parser.add_argument(
        "--synchronous",
        default="full",
        help="SQLite's sqlite_synchronous for the bot: full, normal, or both as "
        "normal,full (each count is run with each, in turn: one run, both rows)",
    )
    parser.add_argument(
        "--probe",
        action="store_true",
        help="run the bot through benchmarks/service_probe.py and print what it "
        "counts per command (SQL statements, aiosqlite trips, gc, the loop's stalls)",
    )
    parser.add_argument(
        "--variants",
        default="stock",
        help="A/B in one run: the bot as it is (stock) and changed as "
        "benchmarks/service_probe.py's BENCH_VARIANT names (uvloop, orjson, eager, "
        "uvloop+orjson), each count run with each in turn, e.g. stock,uvloop",
    )
    parser.add_argument(
        "--no-machine",
        action="store_true",
        help="do not sample the machine's slow windows alongside (a third process)",
    )
    args = parser.parse_args()
    global DATABASE, TIMELINE, MACHINE, SYNCHRONOUS, PROBE, VARIANT
    DATABASE, TIMELINE, MACHINE = args.database, args.timeline, not args.no_machine
    if args.probe:
        PROBE = str(Path(tempfile.mkdtemp(prefix="service-probe-")) / "sections.jsonl")
    settings = [value.strip().lower() for value in str(args.synchronous).split(",")]
    if any(value not in ("full", "normal") for value in settings):
        parser.error("--synchronous: full, normal, or both separated by a comma")
    counts = [int(count) for count in str(args.games).split(",") if int(count) > 0]
    if DATABASE and len(counts) > 1:
        parser.error("--database takes one run: give --games a single count")
    variants = [value.strip() for value in str(args.variants).split(",")]
    for games in counts:
        for SYNCHRONOUS in settings:
            for VARIANT in variants:
                VARIANT = VARIANT.replace("+", ",")
                if len(settings) > 1 or len(variants) > 1:
                    print(f"--- {games} games, sqlite_synchronous: {SYNCHRONOUS}, bot: {VARIANT}")
                asyncio.run(latency_run(games, args.pace, strict=args.strict_fake))
    if args.memory_games:
        asyncio.run(memory_run(args.memory_games))


if __name__ == "__main__":
    main()
