"""Files copied into sandboxes and exported tasks, standard library only (not imported by
repogym itself, except ``repogym_go_report``: the reader of Go runs that the Go toolchain
and an exported Go task's in-container grader share)."""
