"""Files copied into sandboxes (not imported by repogym itself)."""
