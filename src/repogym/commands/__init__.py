"""Command groups of the ``repogym`` CLI beyond ``run``/``verify``, one module each.

Each module defines a ``typer.Typer`` named ``app`` (a sub-command group) or a plain command
function, and :mod:`repogym.cli` mounts it. Modules import heavy dependencies inside the
commands, so ``repogym --help`` stays fast.
"""
