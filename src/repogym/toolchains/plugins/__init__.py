"""Files copied into sandboxes and exported tasks, standard library only (not imported by
repogym itself, except the modules of runs that a toolchain and an exported task's
in-container grader share: ``repogym_go_report`` and ``repogym_rust_report``, the readers of
Go and Rust runs, and ``repogym_maven``, a Maven run's plan, script and reading)."""
