"""The guard: the main process of every container repogym starts (sandboxes and builds).

Disk: without xfs project quotas the engine cannot cap a container's writable layer, and
``/repo``, ``$HOME`` and ``/var/tmp`` live on it (on the engine's disk). So the guard
(:data:`GUARD_SOURCE`, root, the image's own ``python3`` run isolated) polls the free
space of the container's root file system (the file system holding its writable layer),
ten times a second. Free space is the whole disk's, so other writers on it (the engine
building images, other containers) make it drop too; it is only the trigger. Once more
than the disk limit of it has gone since the container started or was last reset
(``SIGUSR1``), the guard counts what the container itself holds: the blocks of every file
of its root file system, against the same count taken when it started. When the
container has grown by more than the limit, the guard exits with :data:`DISK_EXIT`, which
stops the container: every process in it dies at once. Otherwise the drop was someone
else's, and the trigger is set again from there, with what the container did write still
counted; space that others free is not counted as room for the container either (space
freed while the container writes does hide as much of its writes from the trigger: the
disk as a whole does not fill). The count is a walk of the file system, a fraction of a second on an
environment image; while it walks, free space is still watched, and a drop of
:data:`WALK_SLACK` times the limit *during the walk* stops the container without waiting for
the count (a container that makes the walk slow with millions of files does not buy itself
time; what others wrote before the walk began does not count there).

Strict mode (builds): the guard also watches the container's cgroup counters -- fork
refused at the pids limit (``pids.events``: ``max``) and processes killed at the memory
limit (``memory.oom_control`` or ``memory.events``: ``oom_kill``) -- and stops the
container at the first one, with :data:`PIDS_EXIT` or :data:`MEMORY_EXIT`. A sandbox
survives such events (its command fails, a reset cleans up); a build does not: it would
only go on to fail later, or worse, succeed with a half-installed environment. Counters
the kernel does not expose are not watched (an OOM kill then shows as the step's own
failure).

:func:`stop_reason` reads which limit stopped a container from its ``State``.
"""

from __future__ import annotations

from typing import Any

DISK_EXIT = 75  # the container wrote more than its disk limit
PIDS_EXIT = 76  # strict: a fork was refused at the pids limit
MEMORY_EXIT = 77  # strict: a process was killed at the memory limit
GUARD_PID = "/run/repogym-guard.pid"
# while the guard counts what a container holds, a drop in free space of this many times
# the limit since the count began stops the container without waiting for the count
WALK_SLACK = 2

GUARD_SOURCE = f"""import os, signal, stat, sys, time
limit = int(sys.argv[1]) << 20
strict = sys.argv[2:3] == ["strict"]
CGROUP = "/sys/fs/cgroup/"
WATCHED = (("pids", ("pids/pids.events", "pids.events"), "max", {PIDS_EXIT}),
           ("memory", ("memory/memory.oom_control", "memory.events"), "oom_kill", {MEMORY_EXIT}))
def free():
    st = os.statvfs("/")
    return st.f_bavail * st.f_frsize
def count(paths, key):
    for path in paths:
        try:
            with open(CGROUP + path) as fh:
                for line in fh:
                    name, _, value = line.partition(" ")
                    if name == key:
                        return int(value)
        except (OSError, ValueError):
            continue
    return None
def stop(used):
    print("repogym-guard: %d MB written, limit %d MB" % (used >> 20, limit >> 20), flush=True)
    sys.exit({DISK_EXIT})
def held(watch):
    # the blocks of every file on the root file system (hard links once; a directory on
    # another device is another mount), watching free space as it goes
    dev, before = os.lstat("/").st_dev, free()
    total, seen, todo, n = 0, set(), ["/"], 0
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if st.st_dev != dev:  # another mount (tmpfs, /proc): not this disk
                    continue
                todo.append(entry.path)
            elif st.st_nlink > 1:
                if st.st_ino in seen:
                    continue
                seen.add(st.st_ino)
            total += st.st_blocks * 512
            n += 1
            if watch and n % 500 == 0 and before - free() > {WALK_SLACK} * limit:
                stop(start[0] - free())
    return total
start, grown = [free()], [0]
def rebase(*_):
    start[0], grown[0] = free(), 0
signal.signal(signal.SIGUSR1, rebase)
with open("{GUARD_PID}", "w") as fh:
    fh.write(str(os.getpid()))
base = held(False)
watched = [(what, paths, key, code, count(paths, key)) for what, paths, key, code in WATCHED]
watched = [w for w in watched if strict and w[4] is not None]
while True:
    time.sleep(0.1)
    now = free()
    start[0] = max(start[0], now + grown[0])  # space freed by others is not room to write
    if start[0] - now > limit:
        grown[0] = max(held(True) - base, 0)
        if grown[0] > limit:
            stop(grown[0])
        start[0] = free() + grown[0]
    for what, paths, key, code, first in watched:
        now = count(paths, key)
        if now is not None and now > first:
            print("repogym-guard: %s limit reached (%s %d)" % (what, key, now), flush=True)
            sys.exit(code)
"""
# run the guard with the image's python3, else plain sleep (no guard)
GUARD_COMMAND = ('for p in /usr/bin/python3 /usr/local/bin/python3; do '
                 '[ -x "$p" ] && exec "$p" -I -S -c "$0" "$@"; done; exec sleep infinity')


def guard_command(disk_mb: int, *, strict: bool = False) -> list[str]:
    """The container command that runs the guard with a disk limit of ``disk_mb``."""
    return ["sh", "-c", GUARD_COMMAND, GUARD_SOURCE, str(disk_mb), *(["strict"] if strict else [])]


def stop_reason(state: dict[str, Any], *, disk_mb: int, memory_mb: int, pids: int) -> str | None:
    """Which limit stopped a container, from its inspected ``State``; None if none did.

    The text names the limit and its value, e.g. ``"wrote more than its disk limit
    (512 MB)"``.
    """
    if state.get("Running"):
        return None
    code = state.get("ExitCode")
    if code == DISK_EXIT:
        return f"wrote more than its disk limit ({disk_mb} MB)"
    if code == PIDS_EXIT:
        return f"reached its process limit ({pids} processes)"
    if code == MEMORY_EXIT or state.get("OOMKilled"):
        return f"ran out of its memory limit ({memory_mb} MB)"
    return None
