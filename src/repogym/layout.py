"""Where things live in a task's environment: one place for every sandbox provider, the
environment builder, the graders and the exporters.

    /repo                     the repository under test (``REPO_DIR``), owned by ``USER``
    /opt/venv                 the virtualenv the install steps and the tests run in
    /opt/deps                 dependency folders the install left in the work tree
                              (``node_modules``), read-only, linked from where they were;
                              their ``.cache`` links to ``/tmp/repogym-tool-cache``
                              (``TOOL_CACHE``), which a run makes and a reset empties
    /opt/repogym              what a reset restores (``STATE``): the pinned commit's snapshot
    /opt/repogym-task         an exported task's grading kit (``TASK_DIR``): the grader,
                              its report plugin, the task's git dir and spec
    /home/repogym             the test user's home (``HOME``)
    /var/tmp                  scratch space on the container's own file system (``SCRATCH``)
    /tmp, /dev/shm            tmpfs mounts (``TMPFS_MOUNTS``): the engine's archive API
                              cannot see into them

Tests run as ``USER`` (uid ``UID``), never as root.
"""

from __future__ import annotations

USER = "repogym"
UID = 1000
HOME = f"/home/{USER}"
REPO_DIR = "/repo"
VENV = "/opt/venv"
DEPS = "/opt/deps"
TOOL_CACHE = "/tmp/repogym-tool-cache"
STATE = "/opt/repogym"
TASK_DIR = "/opt/repogym-task"
SCRATCH = "/var/tmp"
TMPFS_MOUNTS = ("/tmp", "/dev/shm")

__all__ = ["DEPS", "HOME", "TOOL_CACHE", "REPO_DIR", "SCRATCH", "STATE", "TASK_DIR", "TMPFS_MOUNTS", "UID", "USER",
           "VENV"]
